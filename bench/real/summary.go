package real

import (
	"fmt"
	"math"
	"strings"
)

// Summary returns, as Markdown, what several runs of one trial measured:
// a heading with the trial and the number of runs, per phase and
// contender the successes within the deadline (mean, its standard error,
// and the range over the runs), then in how many runs each of issue 12's
// targets was met. One run of the full form's Redis stalls does not rank
// two limiters (testdata/real-tables.md, stop 40): a comparison needs the
// means of many runs, alternated between the two.
//
// results must come from one trial, so that they share the first one's
// phases and contenders, which name the rows; it returns "" for none.
func Summary(results []*Result) string {
	if len(results) == 0 {
		return ""
	}
	first := results[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d runs: successes within the deadline\n\n", first.Trial, len(results))
	b.WriteString("| phase | contender | mean | ± standard error | range |\n|---|---|--:|--:|--:|\n")
	for _, p := range first.Phases {
		for _, name := range first.Contenders {
			var ok []float64
			for _, r := range results {
				if s, found := r.Stat(name, p.Name); found {
					ok = append(ok, float64(s.OK))
				}
			}
			m, se, lo, hi := spread(ok)
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.0f–%.0f |\n", p.Name, name, m, se, lo, hi)
		}
	}
	b.WriteString("\n| target | met in |\n|---|--:|\n")
	for _, tg := range Targets() {
		if tg.Trial != first.Trial {
			continue
		}
		met := 0
		for _, r := range results {
			if _, ok := tg.Check(r); ok {
				met++
			}
		}
		fmt.Fprintf(&b, "| %s | %d of %d |\n", tg.Name, met, len(results))
	}
	return b.String()
}

// spread returns the mean of xs, the standard error of that mean (0 for
// fewer than two values), and the smallest and largest value; all 0 for
// none.
func spread(xs []float64) (mean, se, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0, 0
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		mean += x
		lo, hi = min(lo, x), max(hi, x)
	}
	n := float64(len(xs))
	mean /= n
	if len(xs) < 2 {
		return mean, 0, lo, hi
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/(n-1)) / math.Sqrt(n), lo, hi
}
