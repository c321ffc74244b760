package adaptive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A downstream that becomes 2× to 4× slower for good, with capacity to
// spare (its RTT does not depend on the load), needs more calls in flight
// (Little's law), not fewer. Without the lift (MaxLift 1), Hybrid reads the
// new RTT as congestion and, since cutting the calls in flight does not
// bring it down, holds the limit under the demand for as long as the
// baseline remembers the old RTT (14 min after a 2× step, 23 min after
// 3×): at 200 calls/s, of the 12,000 calls of the minute after the step,
// 9,070 were shed after 2×, 11,522 after 3×. A step past MaxLift stays
// congestion, whatever the margin of small windows (which is 2, so the
// first version of the lift let an 8× step through at 20 calls/s); so does
// a 20× step (TestSustainedSlowdownThenRecovery,
// TestHybridLiftDoesNotCompound, TestHybridLiftCapFromBeforeTheRise).
// The RTTs are 50.3 ms × the factor, so that no call ends at the instant
// another arrives and every run repeats exactly.
//
// Not here: a 1.5× step sits on the noise margin (at 40 samples a window
// is congested above 1.5× the baseline), so its windows alternate between
// congested and healthy and an episode seldom lasts the (2/f)² successes
// a lift needs: in some runs it is lifted within 8 s, in others not, and
// about 1,480 calls are shed in the minute, as without the lift.
func TestHybridLiftServesLastingSlowdown(t *testing.T) {
	const (
		before = 50*time.Millisecond + 300*time.Microsecond // no release at an arrival instant: runs repeat exactly
		warmup = 30 * time.Second
		slow   = 60 * time.Second
	)
	for _, tc := range []struct {
		name    string
		rate    int           // calls/s
		after   time.Duration // the RTT from the onset on
		maxLift float64       // 0: the default, 4
		// the calls shed after the onset (of rate × 60), and the latest shed
		minShed, maxShed int
		lastBy           time.Duration
	}{
		// measured: shed, and the last shed after the onset
		{"2×", 200, 2 * before, 0, 0, 120, 2 * time.Second},                    // 86, 1.26 s
		{"3×", 200, 3 * before, 0, 0, 250, 2 * time.Second},                    // 159, 1.32 s
		{"4× at 20 calls/s", 20, 4 * before, 0, 0, 100, 8 * time.Second},       // 48, 4.80 s
		{"8× at 20 calls/s: past MaxLift", 20, 8 * before, 0, 900, 1200, slow}, // 1,036 of 1,200, to the end
		{"2× with MaxLift 1", 200, 2 * before, 1, 8500, 12000, slow},           // 9,219, to the end
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, err := NewHybrid(HybridConfig{MaxLift: tc.maxLift})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: h})
				arr := runOpenLoop(l, tc.rate, 0, []phase{
					{dur: warmup, rtt: before},
					{dur: slow, rtt: tc.after},
				})
				shed, last := 0, time.Duration(0)
				for _, a := range arr {
					if a.at >= warmup && a.shed {
						shed++
						last = a.at - warmup
					}
				}
				if shed < tc.minShed || shed > tc.maxShed || last > tc.lastBy {
					t.Errorf("%d calls shed after the onset, the last %v after it; want %d..%d, none after %v (limit at the end %d, baseline %v)",
						shed, last, tc.minShed, tc.maxShed, tc.lastBy, l.Limit(), h.Baseline())
				}
			})
		})
	}
}

// Lifts must not compound: once the baseline has risen through a lift, the
// next lift is still capped at MaxLift × the baseline from before the
// first. The first version of the lift started the next one from the risen
// baseline, and a 20× slowdown at 100 calls/s (no timeouts) was forgotten
// 5 min 43 s after the onset: limit 23, baseline 1.71 s (found by an
// adversarial review). Without the lift it is forgotten after 19 min 17 s,
// as the baseline rises with its 30 min time constant.
func TestHybridLiftDoesNotCompound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{})
		const warmup = 30 * time.Second
		arr := runOpenLoop(l, 100, 0, []phase{
			{dur: warmup, rtt: 100 * time.Millisecond},
			{dur: 8 * time.Minute, rtt: 2 * time.Second},
		})
		for _, a := range arr {
			if a.at > warmup+time.Minute && a.limit > 1 {
				t.Fatalf("limit %d at %v into a 20× slowdown; want 1 to the end (8 min)", a.limit, (a.at - warmup).Round(time.Second))
			}
		}
	})
}

