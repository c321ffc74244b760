package adaptive

import (
	"testing"
	"time"
)

// A timeout storm that ends (bench/real's HTTP trial, a 2 s latency toxic
// removed) left Gradient's experiment measuring for 31 s at limit 1. The
// cut came from the storm's last window (5 calls back in 1.5 s on a base
// of 0.13 ms), so the throughput before the cut, against which the
// experiment measures, was 2 calls/s, and telling a fall of f/2 from it
// needs 16/f² = 64 calls expected: 31 s at that rate, though the healed
// downstream answered 300 calls/s from the first window. Measured on
// that trial (full form, quiet machine), the 300 ms toxic that followed:
// floodgate 33 successes within the deadline, limit 1 throughout, before;
// 577–664 after. The experiment now also ends once its count reaches twice
// what its whole measurement expects: no queue of ours and no slower
// downstream doubles its throughput after a cut.
//
// The windows below are that trial's, as Gradient saw them: healthy, the
// storm, the heal.
func TestGradientExperimentEndsWhenHealed(t *testing.T) {
	const ms = time.Millisecond
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	healthy := Window{Duration: 250 * ms, Samples: 76, MeanRTT: us(170), StdDevRTT: us(50), MaxInFlight: 1}
	seq := []Window{ // the storm: 2 s windows of timeouts, then the last one, slow successes
		{Duration: 2 * time.Second, Samples: 40, Drops: 34, MeanRTT: 2000 * ms, MaxInFlight: 40},
		{Duration: 2 * time.Second, Samples: 40, Drops: 36, MeanRTT: 2001 * ms, MaxInFlight: 39},
		{Duration: 2 * time.Second, Samples: 20, Drops: 16, MeanRTT: 2005 * ms, StdDevRTT: 6 * ms, MaxInFlight: 19},
		{Duration: 2 * time.Second, Samples: 10, Drops: 8, MeanRTT: 1935 * ms, StdDevRTT: 92 * ms, MaxInFlight: 9},
		{Duration: 2 * time.Second, Samples: 5, MeanRTT: 1495 * ms, StdDevRTT: 836 * ms, MaxInFlight: 4},
	}
	for _, tc := range []struct {
		name   string
		within time.Duration // of healed windows, until the limit may grow again
	}{
		// the experiment waits one RTT (1.5 s) for the cut to take effect,
		// then measures two windows; before this fix: 22.25 s here
		// (31 s in the trial)
		{"2 s latency removed, 300 calls/s at 0.17 ms", 2500 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGradient(GradientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			limit := 20
			for range 20 {
				limit = clampLimit(g.Update(limit, healthy))
			}
			for _, w := range seq {
				limit = clampLimit(g.Update(limit, w))
			}
			if limit != 1 {
				t.Fatalf("limit %d after the storm; want 1 (this test replays a cut to the floor)", limit)
			}
			if !g.probing {
				t.Fatal("no experiment after the storm's last window")
			}
			var healed time.Duration
			for g.probing && healed < 60*time.Second {
				w := healthy
				w.MaxInFlight = limit
				limit = clampLimit(g.Update(limit, w))
				healed += w.Duration
			}
			t.Logf("the experiment ended after %v of healed windows, limit %d", healed, limit)
			if healed > tc.within {
				t.Errorf("the experiment ended after %v of healed windows; want ≤ %v", healed, tc.within)
			}
		})
	}
}

// After that storm the same trial's 300 ms toxic (every call succeeds, 300
// calls/s, a pool of 50 in front) found the limit at 3 with ssthresh 2.9,
// both from the storm and the 1 ms phase after it. The experiment took the
// 300 ms for the new normal and restored both, and from ssthresh the limit
// grew by ⅛ per RTT: 3 to 58 took 7.5 s of the 10 s phase (floodgate 577–651
// successes within the deadline against net/http's 1,251). An RTT ten times
// the base or more forgets ssthresh: by Little's law the old capacity in
// calls says nothing at it, and the limit doubles per RTT again.
func TestGradientRegrowsAfterNewNormal(t *testing.T) {
	const ms = time.Millisecond
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	healthy := Window{Duration: 250 * ms, Samples: 76, MeanRTT: us(170), StdDevRTT: us(50), MaxInFlight: 1}
	storm := []Window{
		{Duration: 2 * time.Second, Samples: 40, Drops: 34, MeanRTT: 2000 * ms, MaxInFlight: 40},
		{Duration: 2 * time.Second, Samples: 40, Drops: 36, MeanRTT: 2001 * ms, MaxInFlight: 39},
		{Duration: 2 * time.Second, Samples: 20, Drops: 16, MeanRTT: 2005 * ms, StdDevRTT: 6 * ms, MaxInFlight: 19},
		{Duration: 2 * time.Second, Samples: 10, Drops: 8, MeanRTT: 1935 * ms, StdDevRTT: 92 * ms, MaxInFlight: 9},
		{Duration: 2 * time.Second, Samples: 5, MeanRTT: 1495 * ms, StdDevRTT: 836 * ms, MaxInFlight: 4},
	}
	for _, tc := range []struct {
		name    string
		rtt     time.Duration // the slowdown's RTT
		demand  int           // calls in flight it needs (300 calls/s × rtt)
		workers int           // the pool in front
		within  time.Duration // of slowdown windows, until the limit reaches the pool
	}{
		// before this rule: 7.2 s here (7.5 s from 3 to 58 in the trial)
		{"300 ms, pool of 50", 300 * ms, 90, 50, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGradient(GradientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			limit := 20
			for range 20 {
				limit = clampLimit(g.Update(limit, healthy))
			}
			for _, w := range storm {
				limit = clampLimit(g.Update(limit, w))
			}
			for range 20 { // healed, 1 ms: the limit grows with the demand of a few calls
				w := healthy
				w.MaxInFlight = min(limit, 3)
				limit = clampLimit(g.Update(limit, w))
			}
			var slow time.Duration
			var seq []int
			for slow < 20*time.Second && limit < tc.workers {
				in := min(limit, tc.demand, tc.workers)
				w := Window{Duration: tc.rtt, Samples: in, MeanRTT: tc.rtt, StdDevRTT: tc.rtt / 100, MinRTT: tc.rtt * 98 / 100, MaxInFlight: min(limit, tc.demand)}
				limit = clampLimit(g.Update(limit, w))
				if c := g.Ceiling(); c > limit {
					limit = min(c, tc.demand) // Acquire grows it between windows
				}
				seq = append(seq, limit)
				slow += w.Duration
			}
			t.Logf("limits %v: the pool of %d reached after %v", seq, tc.workers, slow)
			if limit < tc.workers || slow > tc.within {
				t.Errorf("limits %v: %d after %v of the slowdown; want ≥ %d within %v", seq, limit, slow, tc.workers, tc.within)
			}
		})
	}
}
