package adaptive

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Adversarial tests: shapes that reviews found to break the limiter, each
// with the numbers measured in its doc. A test listed in knownGaps
// (adv_harness_test.go) demonstrates a defect not fixed yet and logs its
// miss; every other one is a regression test of a fixed defect and fails
// if it comes back.

const milli = time.Millisecond

// share is shed / all as a fraction.
func (s advSummary) share() float64 { return float64(s.shed) / float64(max(s.all, 1)) }

// A healthy downstream with load-independent short stalls (its RTT rises
// for a moment whatever our load: a GC pause, a brief network blip) is
// shed heavily. Each stall looks like a queue: the limit is cut to about a
// third of the demand, the experiment skips the whole window after the cut
// (it starts before due = cut + r, windows being contiguous) and measures
// the next one, which falls after the stall: the throughput holds, so
// "a queue of ours", and the cut is kept until a healthy window. Measured
// (Poisson arrivals, seed 1, 60 s, shed from 5 s on): 30.9% (limit
// 1..11), 19.7% (5..20), 24.8% (8..46). The mean demand in a stall is 9, 60 and 100
// calls in flight, all within MaxLimit, and the downstream has no capacity
// limit at all.
func TestAdvShortStallsShedHealthyDownstream(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		rate                         float64
		normal, stall, every, length time.Duration
	}{
		{"10 → 30 ms for 0.5 s every 2 s, 300/s", 300, 10 * milli, 30 * milli, 2 * time.Second, 500 * milli},
		{"10 → 200 ms for 1 s every 5 s, 300/s", 300, 10 * milli, 200 * milli, 5 * time.Second, time.Second},
		{"20 → 100 ms for 0.3 s every 3 s, 1000/s", 1000, 20 * milli, 100 * milli, 3 * time.Second, 300 * milli},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, _ := newGradientLimiter(t, Config{})
				arr := advRun(l, tc.rate, 60*time.Second, 1, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
					jitter := time.Duration(rng.IntN(100)) * time.Microsecond
					if at%tc.every >= tc.every-tc.length {
						return tc.stall + jitter, Success
					}
					return tc.normal + jitter, Success
				})
				s := summarize(arr, 5*time.Second)
				t.Logf("from 5 s: %d of %d shed (%.1f%%), limit %d..%d", s.shed, s.all, 100*s.share(), s.minLim, s.maxLim)
				check(t, s.share() > 0.02, "%.1f%% of the calls to a healthy downstream shed (limit %d..%d); want ≤ 2%%", 100*s.share(), s.minLim, s.maxLim)
			})
		})
	}
}