// The lift must not mistake a queue of ours for a slower downstream. The
// downstream here has a FIFO queue in front of its workers (service times
// log-normal, p99 = 3 × median), arrivals are Poisson, and the offered load
// exceeds the capacity: when the limit is cut, the peak in-flight falls at
// once but the queued calls still complete with their queueing delay, so
// the RTT comes down later, and noisily; the lift must wait for it. Rows: a
// steady overload, a capacity loss (40 → 20 workers under 600 calls/s,
// bench S6), a ramp to 2.2× the capacity (bench S2), and an RTT longer than
// two windows, four seeds each. Without the RTT test the baseline was
// lifted here (the capacity loss: limit 39–41 over 20 workers) and in the
// bench's S2 and S6 (S6: limit 31–40 against 21–29); without the (2/f)²
// successes, in the long-RTT row (baseline 1.05 s, limit 49 over 10
// workers); without them and the one-RTT wait, in all four of its seeds.
func TestHybridLiftNotForOwnQueue(t *testing.T) {
	sigma := math.Log(3) / 2.326 // p99 = 3 × median
	for _, tc := range []struct {
		name           string
		median         time.Duration // of the service time; p99 = 3 × median
		from, to       float64       // arrival rate (calls/s) at 0 s and at the end, linear between
		workers, after int           // workers before and after 30 s
		dur            time.Duration
		maxLimit       int // the highest limit allowed in the last third
	}{
		// measured, the highest limit in the last third over the four seeds: 29, 30, 51, 32
		{"1.6× overload", 50 * time.Millisecond, 600, 600, 20, 20, time.Minute, 35},
		{"capacity loss 40 → 20", 50 * time.Millisecond, 600, 600, 40, 20, time.Minute, 35},
		{"ramp 400 → 1,600 calls/s", 50 * time.Millisecond, 400, 1600, 40, 40, time.Minute, 60},
		// The RTT is longer than two windows: the first version of the lift
		// took the queued calls that complete after a cut for a slower
		// downstream (limit 62 against 19.7 without the lift, RTT p50 0.98 s
		// against 0.39 s; found by an adversarial review).
		{"long RTT: 500 ms service, 10 workers, 1.5×", 500 * time.Millisecond, 30, 30, 10, 10, 5 * time.Minute, 40},
	} {
		for _, seed := range []uint64{0, 5, 6, 7} {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 30))
					l := mustNew(t, Config{})
					start := time.Now()
					free := make([]time.Duration, tc.workers) // when each worker is next free, since start
					var wg sync.WaitGroup
					var maxLimit int
					var maxBaseline time.Duration
					mean := time.Duration(float64(tc.median) * math.Exp(sigma*sigma/2))
					for now := time.Since(start); now < tc.dur; now = time.Since(start) {
						if now >= 30*time.Second && len(free) != tc.after {
							free = free[:tc.after]
						}
						if l.Acquire() {
							svc := time.Duration(float64(tc.median) * math.Exp(sigma*rng.NormFloat64()))
							rtt := book(free, now, svc)
							wg.Add(1)
							go func() {
								defer wg.Done()
								s := time.Now()
								time.Sleep(rtt)
								l.Release(s, time.Since(s), Success)
							}()
						}
						if now > 10*time.Second {
							maxBaseline = max(maxBaseline, l.BaselineRTT())
						}
						if now > tc.dur*2/3 {
							maxLimit = max(maxLimit, l.Limit())
						}
						rate := tc.from + (tc.to-tc.from)*float64(now)/float64(tc.dur)
						time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
					}
					wg.Wait()
					// Measured: at most 0.98 of the mean; lifted by mistake (no RTT
					// test), 1.17–1.37 of it, and 1.88 in the long-RTT row without
					// the (2/f)² successes.
					if maxBaseline > mean*11/10 {
						t.Errorf("baseline reached %v after 10 s; want ≤ %v (the mean service time + 10%%): the lift took our own queue for a slower downstream", maxBaseline, mean*11/10)
					}
					if maxLimit > tc.maxLimit {
						t.Errorf("limit reached %d in the last third; want ≤ %d", maxLimit, tc.maxLimit)
					}
				})
			})
		}
	}
}

// A lift is capped at MaxLift × the baseline from before the RTT rose, not
// from before the lift: a 20× slowdown (100 ms → 2 s, no timeouts, 80 calls
// of demand) whose first slow window is an outlier (6 s) cannot be lifted
// at once, and the baseline rises meanwhile. One fast window at 8 min (1 s)
// ended the episode; the second version of the lift then took its cap from
// the risen baseline (562 ms) and served the slowdown 10 min 42 s after its
// onset (found by an adversarial review). Without the lift, and now, the
// limit stays under the demand for the 30 min of the test.
func TestHybridLiftCapFromBeforeTheRise(t *testing.T) {
	h, err := NewHybrid(HybridConfig{})
	if err != nil {
		t.Fatal(err)
	}
	limit := 20
	update := func(d time.Duration, samples, peak int, rtt time.Duration) {
		limit = max(1, min(1000, h.Update(limit, Window{Duration: d, Samples: samples, MeanRTT: rtt, MaxInFlight: min(peak, limit)})))
	}
	for range 120 { // 30 s at 100 ms, 40 calls/s
		update(250*time.Millisecond, 10, 6, 100*time.Millisecond)
	}
	update(250*time.Millisecond, 10, 43, 6*time.Second) // the onset: one slow outlier window
	for el := time.Duration(0); el < 30*time.Minute; el += 2 * time.Second {
		rtt := 2 * time.Second
		if el == 8*time.Minute {
			rtt = time.Second // one fast window
		}
		n := max(1, min(limit, 80)) // demand: 40 calls/s × 2 s
		update(2*time.Second, n, n, rtt)
		if limit >= 80 {
			t.Fatalf("the 20× slowdown was served %v after its onset (baseline %v)", el+2*time.Second, h.Baseline())
		}
	}
}

