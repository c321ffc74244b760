// Command seeds runs the scenario suite on other seeds and prints, for
// each target, on how many of them floodgate's default meets it, beside
// whether it meets it on the suite's own seed (bench/scenario_test.go), and
// each scenario's mean goodput ratio to the oracle. A target met on the
// suite's seed but on few others is met by luck.
//
// Run it from bench/:
//
//	go run ./cmd/seeds                 # seeds 1–20, every scenario (about 7 min on 2 cores)
//	go run ./cmd/seeds -n 5 -only S11,S17
//	go run ./cmd/seeds -misses         # and each miss of a target the suite's seed meets
//
// S16 runs for its first 2 minutes, as in the tests. Like cmd/scenarios it
// runs the scenarios as a test, through testing.Main, for testing/synctest.
// An -n outside [1, 1000] exits with status 2; an -only that names a
// scenario twice or one that does not exist fails the run (status 1).
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/bench/sim"
)

func main() {
	n := flag.Int("n", 20, "seeds 1..n, 1–1000")
	only := flag.String("only", "", "comma-separated scenario names (S1..S19); empty: all")
	misses := flag.Bool("misses", false, "also print each miss of a target the suite's seed meets, with its seed and measured value")
	testing.Init()
	flag.Parse()
	if *n < 1 || *n > 1000 {
		fmt.Fprintln(os.Stderr, "seeds: -n must be in [1, 1000]")
		os.Exit(2)
	}
	var names []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	testing.Main(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "Seeds", F: func(t *testing.T) { run(t, *n, names, *misses) }}}, nil, nil)
}

// tally is one scenario's results over the seeds.
type tally struct {
	targets       []sim.Target    // the scenario's, in sim.Targets' order
	met           map[string]int  // target name → seeds on which it is met
	own           map[string]bool // target name → met on the suite's seed
	flood, oracle float64         // goodput summed over the seeds (calls/s)
	misses        []miss          // for -misses
	mu            sync.Mutex
}

// miss is a target missed on one seed, with the value measured there.
type miss struct {
	seed             int
	target, measured string
}

func run(t *testing.T, n int, names []string, misses bool) {
	var scs []sim.Scenario
	for _, sc := range sim.Scenarios() {
		if len(names) > 0 && !slices.Contains(names, sc.Name) {
			continue
		}
		if sc.Name == "S16" {
			sc.Duration = 2 * time.Minute
		}
		scs = append(scs, sc)
	}
	if len(scs) == 0 || len(names) > 0 && len(scs) != len(names) {
		t.Fatalf("-only %s: want scenario names among S1..S19, each once", strings.Join(names, ","))
	}
	tallies := make([]*tally, len(scs))
	t.Run("runs", func(t *testing.T) {
		for i, sc := range scs {
			tl := &tally{met: map[string]int{}, own: map[string]bool{}}
			for _, tg := range sim.Targets() {
				if tg.Scenario == sc.Name {
					tl.targets = append(tl.targets, tg)
				}
			}
			tallies[i] = tl
			for seed := 0; seed <= n; seed++ { // 0: the suite's own seed
				t.Run(fmt.Sprintf("%s/%d", sc.Name, seed), func(t *testing.T) {
					t.Parallel()
					sc := sc
					if seed > 0 {
						sc.Seed = uint64(seed)
					}
					cs := sim.Contenders()
					rs := make([]*sim.Result, len(cs))
					for j, c := range cs {
						synctest.Test(t, func(t *testing.T) {
							r, err := sim.Run(sc, c)
							if err != nil {
								t.Fatal(err)
							}
							rs[j] = r
						})
					}
					if t.Failed() {
						return
					}
					tl.mu.Lock()
					defer tl.mu.Unlock()
					for _, tg := range tl.targets {
						measured, ok := tg.Check(rs)
						switch {
						case seed == 0:
							tl.own[tg.Name] = ok
						case ok:
							tl.met[tg.Name]++
						default:
							tl.misses = append(tl.misses, miss{seed, tg.Name, measured})
						}
					}
					if seed == 0 {
						return
					}
					for _, r := range rs {
						switch r.Contender {
						case "floodgate":
							tl.flood += r.Goodput
						case "oracle":
							tl.oracle += r.Goodput
						}
					}
				})
			}
		}
	})
	if t.Failed() {
		return
	}
	fmt.Printf("| scenario | floodgate / oracle, mean goodput over seeds 1–%d | target | met on the suite's seed | seeds 1–%d met |\n|---|--:|---|---|--:|\n", n, n)
	for i, sc := range scs {
		tl := tallies[i]
		ratio := fmt.Sprintf("%.3f", tl.flood/tl.oracle)
		for _, tg := range tl.targets {
			own := "no"
			if tl.own[tg.Name] {
				own = "yes"
			}
			fmt.Printf("| %s | %s | %s | %s | %d |\n", sc.Name, ratio, tg.Name, own, tl.met[tg.Name])
			ratio = ""
		}
	}
	if !misses {
		return
	}
	for i, sc := range scs {
		tl := tallies[i]
		slices.SortStableFunc(tl.misses, func(a, b miss) int { return a.seed - b.seed })
		for _, m := range tl.misses {
			if tl.own[m.target] {
				fmt.Printf("%s seed %d: %s: %s\n", sc.Name, m.seed, m.target, m.measured)
			}
		}
	}
}
