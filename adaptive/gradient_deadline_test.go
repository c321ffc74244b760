package adaptive

import (
	"testing"
	"testing/synctest"
	"time"
)

// fifoShare runs one limiter through stages on a FIFO downstream (runFIFO)
// for each seed and returns the successes from `from` to `to` as a share
// of capacity (calls/s), averaged over the seeds; each seed's share, its
// timeouts and limit range are logged.
func fifoShare(t *testing.T, stages []fifoStage, seeds uint64, from, to time.Duration, capacity float64) float64 {
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
			share := float64(ok) / (to - from).Seconds() / capacity
			sum += share
			t.Logf("seed %d: successes %.1f%% of capacity, %d timeouts, limit %d..%d", seed, 100*share, timeouts, lo, hi)
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
//	now                                                   5.0, 0.0, 0.0, 0.0 (mean 1.3)
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
// it before. The verdict reads the RTT as the downstream's, and the limit
// goes back to 5 and, at once, to the timeouts' ssthresh of 40.
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
