package adaptive

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// bench/real's HTTP trial as Gradient saw it, window by window: healthy
// at 0.17 ms and 300 calls/s, then a 2 s latency toxic (every attempt
// times out), ending in a window of 5 successes with a mean RTT of 1.5 s.
var (
	trialHealthy = Window{Duration: 250 * time.Millisecond, Samples: 76, MeanRTT: 170 * time.Microsecond,
		StdDevRTT: 50 * time.Microsecond, MaxInFlight: 1}
	trialStorm = []Window{
		{Duration: 2 * time.Second, Samples: 40, Drops: 34, MeanRTT: 2000 * time.Millisecond, MaxInFlight: 40},
		{Duration: 2 * time.Second, Samples: 40, Drops: 36, MeanRTT: 2001 * time.Millisecond, MaxInFlight: 39},
		{Duration: 2 * time.Second, Samples: 20, Drops: 16, MeanRTT: 2005 * time.Millisecond, StdDevRTT: 6 * time.Millisecond, MaxInFlight: 19},
		{Duration: 2 * time.Second, Samples: 10, Drops: 8, MeanRTT: 1935 * time.Millisecond, StdDevRTT: 92 * time.Millisecond, MaxInFlight: 9},
		{Duration: 2 * time.Second, Samples: 5, MeanRTT: 1495 * time.Millisecond, StdDevRTT: 836 * time.Millisecond, MaxInFlight: 4},
	}
)

