package bench

import (
	"reflect"
	"testing"
	"testing/synctest"

	"github.com/floodgate-go/floodgate/bench/sim"
)

// notYetMet lists the targets floodgate's default does not meet today, by
// scenario and name, with the measured numbers in docs/benchmarks.md
// ("Targets not yet met"). They are logged, not asserted; every other
// target is asserted.
var notYetMet = map[[2]string]bool{
	{"S1", "goodput ≥ failsafe-go's"}:                          true,
	{"S3", "goodput ≥ failsafe-go's"}:                          true,
	{"S7", "goodput ≥ failsafe-go's"}:                          true,
	{"S4", "goodput ≥ failsafe-go's"}:                          true,
	{"S6", "limit within 20% of the new capacity within 10 s"}: true,
	{"S8", "goodput ≥ failsafe-go's"}:                          true,
}

// scenario returns the scenario named name.
func scenario(t *testing.T, name string) sim.Scenario {
	t.Helper()
	for _, sc := range sim.Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return sim.Scenario{}
}

// runScenario runs every contender through the scenario named name, each in
// its own synctest bubble and in parallel, logs the table (go test -v) and
// checks the scenario's targets.
func runScenario(t *testing.T, name string) []*sim.Result {
	t.Parallel()
	sc := scenario(t, name)
	cs := sim.Contenders()
	rs := make([]*sim.Result, len(cs))
	t.Run("contenders", func(t *testing.T) {
		for i, c := range cs {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					r, err := sim.Run(sc, c)
					if err != nil {
						t.Fatal(err)
					}
					rs[i] = r
				})
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%s %s\n%s", sc.Name, sc.Title, sim.Table(sc, rs))
	for _, tg := range sim.Targets() {
		if tg.Scenario != name {
			continue
		}
		measured, ok := tg.Check(rs)
		switch {
		case notYetMet[[2]string{tg.Scenario, tg.Name}] && ok:
			t.Logf("target now met, assert it (remove it from notYetMet): %s: %s", tg.Name, measured)
		case notYetMet[[2]string{tg.Scenario, tg.Name}]:
			t.Logf("target not yet met: %s: %s", tg.Name, measured)
		case !ok:
			t.Errorf("target missed: %s: %s", tg.Name, measured)
		default:
			t.Logf("target met: %s: %s", tg.Name, measured)
		}
	}
	// Not one of the targets, but what every change to the limiter
	// must keep: no call lost while the downstream is healthy and under
	// capacity (a limit that hugs the demand sheds its bursts). A narrower
	// Hybrid margin once lost 5 in S7 (docs/design.md, "Noise-scaled
	// tolerance").
	for _, r := range rs {
		if r.Contender == "floodgate" && r.HealthyLost > 0 {
			t.Errorf("floodgate lost %d calls while the downstream was healthy and under capacity, want 0", r.HealthyLost)
		}
	}
	return rs
}

// S1: the README's slowdown. Protects: load shed within seconds of a 20×
// slowdown, and full throughput soon after it heals.
func TestScenarioS1Slowdown(t *testing.T) { runScenario(t, "S1") }

// S2: offered load climbs to twice the capacity. Protects: the limit finds
// the capacity (goodput near the oracle's) without a queue that doubles
// latency.
func TestScenarioS2Overload(t *testing.T) { runScenario(t, "S2") }

// S3: every call fails fast for 30 s. Protects: retries do not multiply
// the load on a dead downstream (the breaker and the budget).
func TestScenarioS3HardOutage(t *testing.T) { runScenario(t, "S3") }

// S4: 30% of calls fail for 60 s. Protects: goodput through a partial
// failure, retries within the budget.
func TestScenarioS4BrownOut(t *testing.T) { runScenario(t, "S4") }

// S5: the downstream throttles with Retry-After. Protects: the server's
// hint is honoured.
func TestScenarioS5Throttling(t *testing.T) { runScenario(t, "S5") }

// S6: the downstream loses half its workers. Protects: the limit follows
// the capacity down.
func TestScenarioS6CapacityLoss(t *testing.T) { runScenario(t, "S6") }

// S7: three layers each retry. Protects: an outer Gate never retries an
// inner Gate's failure, so retries do not multiply across layers.
func TestScenarioS7NestedLayers(t *testing.T) { runScenario(t, "S7") }

// S8: the downstream becomes 2× slower for good, with capacity to spare.
// Protects: a slowdown that is not congestion is served, not shed (the
// Hybrid lift): before it, floodgate's limit fell to 1–13 and it served
// 67.7 of 200 calls/s.
func TestScenarioS8LastingSlowdown(t *testing.T) { runScenario(t, "S8") }

// S9: a healthy downstream answers 2% of calls with a 503, whatever the
// load. Protects: a background share of drops is not congestion (Hybrid's
// DropTolerance): before it, floodgate lost 3,251 of the healthy calls and
// served 361.7 of 400 calls/s (AIMD, which cuts on every drop as Netflix's
// does, serves 231.6).
func TestScenarioS9BackgroundDrops(t *testing.T) { runScenario(t, "S9") }

// TestScenarioDeterministic runs S3 twice for each kind of client
// (floodgate, failsafe-go, the pool): the same seed must give the same
// numbers, sample for sample, whatever the goroutine schedule.
func TestScenarioDeterministic(t *testing.T) {
	t.Parallel()
	sc := scenario(t, "S3")
	for _, c := range sim.Contenders() {
		if c.Name != "floodgate" && c.Name != "failsafe-go" && c.Name != "fixed pool 50" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			var a, b *sim.Result
			synctest.Test(t, func(t *testing.T) { a, _ = sim.Run(sc, c) })
			synctest.Test(t, func(t *testing.T) { b, _ = sim.Run(sc, c) })
			if !reflect.DeepEqual(a, b) {
				t.Errorf("two runs of %s differ: goodput %.2f vs %.2f calls/s", sc.Name, a.Goodput, b.Goodput)
			}
		})
	}
}
