package adaptive

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// TestGradientStallStaysNearPool: bench/real's Redis stalls in miniature,
// a known gap. A client pool of 50 connections in front of a server that
// answers only at the end of each 0.5 s stall (back to back), 300 calls/s,
// a 2 s deadline (a call still waiting then is a timeout), after 5 s at
// 1 ms. A call holds its connection until the stall it reaches the server
// in ends; the calls beyond 50 wait for one; the pool serves 100 calls/s,
// 2,000 in the 20 s. Once the experiment finds the stall is not a queue
// of ours and puts the limit back, windows healthy by their RTT double it
// while the calls it let in have not come back: 40 → 80 → 160 → 320, as in
// the real trial (8 successes of 40 in a 1 s window there), until the
// calls queued in the pool reach the deadline.
//
//	seed                                     1      2      3
//	now: peak in flight                     320    256    320
//	  timeouts                              170     56    170
//	  successes in the stalls             1,456  1,638  1,469
//	growth only with half the limit back    160    160    160
//	  (tried at stop 24, not adopted:         0      0      0
//	  it starved hangs to 60 s)           1,790  1,789  1,772
func TestGradientStallStaysNearPool(t *testing.T) {
	const pool, stall, deadline = 50, 500 * time.Millisecond, 2 * time.Second
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, _ := newGradientLimiter(t, Config{})
				free := make([]time.Duration, pool) // when each connection is free, since the stalls began
				var peak, timeouts, ok int
				serve := func(at time.Duration, _ *rand.Rand) (time.Duration, Outcome) {
					peak = max(peak, l.InFlight())
					w := 0
					for i := range free {
						if free[i] < free[w] {
							w = i
						}
					}
					begin := max(at, free[w])
					end := (begin/stall + 1) * stall // the end of the stall it reaches the server in
					free[w] = end
					if end-at > deadline {
						timeouts++
						return deadline, Drop
					}
					ok++
					return end - at, Success
				}
				advRun(l, 300, 5*time.Second, seed, func(time.Duration, *rand.Rand) (time.Duration, Outcome) {
					peak = max(peak, l.InFlight())
					return time.Millisecond, Success
				})
				arr := advRun(l, 300, 20*time.Second, seed+10, serve)
				s := summarize(arr, 0)
				t.Logf("peak in flight %d, limit %d..%d, %d timeouts, %d successes in the stalls, %d of %d shed", peak, s.minLim, s.maxLim, timeouts, ok, s.shed, s.all)
				check(t, peak > 4*pool || timeouts > 0 || ok < 1700,
					"peak in flight %d (limit up to %d), %d timeouts, %d successes; want ≤ %d (4 × the pool), none and ≥ 1,700 (85%% of what the pool serves)",
					peak, s.maxLim, timeouts, ok, 4*pool)
			})
		})
	}
}
