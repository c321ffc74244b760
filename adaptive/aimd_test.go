package adaptive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// openLoop offers calls to l at rate per second for dur (open loop:
// arrivals do not wait for the limiter), evenly spaced (seed 0) or, for
// seed > 0, as a Poisson process drawn from a generator seeded with seed,
// and returns what each arrival saw. The i-th admitted call (from 0) takes the RTT serve returns
// for it and ends with its outcome; serve runs on the arriving goroutine,
// one call at a time. It must run inside a synctest bubble.
func openLoop(l *Limiter, rate int, dur time.Duration, seed uint64, serve func(i int) (time.Duration, Outcome)) []arrival {
	start := time.Now()
	every := time.Second / time.Duration(rate)
	var wg sync.WaitGroup
	rng := rand.New(rand.NewPCG(seed, 3))
	var out []arrival
	for i := 0; time.Since(start) < dur; {
		ok := l.Acquire()
		out = append(out, arrival{at: time.Since(start), limit: l.Limit(), shed: !ok})
		if ok {
			d, o := serve(i)
			i++
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := time.Now()
				time.Sleep(d)
				l.Release(s, time.Since(s), o)
			}()
		}
		if seed > 0 {
			time.Sleep(time.Duration(rng.ExpFloat64() * float64(every)))
		} else {
			time.Sleep(every)
		}
	}
	wg.Wait()
	return out
}

// A healthy downstream times out a share of calls whatever the load.
// Cutting every window that held a drop (DropTolerance < 0, Netflix's
// AIMDLimit run per window: the rule before DropTolerance) held the limit
// below the demand: nearly every window of many samples holds a timeout
// (Helidon issue #9542: 68% shed with 3% of slow calls). Calls take 5.3 ms,
// 3% of them time out at 100.7 ms (no two calls end at one instant: runs
// repeat exactly); 60 s from a cold start (InitialLimit 20).
func TestAIMDBackgroundTimeouts(t *testing.T) {
	const (
		fast    = 5*time.Millisecond + 300*time.Microsecond
		timeout = 100*time.Millisecond + 700*time.Microsecond
	)
	for _, tc := range []struct {
		name string
		rate int           // calls/s
		rtt  time.Duration // of the calls that do not time out
		tol  float64       // DropTolerance; 0: the default
		// the share of the calls shed over the run
		minShed, maxShed float64
	}{
		// measured: shed before (every drop cuts) -> after (default tolerance)
		{"50 calls/s", 50, fast, 0, 0, 0.10},      // 0.5% -> 0
		{"300 calls/s", 300, fast, 0, 0, 0.10},    // 51% -> 0
		{"1,000 calls/s", 1000, fast, 0, 0, 0.10}, // 82% -> 0
		{"1,000 calls/s at 50.3 ms (52 in flight)", 1000, 50*time.Millisecond + 300*time.Microsecond, 0, 0, 0.10}, // 91% -> 4.4%, all in the first 30 s (the limit grows from 20)
		{"300 calls/s, no tolerance", 300, fast, -1, 0.40, 0.60},                                                  // 51%: the rule before
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, err := NewAIMD(AIMDConfig{DropTolerance: tc.tol})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: a})
				rng := rand.New(rand.NewPCG(1, 2))
				arr := openLoop(l, tc.rate, time.Minute, 0, func(int) (time.Duration, Outcome) {
					if rng.Float64() < 0.03 {
						return timeout, Drop
					}
					return tc.rtt, Success
				})
				shed := 0
				for _, x := range arr {
					if x.shed {
						shed++
					}
				}
				share := float64(shed) / float64(len(arr))
				t.Logf("%d of %d calls shed (%.1f%%), final limit %d", shed, len(arr), 100*share, l.Limit())
				if share < tc.minShed || share > tc.maxShed {
					t.Errorf("%.1f%% of the calls shed; want %.0f%%..%.0f%%", 100*share, 100*tc.minShed, 100*tc.maxShed)
				}
			})
		})
	}
}

// A downstream that answers a large share of calls with a drop is backed
// off from whatever DropTolerance: from InitialLimit 20 the limit falls
// below 5 (a quarter of it) within 4 s, by ×0.9 per 250 ms window, and
// stays below it. Calls take 5.3 ms; a timeout ends at 100.7 ms; 20 s.
func TestAIMDBacksOffFromOverload(t *testing.T) {
	const (
		fast    = 5*time.Millisecond + 300*time.Microsecond
		timeout = 100*time.Millisecond + 700*time.Microsecond
	)
	for _, tc := range []struct {
		name      string
		rate      int           // calls/s
		share     float64       // of the calls that end as a drop
		dropAfter time.Duration // when they end
	}{
		// measured: below 5 after (before, every drop cutting: the same but where noted)
		{"30% 503 at 50 calls/s", 50, 0.3, fast},            // 3.66 s (3.14 s)
		{"30% 503 at 300 calls/s", 300, 0.3, fast},          // 2.79 s
		{"30% 503 at 1,000 calls/s", 1000, 0.3, fast},       // 2.75 s
		{"all 503 at 50 calls/s", 50, 1, fast},              // 2.88 s
		{"all 503 at 300 calls/s", 300, 1, fast},            // 2.79 s
		{"all 503 at 1,000 calls/s", 1000, 1, fast},         // 2.75 s
		{"all time out at 50 calls/s", 50, 1, timeout},      // 2.90 s
		{"all time out at 300 calls/s", 300, 1, timeout},    // 3.13 s
		{"all time out at 1,000 calls/s", 1000, 1, timeout}, // 3.35 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, err := NewAIMD(AIMDConfig{})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: a})
				rng := rand.New(rand.NewPCG(1, 2))
				arr := openLoop(l, tc.rate, 20*time.Second, 0, func(int) (time.Duration, Outcome) {
					if rng.Float64() < tc.share {
						return tc.dropAfter, Drop
					}
					return fast, Success
				})
				below, hiAfter := time.Duration(-1), 0
				for _, x := range arr {
					if below < 0 && x.limit < 5 {
						below = x.at
					}
					if below >= 0 {
						hiAfter = max(hiAfter, x.limit)
					}
				}
				t.Logf("limit below 5 after %v, at most %d after that", below, hiAfter)
				if below < 0 || below > 4*time.Second || hiAfter >= 5 {
					t.Errorf("limit below 5 after %v and at most %d after that; want within 4s, and held below 5", below, hiAfter)
				}
			})
		})
	}
}

func TestAIMDConfigErrors(t *testing.T) {
	for _, tol := range []float64{0.3, math.NaN(), math.Inf(1)} {
		_, err := NewAIMD(AIMDConfig{DropTolerance: tol})
		if want := fmt.Sprintf("AIMD DropTolerance must be in (0, 0.2], or negative for none, got %v", tol); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DropTolerance %v: %v, want an error containing %q", tol, err, want)
		}
	}
	for _, tol := range []float64{-1, 0.2, 0.01} {
		if _, err := NewAIMD(AIMDConfig{DropTolerance: tol}); err != nil {
			t.Errorf("DropTolerance %v: %v", tol, err)
		}
	}
}
