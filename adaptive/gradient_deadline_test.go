package adaptive

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// fifoShare runs one limiter through stages on a FIFO downstream (runFIFO)
// for each seed and returns the successes from `from` to `to` as a share
// of rate (calls/s: the capacity, or the offered rate of a downstream
// with none), averaged over the seeds; each seed's share, its timeouts
// and limit range are logged.
func fifoShare(t *testing.T, stages []fifoStage, seeds uint64, from, to time.Duration, rate float64) float64 {
	t.Helper()
	var sum float64
	for seed := uint64(1); seed <= seeds; seed++ {
		synctest.Test(t, func(t *testing.T) {
			l, _ := newGradientLimiter(t, Config{})
			ok, timeouts, lo, hi := 0, 0, DefaultMaxLimit, 0
			for _, c := range runFIFO([]*Limiter{l}, stages, seed) {
				if c.at < from || c.at >= to {
					continue
				}
				lo, hi = min(lo, c.limit), max(hi, c.limit)
				switch {
				case c.timedOut:
					timeouts++
				case !c.shed:
					ok++
				}
			}
			share := float64(ok) / (to - from).Seconds() / rate
			sum += share
			t.Logf("seed %d: successes %.1f%% of %.1f calls/s, %d timeouts, limit %d..%d", seed, 100*share, rate, timeouts, lo, hi)
		})
	}
	return sum / float64(seeds)
}

// The rule 2 (timeouts argue for fewer slots) without a cascade: bench's S11 on a FIFO downstream. 100 calls/s
// against 50 workers whose service goes from 100 ms to 2 s (p99 2.6 s,
// capacity 24.8 calls/s) at 30 s, with a 3 s attempt timeout that a 2 s
// answer meets. The tolerance cannot see a queue that stays under 1.5 ×
// the base, so the limit grows past the workers until queued calls time
// out, and the timeouts cut it. The calls admitted before a cut keep
// timing out for up to the 3 s timeout, past the RTT of 2 s that paces
// the cuts, and a healthy window between two such cuts ends the timeout
// episode, so each cut starts a new one and sets ssthresh to half the
// limit again (limits 90 → 55, 62 → 31, 35 → 18) and the limit regrows by
// max(1, limit/8) per RTT while the workers idle. KNOWN GAP.
//
//	successes from 60 s to 120 s, % of capacity (seeds 1, 2, 3, 4)
//	now                                           84.7, 82.3, 79.7, 84.7 (mean 82.9)
//	tried at stop 29: the episode ends one RTT    91.4, 87.9, 90.3, 87.0 (mean 89.2)
//	after the last cut (docs/benchmarks.md)
func TestGradientPatientDeadlineNoCascade(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	stages := []fifoStage{
		{30 * s, 100, 50, 100 * ms, 2, 3 * s},
		{90 * s, 100, 50, 2 * s, 1.3, 3 * s},
	}
	mean := fifoShare(t, stages, 4, 60*s, 120*s, 50/stages[1].mean().Seconds())
	check(t, mean < 0.86, "successes %.1f%% of capacity on average over seeds 1–4; want ≥ 86%%", 100*mean)
}