// MinLimit above the cut's target blinds the experiment: the Limiter
// clamps the cut, so the throughput cannot fall, every experiment finds
// "a queue of ours", the base never rises and the limit stays at MinLimit
// for good. RTT 50 → 150 ms at 20 s (not ours: no capacity limit), 100
// calls/s Poisson (15 in flight after the step). Measured: MinLimit 1:
// 2.9% shed after the step, 0.0% in the last 20 s, base 150 ms; MinLimit
// 10: 40.1% shed after the step, 38.5% in the last 20 s, base still
// 50.1 ms, an experiment still running at 80 s. By reading the code (not
// measured): a chained cut whose est was clamped up can give a cut share
// f = 1 − next/peak ≤ 0, and f = 0 makes the experiment's 16/f² +Inf: it
// never ends, and the limit is frozen. Now (an experiment whose limit in
// force takes under a tenth is undone): both 0.0% in the last 20 s, limit
// 40, base 150 ms. It was still listed as a known gap at stop 36, though
// it passed there too.
func TestAdvMinLimitBlindsExperiment(t *testing.T) {
	for _, minLimit := range []int{1, 10} {
		t.Run("MinLimit "+itoa(minLimit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, g := newGradientLimiter(t, Config{MinLimit: minLimit})
				arr := advRun(l, 100, 80*time.Second, 1, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
					jitter := time.Duration(rng.IntN(300)) * time.Microsecond
					if at < 20*time.Second {
						return 50*milli + jitter, Success
					}
					return 150*milli + jitter, Success
				})
				s := summarize(arr, 60*time.Second)
				t.Logf("last 20 s: %d of %d shed (%.1f%%), limit %d..%d, base %v", s.shed, s.all, 100*s.share(), s.minLim, s.maxLim, g.Baseline())
				check(t, s.share() > 0.01, "last 20 s: %.1f%% shed (limit %d..%d, base %v); want ≤ 1%%: the step is 60 s old", 100*s.share(), s.minLim, s.maxLim, g.Baseline())
			})
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// A load-independent RTT change during a quiet spell (under 1 call in
// flight) pins the limit at 1 for good. A slower RTT (or a base lowered
// by a window of very fast successes: a cache, errors read as successes)
// makes a window look queued; at that concurrency the cut goes to the
// floor; the experiment at 1 in flight cannot see the throughput fall
// (one slot still serves a demand below one), so "a queue of ours"; from
// then on every window is queued (its RTT is far above the base), and at
// the floor a queued window neither cuts nor experiments and is never
// healthy, so the limit never grows and the base never rises. When the
// demand comes back, nearly everything is shed, forever. Measured
// (Poisson, 60 s of quiet then 60 s at 1,000 calls/s, 50 ms: 50 in
// flight; shed from 10 s of the busy phase): step 5 → 50 ms at 20 s of
// quiet: 2/s 98.1%, 4/s 98.1%, 10/s 98.1% (limit 1..1, base 5.04 ms);
// 20/s: 0.0% (limit 84). Two seconds of 50 µs answers at 4/s, RTT 20 ms
// otherwise (evenly spaced), 20 in flight after: 95.3% (limit 1, base
// 50 µs).
func TestAdvQuietSpellPinsLimitAtFloor(t *testing.T) {
	jit := func(d time.Duration, rng *rand.Rand) time.Duration {
		return d + time.Duration(rng.IntN(100))*time.Microsecond
	}
	for _, tc := range []struct {
		name  string
		rate  float64 // calls/s in the quiet spell
		seed  uint64  // of its arrivals (0: evenly spaced)
		quiet advServe
		busy  time.Duration // the RTT after it, at 1,000 calls/s
	}{
		{"RTT 5 → 50 ms at 2/s", 2, 1, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
			if at < 20*time.Second {
				return jit(5*milli, rng), Success
			}
			return jit(50*milli, rng), Success
		}, 50 * milli},
		{"RTT 5 → 50 ms at 10/s", 10, 1, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
			if at < 20*time.Second {
				return jit(5*milli, rng), Success
			}
			return jit(50*milli, rng), Success
		}, 50 * milli},
		{"2 s of 50 µs answers at 4/s, RTT 20 ms", 4, 0, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
			if at >= 20*time.Second && at < 22*time.Second {
				return 50 * time.Microsecond, Success
			}
			return jit(20*milli, rng), Success
		}, 20 * milli},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, g := newGradientLimiter(t, Config{})
				advRun(l, tc.rate, 60*time.Second, tc.seed, tc.quiet)
				t.Logf("after the quiet spell: limit %d, base %v", l.Limit(), g.Baseline())
				arr := advRun(l, 1000, 60*time.Second, 2, func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
					return jit(tc.busy, rng), Success
				})
				s := summarize(arr, 10*time.Second)
				t.Logf("busy, from 10 s: %d of %d shed (%.1f%%), limit %d..%d, base %v", s.shed, s.all, 100*s.share(), s.minLim, s.maxLim, g.Baseline())
				if s.share() > 0.01 {
					t.Errorf("%.1f%% shed 10-60 s after the demand came (limit %d..%d, base %v); want ≤ 1%%", 100*s.share(), s.minLim, s.maxLim, g.Baseline())
				}
			})
		})
	}
}

