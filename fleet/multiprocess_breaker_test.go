//go:build e2e

package fleet

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// breakerChild is one breaker child's part in a run.
type breakerChild struct {
	rate int       // calls per second
	heal time.Time // its downstream fails until then; zero: never fails
}

// runBreakerChildren re-executes the test binary as one breaker child per
// spec, all sharing gate childGate under prefix on addr, calling from
// about 2 s after now (time for every child to start and sync) for span,
// and returns their reports and the begin time.
func runBreakerChildren(t *testing.T, addr, prefix string, span, openFor time.Duration, specs []breakerChild) ([]breakerReport, time.Time) {
	t.Helper()
	begin := time.Now().Add(2 * time.Second)
	envs := make([][]string, len(specs))
	for i, sp := range specs {
		heal := int64(0)
		if !sp.heal.IsZero() {
			heal = sp.heal.UnixNano()
		}
		if sp.heal.Equal(forever) {
			heal = math.MaxInt64
		}
		envs[i] = []string{childModeEnv + "=breaker",
			childAddrEnv + "=" + addr, childPrefix + "=" + prefix, childSpanEnv + "=" + span.String(),
			childRateEnv + "=" + fmt.Sprint(sp.rate), childBeginEnv + "=" + fmt.Sprint(begin.UnixNano()),
			childHealEnv + "=" + fmt.Sprint(heal), childOpenForEnv + "=" + openFor.String()}
	}
	return execChildren[breakerReport](t, envs, nil), begin
}

// forever is a heal time that never comes: the downstream always fails.
var forever = time.Unix(0, math.MaxInt64)

// since renders the Unix ns at, relative to ref, in ms ("-" for 0).
func since(at int64, ref time.Time) string {
	if at == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", float64(at-ref.UnixNano())/1e6)
}

// breakerTable renders the breaker children's reports, times from ref.
func breakerTable(rs []breakerReport, specs []breakerChild, ref time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %6s %6s %7s %5s %5s %5s %4s %6s %10s %10s %10s\n", "process", "rate/s", "calls", "reached", "ok",
		"down", "open", "bad", "local", "fleet open", "held", "refused")
	for i, r := range rs {
		fmt.Fprintf(&b, "%-7s %6d %6d %7d %5d %5d %5d %4d %6d %10s %10s %10s\n", r.Name, specs[i].rate, r.Calls, r.Reached, r.OK,
			r.Down, r.Open, r.Bad, r.LocalOpens, since(r.FleetOpen, ref), since(r.Held, ref), since(r.Refused, ref))
	}
	return b.String()
}

// firstOpen returns the first time any child saw the fleet breaker open:
// the child whose sync opened it sees it as that sync returns.
func firstOpen(rs []breakerReport) int64 {
	var first int64
	for _, r := range rs {
		if r.FleetOpen != 0 && (first == 0 || r.FleetOpen < first) {
			first = r.FleetOpen
		}
	}
	return first
}

// Issue 15's breaker test, the downstream failing for all three processes:
// p1 calls fast (1,000/s) and its own breaker trips (MinCalls 40; unless
// the fleet's holds it first, logged); p2 and p3
// call slowly (20/s, so never 40 calls in their own 10 s windows). The
// fleet's breaker opens on the sum; p2 and p3 are held within 2 Intervals
// of it and from then on answer every call with ErrOpen without calling
// fn, their own breakers never opening. The run (1.5 s) ends before
// OpenFor (2 s) does.
func TestFleetBreakerAllFail(t *testing.T) {
	specs := []breakerChild{{1000, forever}, {20, forever}, {20, forever}}
	rs, begin := runBreakerChildren(t, redisAddr(t), prefix(t), 1500*time.Millisecond, 2*time.Second, specs)
	t.Logf("3 processes, downstream failing for all, times from the first call\n%s", breakerTable(rs, specs, begin))
	open := firstOpen(rs)
	if open == 0 {
		t.Fatal("the fleet's breaker never opened")
	}
	t.Logf("fleet open %s after the first call", since(open, begin))
	if rs[0].LocalOpens < 1 {
		// the fleet's sum reached MinCalls before p1's own window did: a
		// sync of p1 between its 32nd and 40th call, 8 ms at 1,000/s
		t.Logf("p1: its own breaker did not open: the fleet held it first, after %d calls", rs[0].Reached)
	}
	for _, r := range rs[1:] {
		held, refused := time.Duration(r.Held-open), time.Duration(r.Refused-open)
		t.Logf("%s: held %v after the fleet opened, first ErrOpen %v after", r.Name, held.Round(time.Millisecond), refused.Round(time.Millisecond))
		if r.Held == 0 || held > 2*DefaultInterval {
			t.Errorf("%s: held %v after the fleet opened, want within 2 Intervals (%v)", r.Name, held, 2*DefaultInterval)
		}
		if r.Refused == 0 || refused > 2*DefaultInterval+time.Second/20 {
			t.Errorf("%s: first ErrOpen %v after the fleet opened, want within 2 Intervals + one call's gap (50 ms)", r.Name, refused)
		}
		reachedAfter := 0
		for _, at := range r.Reaches {
			if at >= r.Held {
				reachedAfter++
			}
		}
		if reachedAfter != 0 || r.OpenReached != 0 || r.Bad != 0 || r.LocalOpens != 0 {
			t.Errorf("%s: %d fn calls once held, %d ErrOpen after reaching fn, %d bad (first %s), own breaker opened %d times; want 0 each",
				r.Name, reachedAfter, r.OpenReached, r.Bad, r.FirstBad, r.LocalOpens)
		}
		if r.Open < 15 {
			t.Errorf("%s: %d ErrOpen of %d calls, want nearly all", r.Name, r.Open, r.Calls)
		}
	}
}