// replayStorm returns a Gradient that has seen 5 s of trialHealthy and
// then trialStorm, and the limit it left (the Limiter's clamp applied).
func replayStorm(t *testing.T) (*Gradient, int) {
	t.Helper()
	g, err := NewGradient(GradientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	limit := 20
	for range 20 {
		limit = clampLimit(g.Update(limit, trialHealthy))
	}
	for _, w := range trialStorm {
		limit = clampLimit(g.Update(limit, w))
	}
	return g, limit
}

// A timeout storm that ends (bench/real's HTTP trial, a 2 s latency toxic
// removed) left Gradient's experiment measuring for 31 s at limit 1. The
// cut came from the storm's last window, so the throughput before the
// cut, against which the experiment measures, was 2 calls/s, and telling
// a fall of f/2 from it needs 16/f² = 64 calls expected: 31 s at that
// rate, though the healed downstream answered 300 calls/s from the first
// window. Measured on that trial (full form, quiet machine), in the 300 ms
// toxic that followed: floodgate 33 successes within the deadline, limit
// 1 throughout, before; 577 and 651 after. The experiment now also ends
// once its count reaches twice what its whole measurement expects, which
// its end would call no fall.
func TestGradientExperimentEndsWhenHealed(t *testing.T) {
	// The experiment waits one RTT (1.5 s) for the cut to take effect, then
	// measures two windows; before this fix: 22.25 s here (31 s in the
	// trial).
	const within = 2500 * time.Millisecond // of healed windows
	g, limit := replayStorm(t)
	if limit != 1 || !g.probing {
		t.Fatalf("limit %d after the storm, experiment %v; want 1 and one running (this test replays a cut to the floor)", limit, g.probing)
	}
	var healed time.Duration
	for g.probing && healed < 60*time.Second {
		w := trialHealthy
		w.MaxInFlight = limit
		limit = clampLimit(g.Update(limit, w))
		healed += w.Duration
	}
	t.Logf("the experiment ended after %v of healed windows, limit %d", healed, limit)
	if healed > within {
		t.Errorf("the experiment ended after %v of healed windows; want ≤ %v", healed, within)
	}
}

// TestGradientStormHealSlowdown replays bench/real's HTTP trial (full
// form) in simulation, at 300 calls/s: 1 ms; then a 2 s latency for 10 s,
// so that every attempt times out (2 s) but those still running at the
// heal, which succeed then (an RTT of up to 2 s, as toxiproxy answers
// them); then 5 s at 1 ms, of which the first 2 s reach no limiter (the
// breaker opened at the heal); then 10 s at 300 ms, which every call
// survives. The flushed successes, alone in the window that closed after
// the breaker, read as a queue and cut the limit. The experiment that
// followed counted the healed downstream's 300 calls/s against the storm's
// 2, and its early end kept the cut and an ssthresh of 1–2: the 300 ms
// phase then grew the limit by one per RTT (the real trial: 514 successes
// of 3,002, net/http 1,249). The early end now undoes the cut.
//
//	the 10 s at 300 ms        shed    limit
//	the cut kept (before)     79.8%   1–68
//	the cut undone            38.6%   2–92
//
// The rest is the experiment at the onset (1.2 s at a limit of 9) and the
// growth by 1/8 per RTT above ssthresh (20, set by the storm's first
// timeouts) to the 90 calls in flight that 300 calls/s need at 300 ms.
func TestGradientStormHealSlowdown(t *testing.T) {
	const ms = time.Millisecond
	const heal = 15 * time.Second
	storm := func(at time.Duration, _ *rand.Rand) (time.Duration, Outcome) {
		switch {
		case at < 5*time.Second:
			return ms, Success
		case at+2*time.Second <= heal:
			return 2 * time.Second, Drop
		}
		return heal - at, Success // answered at the heal
	}
	after := func(at time.Duration, _ *rand.Rand) (time.Duration, Outcome) {
		if at < 3*time.Second {
			return ms, Success
		}
		return 300 * ms, Success
	}
	synctest.Test(t, func(t *testing.T) {
		l, _ := newGradientLimiter(t, Config{})
		advRun(l, 300, heal, 0, storm) // returns at the heal: every call has ended by then
		time.Sleep(2 * time.Second)    // the breaker's 2 s: no call reaches the limiter
		s := summarize(advRun(l, 300, 13*time.Second, 0, after), 3*time.Second)
		share := float64(s.shed) / float64(s.all)
		t.Logf("10 s at 300 ms after the heal: %d of %d shed (%.1f%%), limit %d–%d", s.shed, s.all, 100*share, s.minLim, s.maxLim)
		if share > 0.5 {
			t.Errorf("%.1f%% of the calls shed in the 10 s at 300 ms after the heal; want ≤ 50%%", 100*share)
		}
	})
}

// TestGradientHealBurstNotAReference replays the real HTTP trial's heal of
// its 2 s toxic (stop 33, window by window): the window after the
// timeouts held 115 successes in 252 ms, the calls the toxic had held,
// and its mean RTT of 320 ms cut the limit 20 → 10. Its throughput, 454
// calls/s, is no rate that a limit of 20 sustains (63 calls/s at that
// RTT), and as the experiment's reference it made the healed downstream's
// 300 calls/s read as a fall, so the cut stood, with ssthresh 10, and the
// 300 ms toxic that followed got 86 successes against 198. The window
// drains a backlog (Little's law counts 145 calls in flight against a
// peak of 39), so the reference is the 2 RTTs before the cut (96
// calls/s): the experiment ends early on the healed throughput and
// restores 20.
//
//	after the window                         12 (the cut)  16
//	limit, the cut window as the reference        10       10
//	limit, the 2 RTTs as the reference            10       20
func TestGradientHealBurstNotAReference(t *testing.T) {
	const ms = time.Millisecond
	windows := append(repeat(10, traced(251*ms, 76, 0, 0.1, 0.1, 1)),
		traced(2234*ms, 70, 0, 28.7, 239.1, 40),   // the toxic's start; Acquire had raised the limit to 40
		traced(1012*ms, 7, 33, 1844.9, 412.2, 40), // timeouts: 40 → 20
		traced(253*ms, 115, 0, 320.1, 449.1, 39),  // the heal: queued, 20 → 10
		traced(254*ms, 76, 0, 0.1, 0.1, 1), traced(250*ms, 75, 0, 0.1, 0.1, 1), traced(253*ms, 76, 0, 0.1, 0.1, 1),
		traced(250*ms, 75, 0, 0.1, 0.1, 1))
	seq, _ := replay(t, 20, 10, 40, windows)
	if seq[12] != 10 || seq[len(seq)-1] != 20 {
		t.Errorf("limits %v; want the heal's cut to 10 (window 12) restored to 20 by the end", seq)
	}
}

// TestGradientHeldStallHeal: the same heal without timeouts (a review of
// stop 33's first version, which set the reference aside only while a
// timeout episode was open). A 1 ms downstream with no capacity limit,
// 300 calls/s, whose server stalls for 1 s and answers every call it
// holds when the stall ends. The stall's window took 1,118 ms for 35
// successes; the next held the 103 calls released at once (256 ms, mean
// RTT 350 ms: 141 in flight by Little's law, against a peak of 39) and
// cut 40 → 19. Its 402 calls/s as the reference made the healed 300
// calls/s read as a queue of ours: the cut stood with ssthresh 20, and a
// 400 ms slowdown 10 s later (120 calls in flight needed) grew from there
// by ⅛ per RTT:
//
//	seed                                         1      3      4
//	shed from the slowdown, the cut window       59.4%  60.4%  60.1%
//	shed, the 2 RTTs (before stop 33)            12.7%  11.4%  11.9%
//	shed, now                                    15.2%  11.4%  14.6%
func TestGradientHeldStallHeal(t *testing.T) {
	const ms = time.Millisecond
	windows := append(repeat(10, traced(250*ms, 75, 0, 1.0, 0.3, 3)),
		traced(1118*ms, 35, 0, 29.3, 167.5, 40),  // the stall; Acquire had raised the limit to 40
		traced(256*ms, 103, 0, 350.1, 449.8, 39), // the stall's calls answered at once: queued, 40 → 19
		traced(250*ms, 73, 0, 1.1, 0.4, 3), traced(250*ms, 75, 0, 1.0, 0.3, 3), traced(250*ms, 81, 0, 1.0, 0.3, 3),
		traced(250*ms, 77, 0, 1.0, 0.3, 3), traced(258*ms, 67, 0, 1.0, 0.3, 3), traced(250*ms, 85, 0, 1.1, 0.3, 4))
	seq, g := replay(t, 20, 10, 40, windows)
	if seq[11] != 19 || seq[len(seq)-1] != 40 || g.ssthresh != 0 {
		t.Errorf("limits %v, ssthresh %v; want the heal's cut to 19 (window 11) restored to 40, with no ssthresh, by the end", seq, g.ssthresh)
	}
	// End to end, the slowdown that follows.
	const s = time.Second
	for _, seed := range []uint64{1, 3, 4} {
		t.Run(fmt.Sprintf("then a slowdown, seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, _ := newGradientLimiter(t, Config{})
				const from, stall = 10 * s, s
				var next time.Duration // the stall's answers, 1 µs apart
				fast, slow := lognormal(ms, 2*ms), lognormal(400*ms, 800*ms)
				arr := advRun(l, 300, 30*s, seed, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
					d := fast(rng)
					if at >= 20*s {
						d = slow(rng)
					}
					if at+d >= from && at+d < from+stall {
						next += time.Microsecond
						return from + stall - at + next, Success
					}
					return d, Success
				})
				sum := summarize(arr, 20*s)
				share := float64(sum.shed) / float64(sum.all)
				t.Logf("from 20 s: %d of %d shed (%.1f%%), limit %d..%d", sum.shed, sum.all, 100*share, sum.minLim, sum.maxLim)
				if share > 0.3 {
					t.Errorf("%.1f%% of the slowdown's calls shed after a healed stall; want ≤ 30%%", 100*share)
				}
			})
		})
	}
}

