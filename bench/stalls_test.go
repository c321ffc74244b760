package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/floodgate-go/floodgate/bench/sim"
)

// stallAlignments is how many alignments of S18's stalls
// TestScenarioS18Alignments runs (Phase.Slips 1 to stallAlignments).
const stallAlignments = 20

// alignmentsTarget is TestScenarioS18Alignments's target, by name.
var alignmentsTarget = fmt.Sprintf("over %d alignments: mean goodput from 30 s to 45 s ≥ the fixed pool's", stallAlignments)

// TestScenarioS18Alignments runs S18 with stallAlignments other choices
// of the stalls that slip (Phase.Slips), as the real trial's runs differ
// from each other, and checks the stall's target on the mean good calls
// from 30 s to 45 s: floodgate's against the fixed pool's (bench/real:
// go-redis deadline's). The suite's S18 is one alignment, on which
// floodgate meets it; over 20 it does not, as the real trial does not in
// most of its runs (docs/benchmarks.md, S18). It asserts that the model
// keeps the real trial's order, a shedding limit of 50 (the oracle) ahead
// of the fixed pool, which queues (real: 950–1,063 successes against
// go-redis deadline's 677–997 in three full runs). Under the race
// detector it runs floodgate alone on 3 alignments and checks nothing.
func TestScenarioS18Alignments(t *testing.T) {
	t.Parallel()
	base := scenario(t, "S18")
	names := []string{"floodgate", "fixed pool 50", "oracle", "failsafe-go"}
	n := stallAlignments
	if raceEnabled {
		names, n = names[:1], 3
	}
	cs := slices.DeleteFunc(sim.Contenders(), func(c sim.Contender) bool { return !slices.Contains(names, c.Name) })
	good := make([][]int, len(cs)) // good[c][k]: contender c's good calls in the stall, alignment k+1
	for i := range good {
		good[i] = make([]int, n)
	}
	t.Run("alignments", func(t *testing.T) {
		for i, c := range cs {
			for k := range n {
				sc := base
				sc.Phases = slices.Clone(base.Phases)
				for j := range sc.Phases {
					sc.Phases[j].Slips = uint64(k + 1)
				}
				t.Run(fmt.Sprintf("%s/slips=%d", c.Name, k+1), func(t *testing.T) {
					t.Parallel()
					synctest.Test(t, func(t *testing.T) {
						r, err := sim.Run(sc, c)
						if err != nil {
							t.Fatal(err)
						}
						for _, b := range r.Bins {
							if b.T >= sc.Onset && b.T < sc.Recovery {
								good[i][k] += b.Good
							}
						}
					})
				})
			}
		}
	})
	if t.Failed() || raceEnabled {
		return
	}
	mean := func(i int) float64 {
		sum := 0
		for _, g := range good[i] {
			sum += g
		}
		return float64(sum) / float64(n)
	}
	var b strings.Builder
	b.WriteString("| contender | mean good calls, 30–45 s | lowest | highest |\n|---|--:|--:|--:|\n")
	for i, c := range cs {
		fmt.Fprintf(&b, "| %s | %.0f | %d | %d |\n", c.Name, mean(i), slices.Min(good[i]), slices.Max(good[i]))
	}
	named := func(name string) int {
		return slices.IndexFunc(cs, func(c sim.Contender) bool { return c.Name == name })
	}
	fg, pool, oracle := named("floodgate"), named("fixed pool 50"), named("oracle")
	met := 0
	for k := range n {
		if good[fg][k] >= good[pool][k] {
			met++
		}
	}
	t.Logf("S18 over %d alignments of its stalls (Phase.Slips 1–%d)\n%s", n, n, b.String())
	if mean(oracle) <= mean(pool) {
		t.Errorf("the oracle's limit of 50 serves %.0f good calls on average, the fixed pool %.0f: the stalls no longer keep the real trial's order", mean(oracle), mean(pool))
	}
	report(t, "S18", alignmentsTarget,
		fmt.Sprintf("%.0f vs %.0f good calls (floodgate ahead on %d of %d)", mean(fg), mean(pool), met, n), mean(fg) >= mean(pool))
}
