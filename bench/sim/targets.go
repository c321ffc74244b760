package sim

import (
	"fmt"
	"time"
)

// Target is one of issue 3's targets for floodgate's default contender,
// checked on the results of one scenario (all contenders, in the order of
// Contenders).
type Target struct {
	// Scenario names the scenario it is checked on.
	Scenario string
	// Name says what must hold.
	Name string
	// Check returns the measured value, as text, and whether the target is
	// met.
	Check func(rs []*Result) (measured string, ok bool)
}

// byName returns the result of the contender named name.
func byName(rs []*Result, name string) *Result {
	for _, r := range rs {
		if r.Contender == name {
			return r
		}
	}
	panic("sim: no result for " + name)
}

// Targets returns every target, grouped by scenario in order.
func Targets() []Target {
	fg := func(rs []*Result) *Result { return byName(rs, "floodgate") }
	beatsFailsafe := func(sc string) Target {
		return Target{sc, "goodput ≥ failsafe-go's", func(rs []*Result) (string, bool) {
			a, b := fg(rs).Goodput, byName(rs, "failsafe-go").Goodput
			return fmt.Sprintf("%.1f vs %.1f calls/s", a, b), a >= b
		}}
	}
	// noneLost: for a scenario whose trouble leaves capacity to spare
	// (Scenario.Spare).
	noneLost := func(sc string) Target {
		return Target{sc, "no call lost from 5 s after the onset (capacity to spare)", func(rs []*Result) (string, bool) {
			n := fg(rs).HealthyLost
			return fmt.Sprintf("%d calls lost", n), n == 0
		}}
	}
	within := func(d, bound time.Duration) bool { return d != Never && d <= bound }
	return []Target{
		{"S1", "in-flight under the pool size (50) within 3 s of onset", func(rs []*Result) (string, bool) {
			d := fg(rs).UnderCapacity
			return span(d), within(d, 3*time.Second)
		}},
		{"S1", "back to full goodput (95%) within 10 s of recovery", func(rs []*Result) (string, bool) {
			d := fg(rs).Recovered
			return span(d), within(d, 10*time.Second)
		}},
		beatsFailsafe("S1"),
		{"S2", "goodput ≥ 95% of the oracle's", func(rs []*Result) (string, bool) {
			a, o := fg(rs).Goodput, byName(rs, "oracle").Goodput
			return fmt.Sprintf("%.1f%% (%.1f vs %.1f calls/s)", 100*a/o, a, o), a >= 0.95*o
		}},
		{"S2", "p99 latency ≤ 2× the oracle's", func(rs []*Result) (string, bool) {
			a, o := fg(rs).P99, byName(rs, "oracle").P99
			return fmt.Sprintf("%.2f× (%s vs %s)", float64(a)/float64(o), ms(a), ms(o)), a <= 2*o
		}},
		beatsFailsafe("S2"),
		{"S3", "amplification ≤ 1.1", func(rs []*Result) (string, bool) {
			a := fg(rs).Amplification
			return fmt.Sprintf("%.2f", a), a <= 1.1
		}},
		beatsFailsafe("S3"),
		beatsFailsafe("S4"),
		{"S5", "no attempt before the Retry-After hint expires", func(rs []*Result) (string, bool) {
			n := fg(rs).EarlyAttempts
			return fmt.Sprintf("%d early attempts", n), n == 0
		}},
		beatsFailsafe("S5"),
		{"S6", "limit within 20% of the new capacity within 10 s", func(rs []*Result) (string, bool) {
			r := fg(rs)
			return fmt.Sprintf("settled: %s; limit %d–%d from 10 s after the loss, %.0f%% of the time within 20%%",
					span(r.LimitSettled), r.LimitLow, r.LimitHigh, 100*r.LimitInBand),
				within(r.LimitSettled, 10*time.Second)
		}},
		beatsFailsafe("S6"),
		{"S7", "amplification ≤ 1.1", func(rs []*Result) (string, bool) {
			a := fg(rs).Amplification
			return fmt.Sprintf("%.2f", a), a <= 1.1
		}},
		beatsFailsafe("S7"),
		noneLost("S8"),
		beatsFailsafe("S8"),
		noneLost("S9"),
		beatsFailsafe("S9"),
	}
}