// TestGradientHealStragglersDoNotCut (a known gap): the real HTTP trial's
// heal of its 2 s toxic as stop 40 traced it (7 full runs). The timeouts
// had cut the limit to 5, and 0.25 s after the heal a window held the
// fault's last 5 calls, answered at the heal after 1.5 s. Read as a
// queue, it cuts 5 → 2, and the experiment held 2 with a Ceiling of 0
// for 2 s (one RTT of 1.5 s before it measures): a burst of 3 calls at
// the healed 0.2 ms downstream is refused: 1–7 calls shed while healthy
// in 6 of 14 full runs of stops 40–41. Since stop 42 the experiment ends
// on the first window after the cut (TestGradientHealStragglersShortHold):
// the cut still comes, and still sheds a burst in that window (1–2 calls
// in 2 of 15 full runs).
//
// Stop 41 tried a rule that fixes it and did not keep it: a window whose
// successes account for more than twice its peak in flight by Little's
// law (here 30 against 5) drains a backlog and neither cuts nor grows.
// In alternated full runs it took the HTTP runs with healthy calls shed
// from 2 of 5 to 0 of 5, and moved no scenario of the suite; but a queue
// of ours answered in batches (TestGradientBatchQueueNotADrain) drains a
// backlog at every batch, and the rule let that queue build into
// timeouts. Ending the experiment on the next window (under the
// threshold for sure, the cut limit less than half used) undid the cut
// after one window, but a queue of ours that a cut drains reads the same:
// TestGradientFleetSharesQueue failed 4 rows (docs/benchmarks.md, stop
// 41's rows).
//
//	the straggler window      limit after it    Ceiling after the next window
//	now                       2                 0 (the experiment)
//	the rule tried            5                 5 or more
func TestGradientHealStragglersDoNotCut(t *testing.T) {
	const ms = time.Millisecond
	windows := append(repeat(20, traced(250*ms, 76, 0, 0.17, 0.05, 1)),
		traced(2000*ms, 2, 18, 1995, 5, 20), // the toxic: timeouts, 20 → 10
		traced(2000*ms, 1, 9, 1998, 0, 10),  // 10 → 5
		traced(250*ms, 5, 0, 1500, 300, 5),  // the heal's stragglers
		traced(250*ms, 76, 0, 0.17, 0.05, 2))
	seq, g := replay(t, 20, -1, 0, windows)
	strag := len(windows) - 2
	if seq[strag-1] != 5 {
		t.Fatalf("limits %v; want 5 before the stragglers (this test replays the timeouts' cuts to 5)", seq)
	}
	check(t, seq[strag] < 5 || g.probing || g.Ceiling() < 5,
		"limits %v, experiment %v, Ceiling %d; want no cut on the stragglers, no experiment, a Ceiling of 5 or more", seq, g.probing, g.Ceiling())
}

