package adaptive

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// TestGradientStallGrowsOnlyWhatComesBack: bench/real's Redis stalls in
// miniature. A client pool of 50 connections in front of a server that
// answers only at the end of each 0.5 s stall (back to back), 300 calls/s,
// a 2 s deadline (a call still waiting then is a timeout), after 5 s at
// 1 ms. A call holds its connection until the stall it started in ends;
// the calls beyond 50 wait for one. Once the experiment finds the stall
// is not a queue of ours and puts the limit back, windows whose calls have
// not come back (8 successes of 40 in a 1 s window in the real trial) are
// healthy by their RTT, and growing on them took the limit past the pool:
// 40 → 80 → 160 → 320 in four real windows, with 34–75 timeouts a window
// as the calls queued in the pool reached the deadline. The limit grows
// now only when at least half of it came back within one window or one
// RTT, whichever is longer. The pool serves 100 calls/s, 2,000 in the 20 s.
//
//	seed                                     1      2      3
//	peak in flight, growing on any window   320    256    320
//	  timeouts                              170     56    170
//	  successes in the stalls             1,434  1,639  1,470
//	peak in flight, half of it back         160    160    160
//	  timeouts                                0      0      0
//	  successes in the stalls             1,791  1,789  1,775
func TestGradientStallGrowsOnlyWhatComesBack(t *testing.T) {
	const pool, stall, deadline = 50, 500 * time.Millisecond, 2 * time.Second
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
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
				if peak > 4*pool || timeouts > 0 || ok < 1700 {
					t.Errorf("peak in flight %d (limit up to %d), %d timeouts, %d successes; want ≤ %d (4 × the pool), none and ≥ 1,700 (85%% of what the pool serves)",
						peak, s.maxLim, timeouts, ok, 4*pool)
				}
			})
		})
	}
}
