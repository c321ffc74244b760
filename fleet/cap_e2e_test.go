//go:build e2e

package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// runCapChildren re-executes the test binary as one cap child per span,
// sharing gate childGate under prefix on addr with FleetLimit limit and
// HeartbeatTTL ttl, each running for its span, and returns their reports
// once all have exited.
func runCapChildren(t *testing.T, addr, prefix string, limit int, ttl time.Duration, spans []time.Duration) []capReport {
	t.Helper()
	envs := make([][]string, len(spans))
	for i, span := range spans {
		envs[i] = []string{childAddrEnv + "=" + addr, childPrefix + "=" + prefix,
			capChildEnv + "=" + fmt.Sprint(limit), capTTLEnv + "=" + ttl.String(), childSpanEnv + "=" + span.String()}
	}
	return execChildren[capReport](t, envs, nil)
}

// capSums merges the processes' samples in time order and returns the
// highest sums of their limits and of their caps at any sample, and the
// time of the highest sum of limits. A process counts from its first
// sample to its End.
func capSums(rs []capReport) (maxLimits, maxCaps int, at int64) {
	type event struct {
		unix       int64
		proc       int
		limit, cap int
	}
	var evs []event
	for i, r := range rs {
		for _, s := range r.Samples {
			evs = append(evs, event{s.Unix, i, s.Limit, s.Cap})
		}
		evs = append(evs, event{r.End + 1, i, 0, 0}) // gone
	}
	slices.SortStableFunc(evs, func(a, b event) int { return int(a.unix - b.unix) })
	limits, caps := make([]int, len(rs)), make([]int, len(rs))
	for _, e := range evs {
		limits[e.proc], caps[e.proc] = e.limit, e.cap
		var l, c int
		for i := range rs {
			l += limits[i]
			c += caps[i]
		}
		if l > maxLimits {
			maxLimits, at = l, e.unix
		}
		maxCaps = max(maxCaps, c)
	}
	return maxLimits, maxCaps, at
}

// reached returns the first time after from at which r's limit was at
// least v, and false if it never was.
func reached(r capReport, v int, from int64) (int64, bool) {
	for _, s := range r.Samples {
		if s.Unix >= from && s.Limit >= v {
			return s.Unix, true
		}
	}
	return 0, false
}

// Issue 15's fleet-wide cap test: FleetLimit 30 with 3 processes, each
// under a demand that would take its limiter far above 10 (32 callers, a
// 2 ms downstream, MaxLimit 200). The sum of their limits, and of their
// caps, never exceeds 30 at any sampled instant (each process samples its
// own every 200 µs or so, with wall-clock times); each reaches 10. p3
// exits after 3 s; p1 and p2 reach 15 each within twice HeartbeatTTL (1 s:
// p3 is live for it, then its cap reserved for as long) plus 2 intervals
// of it, and not before twice HeartbeatTTL minus 2 intervals (p3's last
// heartbeat is at most one interval before it exits).
func TestFleetCapMultiProcess(t *testing.T) {
	const (
		limit = 30
		ttl   = time.Second
	)
	addr := redisAddr(t)
	spans := []time.Duration{7 * time.Second, 7 * time.Second, 3 * time.Second}
	rs := runCapChildren(t, addr, prefix(t), limit, ttl, spans)
	began := slices.MinFunc(rs, func(a, b capReport) int { return int(a.Start - b.Start) }).Start
	ms := func(unix int64) float64 { return float64(unix-began) / 1e6 }
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %7s %7s %9s %10s %10s %9s %7s %10s %10s\n", "process", "calls", "shed", "max limit", "end limit",
		"end share", "end live", "fallbk", "≥10 at ms", "exit ms")
	for _, r := range rs {
		t10, _ := reached(r, 10, 0)
		fmt.Fprintf(&b, "%-7s %7d %7d %9d %10d %10d %9d %7d %10.0f %10.0f\n", r.Name, r.Calls, r.Shed, r.MaxLimit, r.EndLimit,
			r.EndShare, r.EndLive, r.Fallbacks, ms(t10), ms(r.End))
		if r.Bad != 0 {
			t.Errorf("%s: %d Guard errors other than a shed (first: %s)", r.Name, r.Bad, r.FirstBad)
		}
		if _, ok := reached(r, 10, 0); !ok {
			t.Errorf("%s: its limit never reached 10 (max %d): the demand did not fill its share", r.Name, r.MaxLimit)
		}
	}
	maxLimits, maxCaps, at := capSums(rs)
	t.Logf("FleetLimit %d, 3 processes; p3 exits at 3 s\n%s\nhighest sum of limits %d (at %.0f ms), of caps %d",
		limit, b.String(), maxLimits, ms(at), maxCaps)
	if maxLimits > limit || maxCaps > limit {
		t.Errorf("the sum of the limits reached %d, of the caps %d; want ≤ %d", maxLimits, maxCaps, limit)
	}
	exit := rs[2].End
	for _, r := range rs[:2] {
		t15, ok := reached(r, 15, exit)
		d := time.Duration(t15 - exit)
		t.Logf("%s: limit 15 %.0f ms after p3 exited", r.Name, d.Seconds()*1000)
		if !ok || d > 2*ttl+2*DefaultInterval+500*time.Millisecond || d < 2*ttl-2*DefaultInterval {
			t.Errorf("%s: limit 15 reached %v (%v) after p3 exited, want within [%v, %v]", r.Name, d, ok,
				2*ttl-2*DefaultInterval, 2*ttl+2*DefaultInterval+500*time.Millisecond)
		}
		if r.EndShare != 15 || r.EndLive != 2 {
			t.Errorf("%s: ends with share %d of %d live, want 15 of 2", r.Name, r.EndShare, r.EndLive)
		}
	}
}