// TestGradientHealStragglersShortHold: the heal of the real HTTP trial's
// 2 s toxic (TestGradientHealStragglersDoNotCut, a known gap) cuts the
// limit 5 → 2 on the window of the fault's last 5 calls, and the
// experiment waited one RTT of that window (1.5 s) before it measured,
// holding 2 with a Ceiling of 0 while the healed downstream answered in
// 0.2 ms: bursts of 3 calls were refused. A Limiter's window says when
// every call that was in flight at the cut is back (CutDrained); such a
// window under the threshold for sure starts the measurement at its
// close, and alone ends the experiment when it holds at least twice the
// reference's count, plus 4σ and 8 calls, with the cut limit less than
// half used. Windows of 250 ms at the limit of 2, from the cut until it
// is back at 5:
//
//	CutDrained                          windows    at 2 for
//	false (a Window made by hand)       7          1.75 s
//	  the same, before stop 42          8          2.0 s
//	true                                1          0.25 s
func TestGradientHealStragglersShortHold(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		drained bool
		want    int // windows at 2, at most
	}{{false, 7}, {true, 1}} {
		healed := traced(250*ms, 76, 0, 0.17, 0.05, 2)
		healed.CutDrained = c.drained
		windows := append(repeat(20, traced(250*ms, 76, 0, 0.17, 0.05, 1)),
			traced(2000*ms, 2, 18, 1995, 5, 20), // the toxic: timeouts, 20 → 10
			traced(2000*ms, 1, 9, 1998, 0, 10),  // 10 → 5
			traced(250*ms, 5, 0, 1500, 300, 5))  // the heal's stragglers: 5 → 2
		windows = append(windows, repeat(12, healed)...)
		seq, _ := replay(t, 20, -1, 0, windows)
		strag := 22
		if seq[strag-1] != 5 || seq[strag] != 2 {
			t.Fatalf("CutDrained %v: limits %v; want 5 before the stragglers and 2 after them", c.drained, seq)
		}
		held := 0
		for _, l := range seq[strag:] {
			if l >= 5 {
				break
			}
			held++
		}
		t.Logf("CutDrained %v: %d windows at 2 from the cut (limits %v)", c.drained, held, seq[strag:])
		if held > c.want {
			t.Errorf("CutDrained %v: the limit stayed at 2 for %d windows of 250 ms after the heal; want ≤ %d", c.drained, held, c.want)
		}
	}
}