// Noisy RTTs at low rates shed a healthy downstream (load-independent
// RTTs, no capacity limit): windows of few samples (a window closes at
// MinSamples, or at WindowMax) give a base that is the lucky low end of
// r + 2se, and windows of mostly slow samples then look queued; at low
// concurrency the cut goes to the floor. Measured (Poisson, seed 1, from
// 5 s on): bimodal 1 ms / 100 ms (50% each): 5/s 17.7% (limit 1..20, base
// 1.0 ms), 10/s 12.5%, 20/s 2.6%; with MinSamples 1 at 20/s 39.7%
// (limit 1..8); log-normal 50 ms (p99 200 ms) at 2/s 8.7%; log-normal
// 20 ms (p99 500 ms) at 50/s 5.8%. Bimodal at 200/s: 0% (limit 40).
func TestAdvNoisyLowRateSheds(t *testing.T) {
	bimodal := func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
		j := time.Duration(rng.IntN(100)) * time.Microsecond
		if rng.Float64() < 0.5 {
			return milli + j, Success
		}
		return 100*milli + j, Success
	}
	ln := func(med, p99 time.Duration) advServe {
		f := lognormal(med, p99)
		return func(at time.Duration, rng *rand.Rand) (time.Duration, Outcome) { return f(rng), Success }
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		rate  float64
		dur   time.Duration
		serve advServe
	}{
		{"bimodal 1/100 ms at 5/s", Config{}, 5, 300 * time.Second, bimodal},
		{"bimodal 1/100 ms at 10/s", Config{}, 10, 300 * time.Second, bimodal},
		{"bimodal 1/100 ms at 20/s", Config{}, 20, 300 * time.Second, bimodal},
		{"bimodal 1/100 ms at 20/s, MinSamples 1", Config{MinSamples: 1}, 20, 300 * time.Second, bimodal},
		{"log-normal 50 ms, p99 200 ms, at 2/s", Config{}, 2, 600 * time.Second, ln(50*milli, 200*milli)},
		{"log-normal 20 ms, p99 500 ms, at 50/s", Config{}, 50, 300 * time.Second, ln(20*milli, 500*milli)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, g := newGradientLimiter(t, tc.cfg)
				s := summarize(advRun(l, tc.rate, tc.dur, 1, tc.serve), 5*time.Second)
				t.Logf("from 5 s: %d of %d shed (%.1f%%), limit %d..%d, base %v", s.shed, s.all, 100*s.share(), s.minLim, s.maxLim, g.Baseline())
				check(t, s.share() > 0.02, "%.1f%% of the calls to a healthy downstream shed (limit %d..%d); want ≤ 2%%", 100*s.share(), s.minLim, s.maxLim)
			})
		})
	}
}

// With WindowMin 1 ms and MinSamples 1 (both in range), windows hold one
// sample at moderate rates, and a window of one success is never queued
// (se = r): our own queue is never cut. A FIFO of 4 workers × 10 ms (400
// calls/s) offered 200/s, then 500/s from 5 s to 30 s, no timeout.
// Measured: defaults: peak 20 in flight, mean RTT 13.2 ms over the last
// 10 s; WindowMin 1 ms + MinSamples 1: limit 1000 (MaxLimit), 1000 in
// flight, mean RTT 2.49 s. Either alone: 13.2 ms / 12.6 ms.
func TestAdvOneSampleWindowsNeverCutOwnQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := newGradientLimiter(t, Config{WindowMin: milli, MinSamples: 1})
		free := make([]time.Duration, 4)
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var sum time.Duration
		n, peak := 0, 0
		rng := rand.New(rand.NewPCG(3, 4))
		for time.Since(start) < 30*time.Second {
			now := time.Since(start)
			rate := 200.0
			if now > 5*time.Second {
				rate = 500
			}
			if l.Acquire() {
				d := book(free, now, 10*milli)
				if now > 20*time.Second {
					mu.Lock()
					sum, n = sum+d, n+1
					mu.Unlock()
				}
				peak = max(peak, l.InFlight())
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := time.Now()
					time.Sleep(d)
					l.Release(s, time.Since(s), Success)
				}()
			}
			time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		}
		wg.Wait()
		mean := sum / time.Duration(max(n, 1))
		t.Logf("limit %d, peak in flight %d, mean RTT over the last 10 s %v", l.Limit(), peak, mean)
		check(t, peak > 100 || mean > 100*milli, "peak %d in flight, mean RTT %v for 4 workers of 10 ms; want ≤ 100 and ≤ 100 ms", peak, mean)
	})
}