// The rule 2 when the capacity falls in steps at a long RTT: 400 → 100 → 25 →
// 6 workers, 20 s apart, service 2 s (p99 2.4 s), attempt timeout 3 s,
// offered half the 400 workers' capacity (99.7 calls/s). Between windows,
// Acquire goes back to ssthresh at once after a healthy window; ssthresh,
// half the limit at the first timeout of an episode, was set at a higher
// capacity, so each jump queues far more calls than 6 workers serve in
// 3 s, and they time out while the workers still serve them. KNOWN GAP
// (a review's shape at stop 29).
//
//	successes 20–60 s after the fall to 6 workers, % of capacity (seeds 1–4)
//	now                                                   11.7, 0.0, 8.4, 0.0 (mean 5.0)
//	no timeout cut during an experiment (stop 37, reverted) 20.9, 76.9, 0.0, 79.4 (mean 44.3)
//	tried at stop 29: Acquire doubling toward ssthresh instead of jumping
//	to it took a review's harness of this shape from 6.4% to 61.1% (20
//	seeds), but after a heal shed 20 calls past 1.5 s
//	(TestSustainedSlowdownThenRecovery); one doubling at once and then
//	growth clocked by the calls come back: 61.0, 85.3, 62.7, 91.9 here,
//	but a capacity come back at RTTs of 1–2 s was regained slower
//	(docs/benchmarks.md)
func TestGradientStepwiseCapacityLoss(t *testing.T) {
	const s = time.Second
	stage := func(dur time.Duration, workers int) fifoStage {
		return fifoStage{dur, 0, workers, 2 * s, 1.2, 3 * s}
	}
	stages := []fifoStage{stage(40*s, 400), stage(20*s, 100), stage(20*s, 25), stage(60*s, 6)}
	for i := range stages {
		stages[i].rate = 0.5 * 400 / stages[0].mean().Seconds()
	}
	capacity := 6 / stages[3].mean().Seconds()
	mean := fifoShare(t, stages, 4, 100*s, 140*s, capacity)
	check(t, mean < 0.5, "successes %.1f%% of the 6 workers' capacity on average over seeds 1–4; want ≥ 50%%", 100*mean)
}

// A slowdown whose first seconds time out (a review of stop 34), as
// bench/sim's floodgate saw it, window by window: 300 calls/s at 40
// workers, 50 ms; then 2.1 s for 2 s, past the 1 s attempt timeout; then
// 500 ms (p99 1.5×: 80 calls/s of capacity). The timeouts cut the limit
// 80 → 5, and the first queued cut (5 → 2) measured its experiment
// against the successes of the 2 RTTs before it, 4.9 calls/s, since
// nearly every call in them had timed out. The count at a limit of 2 (4
// calls/s) never fell short of so small a reference, so the cut stood,
// the base stayed at 50 ms, every 500 ms window read as queued, and the
// cuts chained 2 → 1 at a downstream that served 80 calls/s. The
// reference now counts the calls that ended, timeouts too (59.4 calls/s):
// a queue of ours that a cut shortens answers the calls that timed out in
// it before. The verdict reads the RTT as the downstream's, the limit
// goes back to 5, and in bench/sim it was at the timeouts' ssthresh of 40
// one second later (30.1 → 31.1 s).
//
//	bench/sim, 25 s from the onset: calls/s within the 1 s SLO (seeds 1, 2, 3)
//	successes only in the reference     2.6, 45.9, 3.0
//	timeouts counted too                58.8, 60.7, 57.3   (the oracle's 67.5–69.8)
func TestGradientTimeoutsInReference(t *testing.T) {
	const ms = time.Millisecond
	windows := append(repeat(10, traced(253*ms, 80, 0, 55, 28, 25)),
		traced(965*ms, 1, 9, 97.0, 0, 80), // Acquire had raised the limit to 80; timeouts: 80 → 40
		traced(956*ms, 0, 72, 0, 0, 78),   // 40 → 20
		traced(250*ms, 0, 26, 0, 0, 39),   // 20 → 10
		traced(544*ms, 1, 13, 544.4, 0, 18),
		traced(288*ms, 9, 0, 678.7, 76.2, 9), // queued: 5 → 2
		traced(386*ms, 2, 0, 438.1, 4.2, 4), traced(569*ms, 3, 0, 542.3, 112.6, 2),
		traced(578*ms, 2, 0, 546.7, 24.6, 2), traced(476*ms, 2, 0, 522.8, 124.1, 2))
	windows = append(windows, repeat(12, traced(500*ms, 2, 0, 520, 60, 2))...)
	seq, g := replay(t, 40, 10, 80, windows)
	if seq[14] != 2 || seq[len(seq)-1] < 5 || g.Baseline() < 400*ms {
		t.Errorf("limits %v, base %v; want the cut to 2 (window 14) undone, the base the slowdown's RTT", seq, g.Baseline())
	}
}