// A fleet of 16 clients, each with its own limiter, shares one FIFO
// downstream (40 workers, log-normal service, median 50 ms, p99 150 ms)
// offered 1.6× its capacity. One client's cut moves the shared queue by
// only a sixteenth of it, so the test "the RTT did not follow our cuts"
// holds for each client, wrongly. The second version of the lift then let
// every client lift and undo its cuts, and the mean RTT doubled (288–327 ms
// against 144–161 ms without the lift; found by an adversarial review).
// Now two windows in a row over a lift revoke it; measured: 194 and 160 ms
// against 179 and 149 ms (seeds 2 and 4).
func TestHybridLiftFleetOnSharedQueue(t *testing.T) {
	for _, seed := range []uint64{2, 4} {
		lifted := sharedFIFO(t, 16, 0, seed)
		off := sharedFIFO(t, 16, 1, seed)
		if lifted > off*5/4 {
			t.Errorf("seed %d: mean RTT %v with the lift, %v without; want at most 1.25×", seed, lifted, off)
		}
	}
}

// sharedFIFO runs n clients with their own default limiters (MaxLift
// maxLift) against one FIFO downstream of 40 workers for 2 min, with
// Poisson arrivals at 1.6 × its capacity in all, and returns the mean RTT
// of the calls of the last 80 s.
func sharedFIFO(t *testing.T, n int, maxLift float64, seed uint64) time.Duration {
	var mean time.Duration
	synctest.Test(t, func(t *testing.T) {
		const workers, dur = 40, 2 * time.Minute
		sigma := math.Log(3) / 2.326
		var mu sync.Mutex
		free := make([]time.Duration, workers)
		start := time.Now()
		ls := make([]*Limiter, n)
		for i := range ls {
			h, err := NewHybrid(HybridConfig{MaxLift: maxLift})
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = mustNew(t, Config{Algorithm: h})
		}
		var sum time.Duration
		var count int
		var wg sync.WaitGroup
		for i := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(i)))
				rate := 1.6 * 715 / float64(n)
				for now := time.Since(start); now < dur; now = time.Since(start) {
					if ls[i].Acquire() {
						mu.Lock()
						w := 0
						for j := range free {
							if free[j] < free[w] {
								w = j
							}
						}
						free[w] = max(now, free[w]) + time.Duration(50e6*math.Exp(sigma*rng.NormFloat64()))
						rtt := free[w] - now
						if now > dur/3 {
							sum += rtt
							count++
						}
						mu.Unlock()
						wg.Add(1)
						go func() {
							defer wg.Done()
							s := time.Now()
							time.Sleep(rtt)
							ls[i].Release(s, time.Since(s), Success)
						}()
					}
					time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
				}
			}()
		}
		wg.Wait()
		mean = sum / time.Duration(count)
	})
	return mean
}

// Hybrid.Update is public, so it must survive windows the Limiter never
// closes: a negative duration once drove the baseline negative (moving it
// away from the RTT), after which every window was congested and the limit
// stayed at 1 (found by an adversarial review).
func TestHybridNegativeWindowDuration(t *testing.T) {
	h, err := NewHybrid(HybridConfig{})
	if err != nil {
		t.Fatal(err)
	}
	limit := 20
	for range 40 {
		limit = h.Update(limit, Window{Duration: 250 * time.Millisecond, Samples: 20, MeanRTT: 50 * time.Millisecond, MaxInFlight: limit})
	}
	for range 10 {
		limit = h.Update(limit, Window{Duration: -time.Hour, Samples: 20, MeanRTT: 60 * time.Millisecond, MaxInFlight: limit})
	}
	if b := h.Baseline(); b < 40*time.Millisecond || b > 60*time.Millisecond {
		t.Errorf("baseline %v after windows of negative duration; want it between 40 and 60 ms", b)
	}
	for range 20 {
		limit = h.Update(limit, Window{Duration: 250 * time.Millisecond, Samples: 20, MeanRTT: 50 * time.Millisecond, MaxInFlight: limit})
	}
	if limit < 20 {
		t.Errorf("limit %d after healthy windows; want it to grow again (≥ 20)", limit)
	}
}
