package real

import (
	"fmt"
	"time"
)

// SuccessMargin is how far below the plain client's successes floodgate's
// may fall and still meet a "successes ≥ the plain client's" target, as a
// share of the plain client's. Side by side, two lanes of the same client
// differed by 0.3% in the stalls (673 and 671, 692 and 689 successes of
// the deadline-honouring go-redis in two short runs; floodgate 22 and 24,
// 15 and 13: testdata/real-tables.md), while run after run it ranged from
// 614 to 934; 5% is well above the first and far below the gaps the
// targets are about (issue 12: 27 successes against 544).
const SuccessMargin = 0.05

// Target is one of issue 12's goals for floodgate's default gate, checked
// on a trial's Result.
type Target struct {
	// Trial is the Result.Trial it applies to.
	Trial string
	// Name says what must hold.
	Name string
	// Check returns the measured numbers and whether the target is met.
	Check func(*Result) (measured string, ok bool)
}

// Targets returns issue 12's targets.
func Targets() []Target {
	return []Target{
		atLeast("Redis", "stalls", "go-redis deadline"),
		atLeast("Redis", "busy client", "go-redis deadline"),
		noHealthyShed("Redis"),
		atLeast("HTTP", "latency 300 ms", "net/http"),
		noHealthyShed("HTTP"),
		{"HTTP", "latency 2 s: floodgate's peak in flight ≤ the pool (50)", func(r *Result) (string, bool) {
			s, _ := r.Stat("floodgate", "latency 2 s")
			return fmt.Sprintf("peak %d", s.PeakInFlight), s.PeakInFlight <= PoolSize
		}},
		{"HTTP", "latency 2 s: floodgate's refusals p99 < 1 ms", func(r *Result) (string, bool) {
			s, _ := r.Stat("floodgate", "latency 2 s")
			return fmt.Sprintf("%d refused, p99 %s", s.Refused, dur(s.P99Refused)), s.Refused > 0 && s.P99Refused < time.Millisecond
		}},
		{"HTTP", "latency 2 s: floodgate at full throughput within 1 s of the heal", func(r *Result) (string, bool) {
			s, _ := r.Stat("floodgate", "healthy after 2 s")
			return "after " + span(s.Recovery), s.Recovery != Never && s.Recovery <= time.Second
		}},
	}
}

// atLeast is the target "in phase, floodgate's successes within the
// deadline ≥ base's", within SuccessMargin. The measured text also gives
// how many of each ended after the phase (PhaseStats.OKAfter).
func atLeast(trial, phase, base string) Target {
	return Target{trial, phase + ": floodgate's successes within the deadline ≥ " + base + "'s", func(r *Result) (string, bool) {
		f, _ := r.Stat("floodgate", phase)
		b, _ := r.Stat(base, phase)
		return fmt.Sprintf("floodgate %d (%d ended after the phase), %s %d (%d) of %d offered", f.OK, f.OKAfter, base, b.OK, b.OKAfter, b.Offered),
			float64(f.OK) >= (1-SuccessMargin)*float64(b.OK)
	}}
}

// noHealthyShed is the target "floodgate sheds no call while the
// downstream is healthy" (PhaseStats.HealthyShed).
func noHealthyShed(trial string) Target {
	return Target{trial, "no call shed by floodgate while the downstream is healthy", func(r *Result) (string, bool) {
		n := r.HealthyShed("floodgate")
		return fmt.Sprintf("%d shed", n), n == 0
	}}
}
