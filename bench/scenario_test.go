package bench

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/bench/sim"
)

// fullS16 runs S16 for its 10 simulated minutes; by default the test runs
// its first 2 minutes (see TestScenarioS16RunawayLimits).
var fullS16 = flag.Bool("sim.full", false, "run S16 (runaway limits) for its full 10 simulated minutes instead of 2")

// notYetMet lists the targets floodgate's default does not meet today, by
// scenario and name, with the measured numbers in docs/benchmarks.md
// ("Targets not yet met"). They are logged, not asserted; every other
// target is asserted.
var notYetMet = map[[2]string]bool{
	{"S4", "goodput ≥ failsafe-go's"}:                          true,
	{"S6", "limit within 20% of the new capacity within 10 s"}: true,
	{"S8", "goodput ≥ failsafe-go's"}:                          true,
	// Issue 12's scenarios that Gradient, the default, does not meet yet.
	// S10's target needs a standing queue over Gradient's threshold: a
	// fixed limit under it serves at most 85.15 calls/s, failsafe-go 86.06
	// (sim.TestS10FixedLimitCeiling).
	{"S10", "goodput ≥ failsafe-go's"}:                         true,
	{"S13", "goodput ≥ failsafe-go's"}:                         true,
	{"S17", "goodput from 25 s to 35 s ≥ 90% of the oracle's"}: true,
	{"S18", "goodput from 30 s to 45 s ≥ 90% of the oracle's"}: true,
	// The suite's S18 meets "≥ the fixed pool's" (770 against 713 good
	// calls); over 20 other alignments of its stalls floodgate falls short
	// on average, and on 16 of them, as in most real runs
	// (TestScenarioS18Alignments).
	{"S18", alignmentsTarget}: true,
}

