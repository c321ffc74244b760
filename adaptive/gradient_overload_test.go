package adaptive

import (
	"fmt"
	"sort"
	"testing"
	"testing/synctest"
	"time"
)

// TestGradientSlowdownUnderOverload: a downstream of 40 workers under 1.6×
// its capacity whose service time then grows tenfold or twentyfold, every
// call succeeding (no timeouts). The queue is ours, so the limit must stay
// near the workers through the RTT's rise: a verdict of new normal (the
// cut below the workers takes throughput away) must not let the limit run
// into the queue. A review found that forgetting ssthresh at such a verdict
// (docs/benchmarks.md, "What was tried before") ran the limit to 227–566
// and RTT p99 to 2.7–7.2 s in the 30 s after the change; this guards any
// faster regrowth against it. The bar is today's behaviour with a margin
// (p99 ≤ 2.16× measured, 2.5× asked). One slow-start overshoot to twice
// the workers costs about 2.8× by itself (112 in flight at 80 calls/s:
// 1.4 s), so a regrowth that doubles per RTT must also end slow start
// before it overshoots, or restate this bar with its reason.
//
//	measured (seeds 1, 2, 3), the 30 s after the change: the highest limit;
//	RTT p99 / the mean service time
//	  50 → 500 ms:   80, 89, 77;  2.08, 2.16, 2.04
//	  50 → 1,000 ms: 63, 79, 71;  1.86, 2.14, 1.96
func TestGradientSlowdownUnderOverload(t *testing.T) {
	const ms = time.Millisecond
	const n = 40 // workers
	for _, slow := range []time.Duration{500 * ms, 1000 * ms} {
		stages := []fifoStage{
			{10 * time.Second, 400, n, 50 * ms, 1.5, 0},
			{20 * time.Second, 1260, n, 50 * ms, 1.5, 0}, // 1.6 × 40 workers / 50.8 ms
			{30 * time.Second, 1260, n, slow, 1.5, 0},
		}
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("50ms→%v/seed=%d", slow, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					l, _ := newGradientLimiter(t, Config{})
					calls := runFIFO([]*Limiter{l}, stages, seed)
					change := stages[0].dur + stages[1].dur
					hi := 0
					var rtts []time.Duration
					for _, c := range calls {
						if c.at <= change {
							continue
						}
						hi = max(hi, c.limit)
						if !c.shed {
							rtts = append(rtts, c.rtt)
						}
					}
					sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
					mean := stages[2].mean()
					p99 := rtts[len(rtts)*99/100]
					ratio := float64(p99) / float64(mean)
					t.Logf("30 s after the change: highest limit %d; RTT p99 %v = %.2f × the mean service %v", hi, p99.Round(ms), ratio, mean.Round(ms))
					if hi > 3*n || ratio > 2.5 {
						t.Errorf("highest limit %d, RTT p99 %.2f × the mean service time; want ≤ 3 × the %d workers and ≤ 2.5×", hi, ratio, n)
					}
				})
			})
		}
	}
}
