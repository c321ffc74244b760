package sim

import (
	"math"
	"testing"
	"testing/synctest"
)

// S10's target "goodput ≥ failsafe-go's" is out of reach of a limit that
// keeps the RTT under Gradient's threshold. At 100 calls/s against 80 of
// capacity a freed slot waits about 10 ms for the next arrival, so only a
// queue in front of the 12 workers keeps them all busy, and Gradient cuts
// once the RTT passes 1.5 × the 150 ms service, about 18 in flight by
// Little's law. A limit fixed for the whole run (floodgate's gate with a
// constant limit, as the oracle) serves at most 85.15 calls/s up to 17;
// from 24 to 76 it serves 85.84–86.13, the best at 72 (a queue of 60, an
// RTT of about 0.9 s against the 1 s SLO), and at 80 the calls outgrow
// the SLO (66.70). failsafe-go's 86.06, with its limit of 30–57, is that
// ceiling. docs/benchmarks.md ("Targets not yet met", S10) has the table.
func TestS10FixedLimitCeiling(t *testing.T) {
	sc := scenarioNamed(t, "S10")
	run := func(c Contender) *Result {
		t.Helper()
		var r *Result
		synctest.Test(t, func(t *testing.T) {
			var err error
			if r, err = Run(sc, c); err != nil {
				t.Fatal(err)
			}
		})
		return r
	}
	var fs *Result
	for _, c := range Contenders() {
		if c.Name == "failsafe-go" {
			fs = run(c)
		}
	}
	if fs == nil {
		t.Fatal("no failsafe-go contender")
	}
	const under = 17 // the most in flight whose RTT stays under the threshold (17/80 calls/s = 213 ms < 225 ms)
	bestUnder, best := 0.0, 0.0
	for _, limit := range []int{12, 14, 17, 20, 24, 48, 72, 80} { // docs/benchmarks.md's table
		r := run(Contender{"fixed", func(e Env) (Caller, error) {
			return newFloodgate(e, oracleLimit{func() int { return limit }})
		}})
		t.Logf("fixed limit %2d: %.2f calls/s", limit, r.Goodput)
		best = max(best, r.Goodput)
		if limit <= under {
			bestUnder = max(bestUnder, r.Goodput)
		}
	}
	t.Logf("failsafe-go: %.2f calls/s", fs.Goodput)
	if bestUnder >= fs.Goodput-0.5 {
		t.Errorf("a fixed limit ≤ %d serves %.2f calls/s, within 0.5 of failsafe-go's %.2f: S10's target is within reach under the threshold, and the docs' reason for missing it is wrong", under, bestUnder, fs.Goodput)
	}
	if math.Abs(best-fs.Goodput) > 0.2 {
		t.Errorf("the best fixed limit serves %.2f calls/s, failsafe-go %.2f: more than 0.2 apart, so failsafe-go is not at the ceiling the docs give", best, fs.Goodput)
	}
}

// scenarioNamed returns the scenario named name.
func scenarioNamed(t *testing.T, name string) Scenario {
	t.Helper()
	for _, sc := range Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return Scenario{}
}
