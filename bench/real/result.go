package real

import (
	"fmt"
	"strings"
	"time"
)

// Form is how long a trial's phases last.
type Form struct {
	// Name is "short" or "full".
	Name string
	// Healthy is the first, healthy phase of both trials.
	Healthy time.Duration
	// Stalls is the Redis stalls phase; Busy the Redis busy-client phase.
	Stalls, Busy time.Duration
	// Fault is each HTTP toxic's phase.
	Fault time.Duration
	// Heal is each healthy phase after a fault.
	Heal time.Duration
}

// Short is the form scripts/e2e-real.sh runs by default: 23 s of Redis
// and 20 s of HTTP.
var Short = Form{Name: "short", Healthy: 3 * time.Second, Stalls: 8 * time.Second, Busy: 8 * time.Second,
	Fault: 3 * time.Second, Heal: 3 * time.Second}

// Full is the form: 15 s of stalls, 15 s of busy client, 10 s per
// toxic; 40 s of Redis and 50 s of HTTP.
var Full = Form{Name: "full", Healthy: 5 * time.Second, Stalls: 15 * time.Second, Busy: 15 * time.Second,
	Fault: 10 * time.Second, Heal: 5 * time.Second}

// Result is a trial's numbers: Stats[c][k] is contender Contenders[c] in
// phase Phases[k].
type Result struct {
	// Trial is "Redis" or "HTTP".
	Trial      string
	Phases     []Phase
	Contenders []string
	Stats      [][]PhaseStats
}

// Stat returns contender's numbers in the phase named phase, and false
// when the result has no such contender or phase.
func (r *Result) Stat(contender, phase string) (PhaseStats, bool) {
	for c, name := range r.Contenders {
		if name != contender {
			continue
		}
		for k, p := range r.Phases {
			if p.Name == phase {
				return r.Stats[c][k], true
			}
		}
	}
	return PhaseStats{}, false
}

// HealthyShed returns the calls contender refused while the downstream
// was healthy (PhaseStats.HealthyShed, summed over the phases).
func (r *Result) HealthyShed(contender string) int {
	n := 0
	for c, name := range r.Contenders {
		if name == contender {
			for _, s := range r.Stats[c] {
				n += s.HealthyShed
			}
		}
	}
	return n
}

// Table returns the result as a Markdown table, one row per phase and
// contender, then the calls each contender shed while the downstream was
// healthy.
func (r *Result) Table() string {
	var b strings.Builder
	b.WriteString("| phase | contender | offered | ok ≤ 2 s (ended after the phase) | ok > 2 s | refused | refusal p99 | failed | p99 | p99 ok | peak in flight | limit | full throughput after the heal |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for k, p := range r.Phases {
		heal := k > 0 && !r.Phases[k-1].Healthy
		for c, name := range r.Contenders {
			s := r.Stats[c][k]
			limit := "–"
			if s.LimitHi > 0 {
				limit = fmt.Sprintf("%d–%d", s.LimitLo, s.LimitHi)
			}
			rec := "–"
			if heal {
				rec = span(s.Recovery)
			}
			refusal := "–"
			if s.Refused > 0 {
				refusal = dur(s.P99Refused)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %d (%d) | %d | %d | %s | %d | %s | %s | %d | %s | %s |\n",
				p.Name, name, s.Offered, s.OK, s.OKAfter, s.Late, s.Refused, refusal, s.Failed, dur(s.P99), dur(s.P99OK),
				s.PeakInFlight, limit, rec)
		}
	}
	b.WriteString("\n| contender | shed while healthy |\n|---|--:|\n")
	for _, name := range r.Contenders {
		fmt.Fprintf(&b, "| %s | %d |\n", name, r.HealthyShed(name))
	}
	return b.String()
}

// dur formats a duration for a table: µs under 1 ms, ms under 10 s.
func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < 10*time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// span formats a recovery time.
func span(d time.Duration) string {
	if d == Never {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