// hookGradient is a Gradient whose Baseline runs a hook: the Limiter calls
// Baseline after it stored the new limit and before it publishes the new
// ceiling, so the hook runs in that gap, as any concurrent Acquire may.
type hookGradient struct {
	*Gradient
	hook func()
}

func (h *hookGradient) Baseline() time.Duration {
	if h.hook != nil {
		h.hook()
	}
	return h.Gradient.Baseline()
}

// A cut can be undone by a concurrent Acquire: Update stores the cut
// limit, then (after Baseline) publishes the new ceiling; an Acquire in
// between reads the cut limit and the old ceiling and doubles the limit
// back. Here the first window is all timeouts (20 → 10, ceiling 0 after
// it) and the old ceiling is MaxLimit (before the first window). Measured:
// the Acquire in the gap is admitted and the limit is 20 after the cut
// window; the next Update syncs its estimate to 20, so the cut is lost.
// Fix: store a ceiling of 0 before the limit (or publish the ceiling
// first), so that no Acquire pairs a new limit with an old ceiling.
func TestAdvGrowthRaceUndoesCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := NewGradient(GradientConfig{})
		h := &hookGradient{Gradient: g}
		l := mustNew(t, Config{Algorithm: h})
		for range 20 {
			if !l.Acquire() {
				t.Fatal("Acquire refused below the limit")
			}
		}
		start := time.Now()
		time.Sleep(300 * milli)
		var admitted, hooked bool
		h.hook = func() {
			if !hooked {
				hooked = true
				admitted = l.Acquire()
			}
		}
		for range 10 {
			l.Release(start, time.Since(start), Drop)
		}
		h.hook = nil
		t.Logf("in the gap: Acquire admitted %v; limit %d after the window (the algorithm returned 10)", admitted, l.Limit())
		if admitted || l.Limit() > 10 {
			t.Errorf("an Acquire between the cut and the ceiling's publication admitted=%v and left the limit at %d; want refused and 10", admitted, l.Limit())
		}
		for range 10 + btoi(admitted) {
			l.Release(start, time.Since(start), Ignore)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// winRecorder is a Fixed algorithm that keeps the windows it saw.
type winRecorder struct {
	Fixed
	ws []Window
}

func (r *winRecorder) Update(limit int, w Window) int {
	r.ws = append(r.ws, w)
	return limit
}

// Regression: the sum of squares (µs², a uint64) overflowed past 1.8e5
// successes of 10 s in one window, and nothing bounds a window's count:
// with WindowMin 1 min and a limit of 2^20 a window holds as many samples
// as arrive. 200,000 successes of 10 s and 200,000 of 1 ms, true standard
// deviation 5.0 s: 0 before (the wrapped sum was below n·mean²); 5.0 s
// since the sum counts its wraps (window.sumSqWrap).
func TestAdvSumOfSquaresOverflow(t *testing.T) {
	rec := &winRecorder{}
	l := mustNew(t, Config{Algorithm: rec, InitialLimit: 1 << 20, MaxLimit: 1 << 20, MinSamples: 1e6,
		WindowMin: time.Minute, WindowMax: time.Minute})
	const n = 200_000
	for range 2 * n {
		if !l.Acquire() {
			t.Fatal("refused")
		}
	}
	start := time.Now()
	for i := range 2 * n {
		rtt := time.Millisecond
		if i%2 == 0 {
			rtt = 10 * time.Second
		}
		l.Release(start, rtt, Success)
	}
	if !l.Acquire() {
		t.Fatal("refused")
	}
	l.Release(start, 61*time.Second, Drop) // closes the window (age ≥ WindowMax)
	if len(rec.ws) != 1 {
		t.Fatalf("%d windows closed; want 1", len(rec.ws))
	}
	w := rec.ws[0]
	t.Logf("window: %d samples, mean %v, sd %v", w.Samples, w.MeanRTT, w.StdDevRTT)
	check(t, w.StdDevRTT < 4*time.Second || w.StdDevRTT > 6*time.Second, "StdDevRTT %v of %d successes half at 10 s, half at 1 ms; want about 5 s", w.StdDevRTT, 2*n)
}

// Regression: StdDevRTT took each RTT at most as 10 s but subtracted the
// mean of the uncapped RTTs, capped, which is not the standard deviation
// of either. Two successes of 5 s and 30 s: 0 before (Σx² − n·m² with m =
// 10 s was negative, and Gradient took se = 0); 17.7 s, the true value,
// since the cap is 2³² − 1 µs (71.6 min), as far as a square fits a uint64.
func TestAdvStdDevOverTenSeconds(t *testing.T) {
	rec := &winRecorder{}
	l := mustNew(t, Config{Algorithm: rec, MinSamples: 3, WindowMin: time.Minute, WindowMax: time.Minute})
	start := time.Now()
	for _, rtt := range []time.Duration{5 * time.Second, 30 * time.Second} {
		if !l.Acquire() {
			t.Fatal("refused")
		}
		l.Release(start, rtt, Success)
	}
	if !l.Acquire() {
		t.Fatal("refused")
	}
	l.Release(start, 61*time.Second, Drop) // closes the window (age ≥ WindowMin, 3 samples)
	if len(rec.ws) != 1 {
		t.Fatalf("%d windows closed; want 1", len(rec.ws))
	}
	w := rec.ws[0]
	t.Logf("window: %d samples, %d drops, mean %v, sd %v", w.Samples, w.Drops, w.MeanRTT, w.StdDevRTT)
	check(t, w.StdDevRTT < 17600*time.Millisecond || w.StdDevRTT > 17700*time.Millisecond, "StdDevRTT %v of successes at 5 s and 30 s; want 17.68 s", w.StdDevRTT)
}

// Regression: three successes of 2⁶² ns in one window overflowed the
// int64 sum of their RTTs, and the window's MeanRTT was negative
// (−1.54e18 ns, −49 years). Each RTT is now taken at most as 2³² − 1 µs
// (about 71.6 minutes), so the mean is that.
func TestAdvSumRTTOverflow(t *testing.T) {
	rec := &winRecorder{}
	l := mustNew(t, Config{Algorithm: rec, MinSamples: 10, WindowMin: time.Minute, WindowMax: time.Minute})
	start := time.Now()
	huge := time.Duration(1 << 62)
	for range 5 {
		if !l.Acquire() {
			t.Fatal("refused")
		}
	}
	// The first closes a window of its own (its end is past WindowMax);
	// the next three end at the same instant, in the next window.
	for range 4 {
		l.Release(start, huge, Success)
	}
	l.Release(start.Add(61*time.Second), huge, Drop) // closes the second window
	if len(rec.ws) != 2 {
		t.Fatalf("%d windows closed; want 2", len(rec.ws))
	}
	w := rec.ws[1]
	t.Logf("window: %d samples, mean %v", w.Samples, w.MeanRTT)
	if want := time.Duration(maxRTT); w.Samples != 4 || w.MeanRTT != want {
		t.Errorf("window of %d samples, MeanRTT %v; want 4 samples (3 successes of 2⁶² ns, a drop), mean %v", w.Samples, w.MeanRTT, want)
	}
}

// Regression (found by a review at stop 28): a bimodal downstream, 90% of
// calls at 10 ms and 10% at 200 ms whatever the load, under a demand that
// ramps from 50 to 1,000 calls/s over 60 s. A window of only fast
// successes sets the base near 10 ms while the mean is 29 ms, and a cut
// takes the limit to 1–3; the windows there are small, so their means are
// above the threshold but not surely. A rule that held the limit on such
// windows (instead of growing it) never left that state: shed from 5 s on
// seeds 2, 5, 6 and 10, 70.4, 44.1, 86.2 and 90.7% with it; 0.37, 0.99,
// 1.08 and 0.50% without (growth makes the windows larger, they are judged
// queued, and the experiment raises the base).
func TestAdvBimodalRampKeepsGrowing(t *testing.T) {
	for _, seed := range []uint64{2, 5, 6, 10} {
		t.Run("seed "+itoa(int(seed)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, g := newGradientLimiter(t, Config{})
				rate := func(at time.Duration) float64 {
					return 50 + 950*min(max(float64(at-5*time.Second)/float64(60*time.Second), 0), 1)
				}
				arr := advRunAt(l, rate, 70*time.Second, seed, func(_ time.Duration, rng *rand.Rand) (time.Duration, Outcome) {
					d := 10 * milli
					if rng.Float64() >= 0.9 {
						d = 200 * milli
					}
					return d + time.Duration(rng.IntN(100))*time.Microsecond, Success
				})
				s := summarize(arr, 5*time.Second)
				t.Logf("from 5 s: %d of %d shed (%.2f%%), limit %d..%d, base %v", s.shed, s.all, 100*s.share(), s.minLim, s.maxLim, g.Baseline())
				check(t, s.share() > 0.03, "%.2f%% of the calls to a healthy bimodal downstream shed (limit %d..%d, base %v); want ≤ 3%%", 100*s.share(), s.minLim, s.maxLim, g.Baseline())
			})
		})
	}
}