// Timeouts during an experiment (a review shape of stop 35, bench/sim
// "A0"): 300 calls/s at 40 workers whose service goes from 50 ms to
// 500 ms (p99 1.2×: 80 calls/s of capacity) under a 1 s attempt timeout,
// with no storm before. Slow start doubles the limit past the workers
// (80 → 160), the queue of ours reads as queued and is cut (160 → 59 on
// bench/sim's seed 1), and the calls already queued behind the 40
// workers time out during the experiment, halving the limit once per RTT
// (59 → 29). At 29 the downstream serves fewer calls per second than the
// reference from before the cut, so the count fell with the limit, and
// the verdict reads the RTT as not ours. Until stop 39 the undo went back
// to 160 (runFIFO seed 1: 80, cut at 44 in flight), where the queue timed
// out again, slowdown-long; since then, when timeouts came during the
// experiment and not before it, it goes back no higher than the mean in
// flight before the cut (seed 1: 45; the conditions:
// TestGradientUndoAfterTimeoutsToInFlight).
//
//	runFIFO, successes from 30 s to 55 s, % of capacity         seeds 1–4                 mean
//	now: at most n̄ after our own queue's timeouts (stop 39)    96.2, 84.5, 91.6, 86.8    89.8
//	until stop 39: every cut undone to the limit before         42.2, 39.8, 91.6, 86.8    65.1
//	tried at stop 35, reverted: only the queued cut undone
//	  when timeouts came during the experiment (bbb732f)        93.7, 97.7, 91.6, 99.2    95.6
//	  ... and the RTT fell since the cut (664bc38)              87.4, 86.2, 91.6, 93.6    89.7
//	tried at stops 36–37, reverted: no timeout cut during it    95.2, 89.2, 101.3, 96.8   95.6
//	  ... only of calls admitted before its cut (stop 37)       23.3, 75.1, 101.3, 86.6   71.6
//	bench/sim A0, calls/s within the 1 s SLO (seeds 1–3): 35.5, 30.7, 68.1; 69.3, 71.3, 66.5; 69.3, 69.2, 68.1 (the oracle 79.5)
//
// Both versions failed the tests below: the first kept the cuts of the
// downstream's own tail of timeouts (TestGradientTailTimeoutsUndoEveryCut),
// the second those of slow spells whose end reads as a fall of the RTT
// (TestGradientPeriodicSpellsUndoEveryCut). The third (committed as 19f1f28
// at stop 37, reverted before that stop ended) broke issue 12's rules 2
// and 6 where the slowdown that times out comes after a slower phase or
// a ramp, the usual onset: the verdict came in the middle of the storm,
// and a "not ours" put the limit back to 160 with the base at the
// storm's RTT (TestGradientPrecursorStormHeal has the numbers). Counting
// only the timeouts of calls admitted before the cut (RFC 6582's recovery
// point) does not help here: the workers go on serving the calls that
// timed out, so the calls admitted after the cut time out behind them.
func TestGradientTimeoutsDuringExperiment(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	stages := []fifoStage{
		{25 * s, 300, 40, 50 * ms, 3, s},
		{30 * s, 300, 40, 500 * ms, 1.2, s},
	}
	mean := fifoShare(t, stages, 4, 30*s, 55*s, 40/stages[1].mean().Seconds())
	check(t, mean < 0.85, "successes %.1f%% of capacity on average over seeds 1–4; want ≥ 85%%", 100*mean)
}

