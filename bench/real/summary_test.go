package real

import (
	"strings"
	"testing"
)

// TestSummary checks the summary of three hand-made Redis results: the
// stalls rows' means, standard errors and ranges, and how many runs met
// the stalls target (floodgate at least 95% of go-redis deadline's
// successes: runs 1 and 3), with no HTTP target listed.
func TestSummary(t *testing.T) {
	phases := []Phase{{Name: "stalls"}}
	contenders := []string{"go-redis deadline", "floodgate"}
	run := func(base, fg int) *Result {
		return &Result{Trial: "Redis", Phases: phases, Contenders: contenders,
			Stats: [][]PhaseStats{{{OK: base}}, {{OK: fg}}}}
	}
	// floodgate 600, 300, 900: mean 600, standard deviation 300, standard
	// error 300/√3 = 173.
	got := Summary([]*Result{run(600, 600), run(700, 300), run(800, 900)})
	for _, want := range []string{
		"Redis, 3 runs: successes within the deadline",
		"| stalls | go-redis deadline | 700 | 58 | 600–800 |",
		"| stalls | floodgate | 600 | 173 | 300–900 |",
		"| stalls: floodgate's successes within the deadline ≥ go-redis deadline's | 2 of 3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "latency 300 ms") {
		t.Errorf("the Redis summary lists an HTTP target:\n%s", got)
	}
	if s := Summary(nil); s != "" {
		t.Errorf("Summary(nil) = %q, want \"\"", s)
	}
}

// TestSpread checks spread on one value (no standard error) and on none.
func TestSpread(t *testing.T) {
	if m, se, lo, hi := spread([]float64{5}); m != 5 || se != 0 || lo != 5 || hi != 5 {
		t.Errorf("spread([5]) = %v, %v, %v, %v; want 5, 0, 5, 5", m, se, lo, hi)
	}
	if m, se, lo, hi := spread(nil); m != 0 || se != 0 || lo != 0 || hi != 0 {
		t.Errorf("spread(nil) = %v, %v, %v, %v; want zeros", m, se, lo, hi)
	}
}
