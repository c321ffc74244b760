package adaptive

import (
	"testing"
	"testing/synctest"
	"time"
)

// precursorStorm is a review's shape of stop 37: 300 calls/s at 50
// workers (100 ms), 1 s of a slower phase (400 ms, a queue of ours), then
// service of 2 s that every attempt's 1 s timeout cuts short, for storm,
// then 100 ms again. The slower phase before the storm is the usual onset
// (a ramp, a downstream that degrades before it stalls): its queued cut
// starts an experiment that the storm finds running.
func precursorStorm(storm time.Duration) []fifoStage {
	const s, ms = time.Second, time.Millisecond
	return []fifoStage{
		{30 * s, 300, 50, 100 * ms, 2, s},
		{s, 300, 50, 400 * ms, 2, s},
		{storm, 300, 50, 2 * s, 2, s},
		{20 * s, 300, 50, 100 * ms, 2, s},
	}
}

// Issue 12's rule 6 after a precursorStorm of 3 s: back to full
// throughput within 1 s of the heal at 300 calls/s. The experiment is
// still open at the heal, and its early end (twice the expected count,
// the cut limit less than half used) restores the limit from before the
// cut. Stop 37 committed, and reverted in the same stop, a version whose
// timeouts waited for the experiment's verdict
// (TestGradientTimeoutsDuringExperiment): the verdict then came in the
// middle of the storm, and a "not ours" put the limit back to 160 with the
// storm's RTT as the base, or an "ours" left ssthresh at half a cut limit.
//
//	runFIFO, seeds 1–20: seeds that admit ≥ 95% of the calls in every
//	second from 1 s to 5 s after the heal
//	now                                          13 (seeds 3, 4, 7, 10, 11, 16, 20 miss)
//	timeouts waiting for the verdict (reverted)   0
func TestGradientPrecursorStormHeal(t *testing.T) {
	const s = time.Second
	healed := 0
	for seed := uint64(1); seed <= 20; seed++ {
		synctest.Test(t, func(t *testing.T) {
			l, _ := newGradientLimiter(t, Config{})
			heal := 31*s + 3*s
			var in, all [4]int
			for _, c := range runFIFO([]*Limiter{l}, precursorStorm(3*s), seed) {
				if i := int((c.at - heal - s) / s); c.at >= heal+s && i < len(all) {
					all[i]++
					if !c.shed {
						in[i]++
					}
				}
			}
			ok := true
			for i := range all {
				ok = ok && in[i] >= all[i]*95/100
			}
			if ok {
				healed++
			} else {
				t.Logf("seed %d: admitted per second from 1 s after the heal %v of %v", seed, in, all)
			}
		})
	}
	if healed < 10 {
		t.Errorf("%d of seeds 1–20 back to full throughput within 1 s of the heal; want ≥ 10", healed)
	}
}

// Issue 12's rule 2 through a precursorStorm of 60 s: the limit stays low
// for as long as the storm lasts. On 4 of seeds 1–20 a window with one
// success (a service time under the 1 s timeout, on a log-normal of median
// 2 s) ends the experiment that the slower phase began: its throughput is
// far under the reference, so the verdict is "not ours", the base becomes
// that success's RTT and every cut since the RTT rose is undone, the
// timeouts' included. On seed 13, 38 s into the storm, the limit went
// 1 → 160, and 317 calls timed out before the timeouts' cuts had it back
// at 1, 8.6 s later. Undoing only the queued cut (bbb732f, reverted at
// stop 35) holds the limit on all 20, but it breaks rule 6 here
// (TestGradientPrecursorStormHeal: 3 of 20) and kept the cuts of a
// downstream's own tail of timeouts (TestGradientTailTimeoutsUndoEveryCut).
// KNOWN GAP (stop 37).
//
//	runFIFO, seeds 1–20                          limit ≤ 50 (the workers) from    back to full throughput within
//	                                             3 s after the onset to the heal  1 s of a 3 s storm's heal
//	now                                          16 (seeds 9, 13, 15, 19: up      13
//	                                             to 80, 160, 160, 80)
//	timeouts waiting for the verdict (reverted)  13                               0
//	only the queued cut undone (bbb732f)         20                               3
func TestGradientPrecursorStormHeldLow(t *testing.T) {
	const s = time.Second
	held := 0
	for seed := uint64(1); seed <= 20; seed++ {
		synctest.Test(t, func(t *testing.T) {
			l, _ := newGradientLimiter(t, Config{})
			onset := 31 * s
			hi := 0
			for _, c := range runFIFO([]*Limiter{l}, precursorStorm(60*s), seed) {
				if c.at >= onset+3*s && c.at < onset+60*s {
					hi = max(hi, c.limit)
				}
			}
			if hi <= 50 {
				held++
			} else {
				t.Logf("seed %d: limit up to %d from 3 s after the onset", seed, hi)
			}
		})
	}
	check(t, held < 20, "%d of seeds 1–20 with the limit ≤ 50 from 3 s after the onset to the heal; want 20", held)
}