// The other side of TestGradientTimeoutsDuringExperiment (a review of
// stop 35): a downstream with no capacity limit (2,000 workers) whose
// service goes from 100 ms to 500 ms with 10% of calls past the 1 s
// attempt timeout, at 100 calls/s. The timeouts during the experiment are
// the downstream's tail, not a queue of ours. Undoing only the queued cut
// whenever timeouts came (bbb732f, reverted) kept the timeouts' cuts, and
// the tail's timeouts, a share that cutting does not change, then held
// the limit near 1: bench/sim shapes of this family lost 20–75% of their
// goodput (a 20% tail at 100 calls/s: 17.6 → 4.4 calls/s on seeds 1–5,
// the oracle 80). Seeds 1–5 alone were a lottery (51.1% where seeds
// 1–20 give 43.8%); the test runs 1–20 (stop 37).
//
//	runFIFO, successes from 25 s to 80 s, % of offered        10% tail:          20% tail:
//	                                                          seeds 1–5   1–20   seeds 1–20
//	every cut undone (until stop 39)                          51.1        43.8   15.4
//	... to at most n̄ after our own queue's timeouts (now)     51.1        44.0
//	the queued cut only, whenever timeouts came (bbb732f)     31.8        33.2    6.0
//	no timeout cut during the experiment (stops 36–37)        42.1        43.1    9.9
func TestGradientTailTimeoutsUndoEveryCut(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	// A log-normal whose share 0.1 lies above twice its median: σ =
	// ln 2 / 1.2816, p99 / median = exp(2.326 σ).
	spread := math.Exp(2.326 * math.Ln2 / 1.2816)
	stages := []fifoStage{
		{20 * s, 100, 2000, 100 * ms, 2, s},
		{60 * s, 100, 2000, 500 * ms, spread, s},
	}
	mean := fifoShare(t, stages, 20, 25*s, 80*s, 100)
	if mean < 0.40 {
		t.Errorf("successes %.1f%% of the offered 100 calls/s on average over seeds 1–20; want ≥ 40%%", 100*mean)
	}
}

// The other side again (a second review of stop 35): slow spells that are
// not ours come and go, every 4 s: 2 s at 900 ms (p99 2×, a third of the
// calls past the 1 s attempt timeout), 2 s at 300 ms, on 2,000 workers at
// 400 calls/s. Each spell makes a queued cut, its timeouts cut again during
// the experiment, and its end drops the RTT to 300 ms, which read as a
// queue of ours emptied: undoing only the queued cut when the RTT fell
// (664bc38, reverted) compounded spell after spell (in bench/sim the
// limit's peaks went 160 → 64 → 42 → 30 → 34 → 2 → 1; 105.8 → 17.8 calls/s
// on seeds 1–10, the oracle 326). Every cut undone, bench/sim's limit went
// back to 160–202 after every spell (runFIFO: peaks of 202–256).
//
//	runFIFO, successes from 20 s to 80 s, % of offered (seeds 1–5)      mean
//	every cut undone (now)                          28.1, 29.5, 22.3, 29.0, 28.1    27.4
//	the queued cut only, when the RTT fell          10.9, 6.9, 4.8, 5.7, 4.9         6.7
//	no timeout cut during the experiment (reverted) 50.7, 48.8, 49.5, 47.5, 51.8    49.7
//	the queued cut only, whenever timeouts came (bbb732f)                            3.7
func TestGradientPeriodicSpellsUndoEveryCut(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	stages := []fifoStage{{20 * s, 400, 2000, 100 * ms, 2, s}}
	for range 15 {
		stages = append(stages, fifoStage{2 * s, 400, 2000, 900 * ms, 2, s}, fifoStage{2 * s, 400, 2000, 300 * ms, 2, s})
	}
	mean := fifoShare(t, stages, 5, 20*s, 80*s, 400)
	if mean < 0.2 {
		t.Errorf("successes %.1f%% of the offered 400 calls/s on average over seeds 1–5; want ≥ 20%%", 100*mean)
	}
}