// windowOf returns the Window that n successes of the given RTTs (cycled)
// close, all released at one instant, with the window closed by a drop.
func windowOf(t *testing.T, n int, rtts ...time.Duration) Window {
	t.Helper()
	rec := &winRecorder{}
	l := mustNew(t, Config{Algorithm: rec, InitialLimit: n + 1, MaxLimit: n + 1, MinSamples: n + 1, WindowMin: time.Minute, WindowMax: time.Minute})
	for range n + 1 {
		if !l.Acquire() {
			t.Fatal("refused")
		}
	}
	start := time.Now()
	for i := range n {
		l.Release(start, rtts[i%len(rtts)], Success)
	}
	l.Release(start.Add(2*time.Minute), 0, Drop) // closes the window (age ≥ WindowMax)
	if len(rec.ws) != 1 {
		t.Fatalf("%d windows closed; want 1", len(rec.ws))
	}
	return rec.ws[0]
}

// Regressions found by a review at stop 28: (1) an RTT capped at 2³² µs
// squared to 2⁶⁴, which wrapped to 0 (1 ms and 2 h: sd 0, not 50.6 min);
// (2) the sum of squares truncated each RTT to the microsecond while the
// mean kept its nanoseconds, which biased the variance low by about the
// mean in µs (100 ms ± 200 µs, each with 999 ns more: sd 0, not 200 µs).
func TestAdvStdDevCapAndRounding(t *testing.T) {
	w := windowOf(t, 2, time.Millisecond, 2*time.Hour)
	t.Logf("1 ms and 2 h: mean %v, sd %v", w.MeanRTT, w.StdDevRTT)
	if w.StdDevRTT < 50*time.Minute || w.StdDevRTT > 51*time.Minute {
		t.Errorf("StdDevRTT of 1 ms and 2 h (taken as 71.6 min): %v; want 50.6 min", w.StdDevRTT)
	}
	w = windowOf(t, 1000, 100*time.Millisecond-200*time.Microsecond+999, 100*time.Millisecond+200*time.Microsecond+999)
	t.Logf("100 ms ± 200 µs: mean %v, sd %v", w.MeanRTT, w.StdDevRTT)
	if w.StdDevRTT < 199*time.Microsecond || w.StdDevRTT > 201*time.Microsecond {
		t.Errorf("StdDevRTT of 100 ms ± 200 µs: %v; want 200 µs", w.StdDevRTT)
	}
}