// scenario returns the scenario named name (S16 shortened to 2 minutes
// unless -sim.full).
func scenario(t *testing.T, name string) sim.Scenario {
	t.Helper()
	for _, sc := range sim.Scenarios() {
		if sc.Name == name {
			if name == "S16" && !*fullS16 {
				sc.Duration = 2 * time.Minute
				sc.Title += " (here its first 2 min; -sim.full for all 10)"
			}
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return sim.Scenario{}
}

// runScenario runs every contender through the scenario named name, each in
// its own synctest bubble and in parallel, logs the table (go test -v) and
// checks the scenario's targets. Under the race detector it runs
// floodgate's contenders alone (the code the race detector is for) and
// checks no target: the suite took 186 s there against 20 s without it,
// and scripts/test.sh runs it again without -race for the targets.
func runScenario(t *testing.T, name string) []*sim.Result {
	t.Parallel()
	sc := scenario(t, name)
	cs := sim.Contenders()
	if raceEnabled {
		cs = slices.DeleteFunc(cs, func(c sim.Contender) bool { return !strings.HasPrefix(c.Name, "floodgate") })
	}
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
	if raceEnabled {
		return rs // the targets compare with the contenders left out
	}
	t.Logf("%s %s\n%s", sc.Name, sc.Title, sim.Table(sc, rs))
	for _, tg := range sim.Targets() {
		if tg.Scenario != name {
			continue
		}
		measured, ok := tg.Check(rs)
		report(t, tg.Scenario, tg.Name, measured, ok)
	}
	return rs
}

// report logs scenario's target name as met or not (with the measured
// numbers), and fails t if it is missed and not in notYetMet.
func report(t *testing.T, scenario, name, measured string, ok bool) {
	t.Helper()
	switch {
	case notYetMet[[2]string{scenario, name}] && ok:
		t.Logf("target now met, assert it (remove it from notYetMet): %s: %s", name, measured)
	case notYetMet[[2]string{scenario, name}]:
		t.Logf("target not yet met: %s: %s", name, measured)
	case !ok:
		t.Errorf("target missed: %s: %s", name, measured)
	default:
		t.Logf("target met: %s: %s", name, measured)
	}
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
// experiment of the default, Gradient; before any rule for it, floodgate's
// limit fell to 1–13 and it served 67.7 of 200 calls/s).
func TestScenarioS8LastingSlowdown(t *testing.T) { runScenario(t, "S8") }

// S9: a healthy downstream answers 2% of calls with a 503, whatever the
// load. Protects: overload answers that our concurrency does not cause do
// not cut (Gradient ignores them); when every drop cut, floodgate lost
// 3,251 of the healthy calls and served 361.7 of 400 calls/s.
func TestScenarioS9BackgroundDrops(t *testing.T) { runScenario(t, "S9") }

// S10: tripwire's staged slowdown, 50 ms → 150 ms → 50 ms on 12 workers,
// offered 100 calls/s against 80 of capacity in the slow stage. Protects:
// the limit settles near the workers; cutting below them serves less.
func TestScenarioS10StagedSlowdown(t *testing.T) { runScenario(t, "S10") }

// S11: S1's 20× slowdown, lasting, with a 3 s deadline that a 2 s answer
// meets. Protects: goodput at the capacity (24.8 calls/s) through a
// slowdown the deadline tolerates.
func TestScenarioS11PatientDeadline(t *testing.T) { runScenario(t, "S11") }

// S12: an unlimited downstream stalls at 400 ms for 15 s, every call still
// succeeding. Protects: a latency rise that no limit can relieve is not
// answered by shedding (issue 12).
func TestScenarioS12Stall(t *testing.T) { runScenario(t, "S12") }

// S13: an unlimited downstream answers 20% of calls 503 with Retry-After
// 1 s. Protects: drops whose share cutting cannot change do not pull the
// limit below the demand.
func TestScenarioS13Random503s(t *testing.T) { runScenario(t, "S13") }

// S14: 1 ms RTTs, and the client stops the world for 30 ms every 2 s.
// Protects: the client's own pauses (RTTs 30× the baseline, bursts of
// arrivals) are not congestion.
func TestScenarioS14ClientPauses(t *testing.T) { runScenario(t, "S14") }

// S15: ten gates, each with its own limiter, share a downstream that
// becomes 3× slower, overloaded. Protects: independent gates back off
// together to the capacity.
func TestScenarioS15Fleet(t *testing.T) { runScenario(t, "S15") }

// S16: tripwire's runaway limits: the offered load is the capacity, for
// 10 minutes. Protects: the limit does not climb without bound while the
// RTT stays flat (≤ 3× the workers). By default the test runs the first
// 2 simulated minutes (the limit target from 10 s on); -sim.full runs the
// whole 10.
func TestScenarioS16RunawayLimits(t *testing.T) { runScenario(t, "S16") }

// S17: bench/real's HTTP timeline on a pool: timeouts, healthy, then a
// slowdown that succeeds. Measures the limit's regrowth after a timeout
// storm into a slowdown that needs more calls in flight (the real trial's
// gap: floodgate 577–651 successes against net/http's 1,251 in its 300 ms
// phase).
func TestScenarioS17TimeoutsThenSlowdown(t *testing.T) { runScenario(t, "S17") }

// S18: bench/real's Redis stalls on a pool: the answers come back in
// bursts at the ends of 0.5 s sleeps, every one within the deadline.
// Measures the real trial's gap in simulation: a bursty slowdown that no
// limit relieves should be served at the pool's pace (the fixed pool's
// 713 good calls in the stall met since stop 33: 770; the oracle's 1,050
// not yet). This alignment of the stalls is a lucky one: over 20 others
// floodgate falls short of the fixed pool on average, and on 16 of them
// (TestScenarioS18Alignments).
func TestScenarioS18Stalls(t *testing.T) { runScenario(t, "S18") }

// S19: a review's shape (stop 35): our calls queue at 40 workers whose
// service slows tenfold, under an attempt timeout of twice the new
// service time. Measures the cycle of TestGradientTimeoutsDuringExperiment
// (adaptive): slow start past the workers, a queued cut, timeouts of the
// calls already queued during its experiment, and an undo that went back
// to the overshoot until stop 39 (since then, when timeouts came during
// the experiment and no timeout episode was open at its first cut, n̄
// used half the limit and that limit is above the last undo's, no higher
// than the calls in flight before the cut: both targets met).
func TestScenarioS19OwnQueueTightTimeout(t *testing.T) { runScenario(t, "S19") }

// TestScenarioDeterministic runs S3 twice for each kind of client
// (floodgate, failsafe-go, the pool), S15 (the fleet) twice for floodgate
// and the pool and S14 (the client's pauses) twice for floodgate: the same
// seed must give the same numbers, sample for sample, whatever the
// goroutine schedule. Not failsafe-go in S15: its ten executors' goodput
// differs from run to run (263.9 and 265.5 calls/s in two runs), as its
// state depends on the order in which goroutines that act at the same
// virtual instant run (docs/benchmarks.md).
func TestScenarioDeterministic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scenario   string
		contenders []string
	}{
		{"S3", []string{"floodgate", "failsafe-go", "fixed pool 50"}},
		{"S15", []string{"floodgate", "fixed pool 50"}},
		{"S14", []string{"floodgate"}},
	} {
		sc := scenario(t, tc.scenario)
		for _, c := range sim.Contenders() {
			if !slices.Contains(tc.contenders, c.Name) {
				continue
			}
			t.Run(sc.Name+"/"+c.Name, func(t *testing.T) {
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
}