// The shape of TestGradientTimeoutsInReference on the FIFO downstream
// (runFIFO), where the workers go on serving the calls that timed out:
// on seed 1 the calls queued in the 2 s at 2.1 s time out until 34 s,
// cutting the limit once per RTT to 1 by 31 s, and the 500 ms that
// follows finds it there with the base at 50 ms. A window of two
// successes at 500 ms then reads as queued (2.3 calls in flight by
// Little's law) and cuts 2 → 1, and its experiment, against the 3–4
// calls/s that ended before the cut, needs 16/f² ≈ 50 calls to tell (on
// seed 1 it began at 36.9 s and was still measuring at 55 s). A window of one success is not queued (se = r), so
// the limit grows 1 → 2 between experiments, and stays at 1–2 at a
// downstream that serves 80 calls/s. KNOWN GAP (a review of stop 34).
//
//	successes from 30 s to 55 s, % of capacity (seeds 1, 2, 3, 4)
//	now (and before stop 34)                              2.1, 3.0, 15.6, 11.1
//	tried at stop 34: a queued window with fewer than two calls in flight
//	sets the base to its RTT (the cut it cannot make would say no queue of
//	ours): TestGradientFleetSharesQueue failed 3 of its 6 rows, as a rule
//	that reads a gate's small share as "not my queue" lets ten gates fill
//	one (issue 12's rule 3)
func TestGradientTimeoutStormFloor(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	stages := []fifoStage{
		{25 * s, 300, 40, 50 * ms, 3, s},
		{2 * s, 300, 40, 2100 * ms, 1.2, s},
		{28 * s, 300, 40, 500 * ms, 1.5, s},
	}
	mean := fifoShare(t, stages, 4, 30*s, 55*s, 40/stages[2].mean().Seconds())
	check(t, mean < 0.6, "successes %.1f%% of capacity on average over seeds 1–4; want ≥ 60%%", 100*mean)
}

// The cost of counting timeouts in the experiment's reference (a review
// of stop 34), as bench/sim's floodgate saw it, window by window: 200
// calls/s at 50 workers of 200 ms whose count falls to 10 (a 500 ms
// attempt timeout). The storm of timeouts cuts the limit 160 → 20, and
// the first queued cut (20 → 10) measures its experiment against the 2
// RTTs before it: 120 calls/s ended in them, nearly all timeouts of calls
// admitted at limits of 40–160, where the 10 workers serve 50. The 41
// calls/s at the cut limit fall short of that, the verdict reads the RTT
// as not ours, and the undo restores the limit of 20 and the storm's
// ssthresh of 80, to which Acquire then jumps: another storm. Counting
// only the successes, the reference was 13.9 calls/s and the cut stood.
// KNOWN GAP.
//
//	bench/sim, 25 s to 80 s after the loss (seeds 1–10)   calls/s within the SLO   timeouts
//	successes only in the reference                       44.4 (39.1–47.2)        486
//	timeouts counted too                                  41.1 (30.8–47.9)        1,167
//	the oracle (limit 10)                                 48.3–48.5               0
//
// Tried at stop 34 and reverted: no undo when timeouts came since the cut
// and the RTT is back under the threshold (45.7, 43.9–47.5, no timeouts
// here), but a review found it held merely slower downstreams at a limit
// of 1–2: windows of a few successes have a wide se, so r − 2se read as
// "back" (the demo at 700 ms, p99 2×: 29.1 → 3.0 calls/s); as
// r + 2se ≤ threshold on two successes or more, periodic slowdowns that
// heal during the experiment still lost 20–35% (docs/benchmarks.md).
func TestGradientStormReferenceAfterCapacityLoss(t *testing.T) {
	const ms = time.Millisecond
	windows := append(repeat(10, traced(254*ms, 50, 0, 200, 15, 45)),
		traced(383*ms, 18, 0, 298.0, 80.2, 111), // the loss; Acquire had raised the limit to 160
		traced(258*ms, 4, 55, 488.3, 11.3, 124), // timeouts: 160 → 80
		traced(256*ms, 0, 53, 0, 0, 122),
		traced(458*ms, 0, 70, 0, 0, 80),       // 80 → 40
		traced(262*ms, 2, 44, 495.9, 1.6, 79), // 40 → 20
		traced(383*ms, 1, 31, 418.5, 0, 39),
		traced(264*ms, 16, 0, 461.8, 25.0, 20), // queued: 20 → 10
		traced(255*ms, 10, 2, 388.8, 40.5, 19),
		traced(260*ms, 10, 0, 324.9, 89.3, 9),
		traced(293*ms, 12, 0, 202.6, 17.7, 8),
		traced(252*ms, 10, 0, 203.0, 13.0, 8))
	seq, g := replay(t, 80, 10, 160, windows)
	check(t, seq[len(seq)-1] > 10 || g.ssthresh > 10,
		"limits %v, ssthresh %v; want the queued cut to 10 (window 16) to stand, with ssthresh ≤ 10", seq, g.ssthresh)
}

