// Command scenarios runs the scenario suite S1..S19 (the same scenarios,
// seeds and contenders as bench/scenario_test.go, so the same numbers) and
// writes its results into the documentation: the tables and the targets
// between the "scenarios:begin" and "scenarios:end" markers of
// docs/benchmarks.md, and one PNG per scenario in docs/img/.
//
// Run it from bench/:
//
//	go run ./cmd/scenarios            # writes ../docs/benchmarks.md and ../docs/img/
//	go run ./cmd/scenarios -docs DIR  # another docs directory
//
// The scenarios run in virtual time inside testing/synctest bubbles, which
// need a *testing.T, so the command runs them as a test through
// testing.Main.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/bench/sim"
)

const (
	begin = "<!-- scenarios:begin (written by bench/cmd/scenarios; do not edit by hand) -->"
	end   = "<!-- scenarios:end -->"
)

func main() {
	docs := flag.String("docs", filepath.Join("..", "docs"), "the docs directory: benchmarks.md is updated, img/ receives the plots")
	testing.Init()
	flag.Parse()
	testing.Main(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "Scenarios", F: func(t *testing.T) { run(t, *docs) }}}, nil, nil)
}

// run runs every scenario and contender, in parallel, each in its own
// bubble, then writes the docs.
func run(t *testing.T, docs string) {
	scs := sim.Scenarios()
	cs := sim.Contenders()
	results := make([][]*sim.Result, len(scs))
	var mu sync.Mutex
	t.Run("runs", func(t *testing.T) {
		for i, sc := range scs {
			results[i] = make([]*sim.Result, len(cs))
			for j, c := range cs {
				t.Run(sc.Name+"/"+c.Name, func(t *testing.T) {
					t.Parallel()
					synctest.Test(t, func(t *testing.T) {
						r, err := sim.Run(sc, c)
						if err != nil {
							t.Fatal(err)
						}
						mu.Lock()
						results[i][j] = r
						mu.Unlock()
					})
				})
			}
		}
	})
	sweep := phaseSweep(t)
	if t.Failed() {
		return
	}
	if err := os.MkdirAll(filepath.Join(docs, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	for i, sc := range scs {
		img := fmt.Sprintf("scenario-%s.png", strings.ToLower(sc.Name))
		if err := sim.WritePlot(filepath.Join(docs, "img", img), sc, results[i]); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&md, "### %s: %s\n\n%s\n![%s over time](img/%s)\n\n", sc.Name, sc.Title, sim.Table(sc, results[i]), sc.Name, img)
	}
	md.WriteString("### Targets (floodgate default)\n\n| scenario | target | measured | met |\n|---|---|---|---|\n")
	for _, tg := range sim.Targets() {
		for i, sc := range scs {
			if sc.Name == tg.Scenario {
				measured, ok := tg.Check(results[i])
				fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", tg.Scenario, tg.Name, measured, map[bool]string{true: "yes", false: "**no**"}[ok])
			}
		}
	}
	md.WriteString("\n" + sweep)
	fmt.Fprintf(&md, "\nMeasured with %s on %s/%s, %d CPUs; the numbers depend only on the seeds, not on the machine.\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Print(md.String())

	path := filepath.Join(docs, "benchmarks.md")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, e := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
	if b < 0 || e < b {
		t.Fatalf("%s: markers %q and %q not found", path, begin, end)
	}
	out := append([]byte{}, old[:b+len(begin)]...)
	out = append(out, '\n', '\n')
	out = append(out, md.Bytes()...)
	out = append(out, '\n')
	out = append(out, old[e:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// phaseSweep runs S3 with the outage ending at 58 to 64 s, for floodgate
// and failsafe-go: failsafe-go's breaker stays open 2 s at a time
// (breaker.DefaultMaxOpenFor), floodgate's 250 ms first and twice as long
// on each failed probe up to 2 s, so which one recovers first depends on
// where the end of the outage falls in its open-probe cycle. It returns a Markdown table.
func phaseSweep(t *testing.T) string {
	var sc sim.Scenario
	for _, s := range sim.Scenarios() {
		if s.Name == "S3" {
			sc = s
		}
	}
	var cs []sim.Contender
	for _, c := range sim.Contenders() {
		if c.Name == "floodgate" || c.Name == "failsafe-go" {
			cs = append(cs, c)
		}
	}
	var b strings.Builder
	b.WriteString("S3 with the outage ending at other times (goodput in calls/s; recovery → 95% goodput):\n\n")
	b.WriteString("| outage ends at | floodgate goodput | floodgate recovery | failsafe-go goodput | failsafe-go recovery |\n|--:|--:|--:|--:|--:|\n")
	for end := 58; end <= 64; end++ {
		s := sc
		s.Recovery = time.Duration(end) * time.Second
		s.Phases = append([]sim.Phase{}, sc.Phases...)
		s.Phases[len(s.Phases)-1].From = s.Recovery
		fmt.Fprintf(&b, "| %d s |", end)
		for _, c := range cs {
			synctest.Test(t, func(t *testing.T) {
				r, err := sim.Run(s, c)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, " %.1f | %.1f s |", r.Goodput, r.Recovered.Seconds())
			})
		}
		b.WriteString("\n")
	}
	return b.String()
}
