package sim

import (
	"fmt"
	"strings"
	"time"
)

// Table returns the results of scenario sc as a Markdown table, one row
// per contender. The columns after "limit from onset + 10 s" appear only
// where the scenario has what they measure: a recovery, a capacity change
// (S6), a Retry-After hint (S5), capacity to spare through the trouble
// (S8, S9, S12–S14: the calls lost and shed while healthy).
func Table(sc Scenario, results []*Result) string {
	var b strings.Builder
	head := "| contender | goodput (calls/s) | % of offered | p50 | p99 | amplification | peak in-flight | p99 to shed | p99 to error | onset → under capacity | limit from onset + 10 s |"
	rule := "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	recovery, s5, s6 := sc.Recovery > 0, sc.Name == "S5", sc.Name == "S6"
	if recovery {
		head, rule = head+" recovery → 95% goodput |", rule+"--:|"
	}
	if s6 {
		head, rule = head+" limit settled ±20% |", rule+"--:|"
	}
	if s5 {
		head, rule = head+" attempts before the hint expired |", rule+"--:|"
	}
	if sc.Spare {
		head, rule = head+" healthy calls lost | healthy calls shed |", rule+"--:|--:|"
	}
	b.WriteString(head + "\n" + rule + "\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f%% | %s | %s | %.2f | %d | %s | %s | %s | %s |",
			r.Contender, r.Goodput, 100*r.Goodput/r.Offered, ms(r.P50), ms(r.P99), r.Amplification,
			r.PeakInFlight, countMs(r.Shed, r.P99Shed), countMs(r.Failed, r.P99Error), span(r.UnderCapacity), limits(r))
		if recovery {
			fmt.Fprintf(&b, " %s |", span(r.Recovered))
		}
		if s6 {
			fmt.Fprintf(&b, " %s |", span(r.LimitSettled))
		}
		if s5 {
			fmt.Fprintf(&b, " %d |", r.EarlyAttempts)
		}
		if sc.Spare {
			fmt.Fprintf(&b, " %d | %d |", r.HealthyLost, r.HealthyShed)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func ms(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

func span(d time.Duration) string {
	if d == Never {
		return "never"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func limits(r *Result) string {
	if r.LimitHigh == 0 {
		return "–"
	}
	return fmt.Sprintf("%d–%d", r.LimitLow, r.LimitHigh)
}

// countMs formats a percentile of n calls: "–" when there were none.
func countMs(n int, d time.Duration) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}