// The rule behind TestGradientTimeoutsDuringExperiment, window by window:
// 300 calls/s at 100 ms under a limit of 50 (about 30 in flight, 40 at
// the peak), then a rise to 400 ms that is cut (to 20) and turns out not
// to be ours: the throughput falls with the limit. With timeouts during
// the experiment, the undo goes back to the 40 in flight before the cut,
// not to 50 (until stop 39, to 50). To the limit before the cut in every
// other case: no timeouts (a ramp of demand may need it:
// TestAdvBimodalRampKeepsGrowing); timeouts before the cut only, or
// before it and during it (a downstream's own tail: counting those, a
// review's repeated storms on a downstream with no capacity limit lost up
// to 17%); and a second verdict whose cut came at the limit the first one
// restored (n̄ then bounded by it: a ratchet down, verdict after verdict).
func TestGradientUndoAfterTimeoutsToInFlight(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name           string
		before, during int  // timeouts in a window before the rise, and in one of the experiment
		again          bool // then a second rise, cut and "not ours" with timeouts during it
		want           int  // the limit at the end; 0: the limit before the cut
	}{
		{"timeouts during the experiment", 0, 5, false, 40},
		{"no timeouts", 0, 0, false, 50},
		{"timeouts before the cut only", 5, 0, false, 0},
		{"timeouts before and during", 5, 5, false, 0},
		{"a second verdict at the restored limit", 0, 5, true, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGradient(GradientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			limit := 50
			update := func(w Window) { limit = clampLimit(g.Update(limit, w)) }
			// experiment cuts at a rise to r ms and measures windows of ok
			// successes until its verdict, with timeouts in its first one.
			experiment := func(r float64, ok, timeouts int) {
				t.Helper()
				update(traced(250*ms, 20, timeouts, r, 30, limit))
				for range 20 { // the throughput fell with the limit
					update(traced(250*ms, ok, 0, r, 30, limit))
					if !g.probing {
						return
					}
				}
				t.Fatalf("no verdict at %v ms", r)
			}
			for range 20 {
				update(traced(250*ms, 75, 0, 100, 30, 40))
			}
			if tc.before > 0 {
				update(traced(250*ms, 75, tc.before, 100, 30, 40))
			}
			want := tc.want
			if want == 0 {
				want = limit
			}
			update(traced(250*ms, 25, 0, 400, 30, 40)) // 40 in flight by Little's law, as at the peak
			if limit != 20 || !g.probing {
				t.Fatalf("limit %d, experiment %v after the queued window; want 20 and one running", limit, g.probing)
			}
			experiment(400, 12, tc.during)
			if tc.again {
				// 64 calls/s at 400 ms (25.6 in flight, 30 at the peak):
				// healthy at the new base, not binding; then 1.6 s.
				for range 10 {
					update(traced(250*ms, 16, 0, 400, 30, 30))
				}
				update(traced(250*ms, 4, 0, 1600, 30, 30)) // 25.6 in flight
				if !g.probing {
					t.Fatalf("limit %d after the second rise; want an experiment", limit)
				}
				experiment(1600, 3, 2)
			}
			if g.probing || limit != want {
				t.Errorf("limit %d, experiment %v, base %v; want the experiment over and %d", limit, g.probing, g.Baseline(), want)
			}
		})
	}
}