// Issue 15's breaker test, the downstream failing for p1 only (its own
// path is broken), all three calling 100/s: p1's own breaker trips; the
// fleet's stays closed (p1 alone is a minority), and p2 and p3 keep
// serving: every call succeeds, none refused.
func TestFleetBreakerOnePath(t *testing.T) {
	specs := []breakerChild{{100, forever}, {100, time.Time{}}, {100, time.Time{}}}
	rs, begin := runBreakerChildren(t, redisAddr(t), prefix(t), 1500*time.Millisecond, 2*time.Second, specs)
	t.Logf("3 processes, downstream failing for p1 only, times from the first call\n%s", breakerTable(rs, specs, begin))
	if open := firstOpen(rs); open != 0 {
		t.Errorf("the fleet's breaker opened %s after the first call; want closed throughout", since(open, begin))
	}
	if rs[0].LocalOpens < 1 || rs[0].Open == 0 {
		t.Errorf("p1: own breaker opened %d times, %d ErrOpen; want ≥ 1, > 0", rs[0].LocalOpens, rs[0].Open)
	}
	for _, r := range rs[1:] {
		// fallbacks are reported, not asserted: a machine stalled past the
		// 50 ms Timeout makes one, and the process serves through it
		t.Logf("%s: %d fallbacks", r.Name, r.Fallbacks)
		if r.OK != r.Calls || r.Open != 0 || r.Held != 0 {
			t.Errorf("%s: %d of %d calls succeeded, %d ErrOpen, held at %s; want all, 0, never",
				r.Name, r.OK, r.Calls, r.Open, since(r.Held, begin))
		}
	}
}

// Issue 15's half-open test: the downstream fails for all three (100
// calls/s each) for the first 1.2 s, then recovers; OpenFor 400 ms. While
// the fleet's breaker is not closed, after every process was held, only
// one process at a time reaches fn (the prober, at most Probes calls per
// half-open); once the prober closes it, the others are released at their
// next sync (within an Interval; the test allows 3 for a loaded machine).
func TestFleetBreakerHalfOpen(t *testing.T) {
	const openFor = 400 * time.Millisecond
	heal := time.Now().Add(2*time.Second + 1200*time.Millisecond) // 1.2 s after the first call
	specs := []breakerChild{{100, heal}, {100, heal}, {100, heal}}
	rs, begin := runBreakerChildren(t, redisAddr(t), prefix(t), 3*time.Second, openFor, specs)
	t.Logf("3 processes, downstream failing for all until %s, OpenFor %v\n%s",
		since(heal.UnixNano(), begin), openFor, breakerTable(rs, specs, begin))
	open := firstOpen(rs)
	if open == 0 {
		t.Fatal("the fleet's breaker never opened")
	}
	// the close: the first change to closed after open, as any child saw it
	var closed int64
	for _, r := range rs {
		for _, c := range r.Changes {
			if c.To == "closed" && c.Unix > open && (closed == 0 || c.Unix < closed) {
				closed = c.Unix
			}
		}
	}
	if closed == 0 {
		t.Fatal("the fleet's breaker never closed after the downstream recovered")
	}
	t.Logf("fleet open %s, closed %s after the first call", since(open, begin), since(closed, begin))
	// fn calls while the fleet was not closed, once all were held
	allHeld := open
	for _, r := range rs {
		if r.Held == 0 {
			t.Fatalf("%s never held", r.Name)
		}
		allHeld = max(allHeld, r.Held)
	}
	type reach struct {
		at   int64
		proc string
	}
	var reaches []reach
	for _, r := range rs {
		for _, at := range r.Reaches {
			if at > allHeld && at < closed {
				reaches = append(reaches, reach{at, r.Name})
			}
		}
	}
	slices.SortFunc(reaches, func(a, b reach) int { return int(a.at - b.at) })
	var probes []string
	for i, x := range reaches {
		probes = append(probes, fmt.Sprintf("%s %s", x.proc, since(x.at, begin)))
		if i > 0 && x.proc != reaches[i-1].proc && time.Duration(x.at-reaches[i-1].at) < openFor-2*DefaultInterval {
			t.Errorf("%s and %s both reached fn within %v: two probers in one half-open", reaches[i-1].proc, x.proc,
				time.Duration(x.at-reaches[i-1].at))
		}
	}
	t.Logf("fn calls while the fleet's breaker was open or half-open: %s", strings.Join(probes, ", "))
	periods := int(time.Duration(closed-allHeld)/openFor) + 1
	if len(reaches) > 3*periods {
		t.Errorf("%d fn calls in %d half-open periods, want ≤ Probes (3) each", len(reaches), periods)
	}
	for _, r := range rs {
		var free int64
		for _, h := range r.Holds {
			if h.To == "free" && h.Unix >= closed {
				free = h.Unix
				break
			}
		}
		// the prober may have been free already (its hold lapsed as it closed)
		if free == 0 && len(r.Holds) > 0 && r.Holds[len(r.Holds)-1].To == "free" {
			free = closed
		}
		d := time.Duration(free - closed)
		t.Logf("%s: released %v after the close", r.Name, d.Round(time.Millisecond))
		// the model says its next sync: within an Interval and its round
		// trip; two more Intervals of slack for a loaded machine, where a
		// sync can start late
		if free == 0 || d > 3*DefaultInterval {
			t.Errorf("%s: released %v after the close, want within 3 Intervals (its next sync, with slack)", r.Name, d)
		}
		if r.Bad != 0 || r.OpenReached != 0 {
			t.Errorf("%s: %d bad answers (first %s), %d ErrOpen after reaching fn", r.Name, r.Bad, r.FirstBad, r.OpenReached)
		}
	}
}
