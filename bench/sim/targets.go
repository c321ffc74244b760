package sim

import (
	"fmt"
	"time"
)

// Target is one of the targets of issues 3 and 12 for floodgate's default
// contender,
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

// Targets returns every target, grouped by scenario in order: the
// scenario's own, then the one every scenario but a saturated one has
// (healthyTarget).
func Targets() []Target {
	var out []Target
	for _, sc := range Scenarios() {
		for _, tg := range scenarioTargets() {
			if tg.Scenario == sc.Name {
				out = append(out, tg)
			}
		}
		if !sc.Saturated {
			out = append(out, healthyTarget(sc))
		}
	}
	return out
}

// healthyTarget is issue 12's target for every scenario: no call shed or
// lost while the downstream is healthy and under capacity (the seconds
// healthySecond names: a limit that hugs the demand sheds its bursts).
// Where the downstream fails some of those calls whatever the client does
// (Scenario.FailsAnyway), only the sheds count.
func healthyTarget(sc Scenario) Target {
	name := "no call lost while the downstream is healthy and under capacity"
	if sc.FailsAnyway {
		name = "no call shed while the downstream is healthy and under capacity"
	}
	return Target{sc.Name, name, func(rs []*Result) (string, bool) {
		r := byName(rs, "floodgate")
		measured := fmt.Sprintf("%d calls lost, %d of them shed", r.HealthyLost, r.HealthyShed)
		if sc.FailsAnyway {
			return measured, r.HealthyShed == 0
		}
		return measured, r.HealthyLost == 0
	}}
}

// goodIn counts r's successes among the calls that arrived from from to to
// (whole seconds).
func goodIn(r *Result, from, to time.Duration) int {
	n := 0
	for _, b := range r.Bins {
		if b.T >= from && b.T < to {
			n += b.Good
		}
	}
	return n
}

// scenarioTargets returns the targets particular to a scenario.
func scenarioTargets() []Target {
	fg := func(rs []*Result) *Result { return byName(rs, "floodgate") }
	beatsFailsafe := func(sc string) Target {
		return Target{sc, "goodput ≥ failsafe-go's", func(rs []*Result) (string, bool) {
			a, b := fg(rs).Goodput, byName(rs, "failsafe-go").Goodput
			return fmt.Sprintf("%.1f vs %.1f calls/s", a, b), a >= b
		}}
	}
	// ofOracleIn: the successes of the calls that arrived from from to to
	// (whole seconds) at least frac of the oracle's.
	ofOracleIn := func(sc string, from, to time.Duration, frac float64) Target {
		name := fmt.Sprintf("goodput from %.0f s to %.0f s ≥ %.0f%% of the oracle's", from.Seconds(), to.Seconds(), 100*frac)
		return Target{sc, name, func(rs []*Result) (string, bool) {
			a, b := goodIn(fg(rs), from, to), goodIn(byName(rs, "oracle"), from, to)
			return fmt.Sprintf("%.1f%% (%d vs %d good calls)", 100*float64(a)/float64(max(b, 1)), a, b), float64(a) >= frac*float64(b)
		}}
	}
	// ofOracle: goodput at least frac of the oracle's.
	ofOracle := func(sc string, frac float64) Target {
		return Target{sc, fmt.Sprintf("goodput ≥ %.0f%% of the oracle's", 100*frac), func(rs []*Result) (string, bool) {
			a, o := fg(rs).Goodput, byName(rs, "oracle").Goodput
			return fmt.Sprintf("%.1f%% (%.1f vs %.1f calls/s)", 100*a/o, a, o), a >= frac*o
		}}
	}
	// p99Within: the p99 latency of successes at most factor times the
	// oracle's.
	p99Within := func(sc string, factor float64) Target {
		return Target{sc, fmt.Sprintf("p99 latency ≤ %g× the oracle's", factor), func(rs []*Result) (string, bool) {
			a, o := fg(rs).P99, byName(rs, "oracle").P99
			return fmt.Sprintf("%.2f× (%s vs %s)", float64(a)/float64(o), ms(a), ms(o)), float64(a) <= factor*float64(o)
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
		ofOracle("S2", 0.95),
		p99Within("S2", 1.5),
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
		ofOracle("S6", 0.95),
		p99Within("S6", 1.5),
		beatsFailsafe("S6"),
		{"S7", "amplification ≤ 1.1", func(rs []*Result) (string, bool) {
			a := fg(rs).Amplification
			return fmt.Sprintf("%.2f", a), a <= 1.1
		}},
		beatsFailsafe("S7"),
		beatsFailsafe("S8"),
		beatsFailsafe("S9"),
		ofOracle("S10", 0.9), beatsFailsafe("S10"),
		ofOracle("S11", 0.9), beatsFailsafe("S11"),
		ofOracle("S12", 0.9), beatsFailsafe("S12"),
		ofOracle("S13", 0.9), beatsFailsafe("S13"),
		ofOracle("S14", 0.9), beatsFailsafe("S14"),
		ofOracle("S15", 0.9), beatsFailsafe("S15"),
		ofOracleIn("S17", 25*time.Second, 35*time.Second, 0.9), beatsFailsafe("S17"),
		ofOracleIn("S18", 30*time.Second, 45*time.Second, 0.9), beatsFailsafe("S18"),
		ofOracleIn("S19", 30*time.Second, 60*time.Second, 0.9), beatsFailsafe("S19"),
		{"S18", "goodput from 30 s to 45 s ≥ the fixed pool's (bench/real: go-redis deadline's)", func(rs []*Result) (string, bool) {
			a, b := goodIn(fg(rs), 30*time.Second, 45*time.Second), goodIn(byName(rs, "fixed pool 50"), 30*time.Second, 45*time.Second)
			return fmt.Sprintf("%d vs %d good calls", a, b), a >= b
		}},
		{"S16", "limit ≤ 3× the workers from 10 s to the end", func(rs []*Result) (string, bool) {
			high, workers, ok := 0, 0, true
			for _, s := range fg(rs).Samples {
				if s.T >= 10*time.Second {
					high, workers = max(high, s.Limit), s.Capacity
					ok = ok && s.Limit <= 3*s.Capacity
				}
			}
			return fmt.Sprintf("max %d (3× %d workers: %d)", high, workers, 3*workers), ok && high > 0
		}},
	}
}
