package adaptive

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// A healthy downstream answers a share of calls with a timeout or a 503
// whatever the load. Without a drop tolerance (DropTolerance < 0, the rule
// before it), every window holding one of them cut the limit, and the
// limit only grew in windows with none: at 1,000 calls/s (250 samples a
// window), 1% of drops shed 30% of the calls and 2% shed 48%. With the
// default tolerance (2%, BBRv2's loss threshold) a background share of up
// to 3% sheds nothing at 50 calls in flight; above the tolerance the cuts
// take only the share above it, so 4% sheds 42% instead of 65%. A
// downstream whose own limiter answers 503 beyond its capacity is still
// backed off from: the limit stays near that capacity. The run: 30 s
// healthy, then 150 s in the row's condition; the figures are over its
// last 60 s (rate × 60 calls). Without the tolerance the limit keeps
// falling: 1% of drops shed 14% of the calls in the second minute and 30%
// in the third. Each RTT is 50.3 ms, so that no call ends at the instant
// another arrives: runs repeat exactly.
func TestHybridDropTolerance(t *testing.T) {
	const rtt = 50*time.Millisecond + 300*time.Microsecond
	for _, tc := range []struct {
		name string
		rate int     // calls/s
		tol  float64 // DropTolerance; 0: the default
		drop float64 // background share of drops, 0..1
		cap  int     // the downstream's own limit of calls in flight; 0: none
		// the calls shed over the last 60 s, and the highest limit there
		minShed, maxShed int
		maxLimit         int
	}{
		// measured: shed (share), highest limit
		{"1% background", 1000, 0, 0.01, 0, 0, 0, 1000},                              // 0, 103
		{"2% background", 1000, 0, 0.02, 0, 0, 0, 1000},                              // 0, 103
		{"3% background", 1000, 0, 0.03, 0, 0, 600, 1000},                            // 0, 103
		{"3% background at 100 calls/s", 100, 0, 0.03, 0, 0, 60, 1000},               // 0, 13
		{"1% background, no tolerance", 1000, -1, 0.01, 0, 12000, 30000, 1000},       // 18,192 (30%), 40
		{"2% background, no tolerance", 1000, -1, 0.02, 0, 20000, 40000, 1000},       // 29,090 (48%), 38
		{"4% background: above the tolerance", 1000, 0, 0.04, 0, 18000, 30000, 1000}, // 24,956 (42%), 41
		{"4% background, no tolerance", 1000, -1, 0.04, 0, 30000, 50000, 1000},       // 39,077 (65%), 35
		{"5% at 100 calls/s: above the tolerance", 100, 0, 0.05, 0, 50, 400, 1000},   // 150 (2.5%), 13
		{"5% at 100 calls/s, no tolerance", 100, -1, 0.05, 0, 400, 1000, 1000},       // 568 (9.5%), 10
		{"503 beyond 40 in flight", 1000, 0, 0, 40, 12000, 18000, 48},                // 13,322 (22%; 20.5% at best), 41
		{"503 beyond 40 in flight, no tolerance", 1000, -1, 0, 40, 12000, 18000, 48}, // 13,938 (23%), 41
		{"503 beyond 4 in flight at 100 calls/s", 100, 0, 0, 4, 1200, 2300, 6},       // 1,912 (32%; 20.5% at best), 5
		{"503 beyond 10 in flight at 300 calls/s", 300, 0, 0, 10, 6000, 8000, 12},    // 6,698 (37%; 34% at best), 11
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h, err := NewHybrid(HybridConfig{DropTolerance: tc.tol})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: h})
				arr := runOpenLoop(l, tc.rate, 0, []phase{
					{dur: 30 * time.Second, rtt: rtt},
					{dur: 150 * time.Second, rtt: rtt, drop: tc.drop, cap: tc.cap},
				})
				shed, hi := 0, 0
				for _, a := range arr {
					if a.at >= 120*time.Second {
						hi = max(hi, a.limit)
						if a.shed {
							shed++
						}
					}
				}
				if shed < tc.minShed || shed > tc.maxShed || hi > tc.maxLimit {
					t.Errorf("%d calls shed of the last 60 s, limit up to %d; want %d..%d shed, limit at most %d",
						shed, hi, tc.minShed, tc.maxShed, tc.maxLimit)
				}
			})
		})
	}
}

// The lift (TestHybridLiftServesLastingSlowdown) needs windows that are not
// congested by drops; with a background share of drops and no tolerance,
// a 2× slowdown with capacity to spare was shed from to the end of the
// run. 200 calls/s, 30 s at 50.3 ms, then 60 s at 100.6 ms; 2% of the
// calls are drops throughout.
func TestHybridLiftWithBackgroundDrops(t *testing.T) {
	const before = 50*time.Millisecond + 300*time.Microsecond
	for _, tc := range []struct {
		name    string
		tol     float64 // DropTolerance; 0: the default
		maxShed int     // calls shed after the onset (of 12,000)
		lastBy  time.Duration
	}{
		// measured: shed, the last shed after the onset
		{"default tolerance", 0, 120, 2 * time.Second}, // 82, 1.27 s
		{"no tolerance", -1, 2000, time.Minute},        // 1,150, 59.8 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, err := NewHybrid(HybridConfig{DropTolerance: tc.tol})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: h})
				arr := runOpenLoop(l, 200, 0, []phase{
					{dur: 30 * time.Second, rtt: before, drop: 0.02},
					{dur: 60 * time.Second, rtt: 2 * before, drop: 0.02},
				})
				shed, last := 0, time.Duration(0)
				for _, a := range arr {
					if a.at >= 30*time.Second && a.shed {
						shed++
						last = a.at - 30*time.Second
					}
				}
				if shed > tc.maxShed || last > tc.lastBy {
					t.Errorf("%d calls shed after the onset, the last %v after it; want at most %d, none after %v",
						shed, last, tc.maxShed, tc.lastBy)
				}
				if tc.tol < 0 && (shed < 500 || last < 50*time.Second) {
					t.Errorf("without a tolerance %d calls were shed, the last %v after the onset; the contrast this test draws is gone", shed, last)
				}
			})
		})
	}
}

// The price of the tolerance: an overload that shows first as timeouts of
// calls that queued (a small share of drops, while the RTT of the
// successes is capped by the timeout and barely rises) is cut later, so
// more calls time out. Found by an adversarial review of the first version,
// which tested each window alone and so let small windows keep a drop (1
// in 10 is within the noise of 2%); pooling recent windows (Hybrid.dropped)
// cut the excess timeouts by 45% over the five rows (22–85% per row). The
// rows: a FIFO downstream (log-normal service), arrivals ramping past its
// capacity, 0.5–1% of calls hanging to the timeout whatever the load; the
// last row has no hanging calls, but 3% of its service times exceed the
// timeout. Bounds: at least 96% of the
// successes without a tolerance, and at most 2.8× its queue timeouts; the
// first version failed two rows (2.9×, and 95.7% of the successes).
func TestHybridDropToleranceOverloadByTimeouts(t *testing.T) {
	const ms = time.Millisecond
	s := time.Second
	for _, tc := range []struct {
		name string
		c    fifo
	}{
		// measured: successes and queue timeouts, with the default
		// tolerance / without one (the first version's in brackets)
		{"1 client, 10 workers, 50 ms (p99 60), timeout 70 ms, 100 → 300 calls/s, 1% hang", // 36,711 / 37,009; 1,226 / 690 (36,168; 1,802)
			fifo{240 * s, 100, 300, 30 * s, 210 * s, 10, 50 * ms, 60 * ms, 70 * ms, 0.01, 1, 1}},
		{"1 client, 10 workers, timeout 90 ms", // 38,617 / 39,251; 1,012 / 403 (38,444; 1,180)
			fifo{240 * s, 100, 300, 30 * s, 210 * s, 10, 50 * ms, 60 * ms, 90 * ms, 0.01, 1, 1}},
		{"1 client, 5 workers, timeout 90 ms, 50 → 150 calls/s", // 18,190 / 18,244; 910 / 842 (17,642; 1,297)
			fifo{240 * s, 50, 150, 30 * s, 210 * s, 5, 50 * ms, 60 * ms, 90 * ms, 0.01, 1, 1}},
		{"4 clients, 40 workers, timeout 70 ms, 400 → 1,200 calls/s, 0.5% hang", // 153,861 / 155,986; 5,124 / 3,354 (152,264; 6,367)
			fifo{240 * s, 400, 1200, 30 * s, 210 * s, 40, 50 * ms, 60 * ms, 70 * ms, 0.005, 4, 4}},
		{"1 client, 10 workers, 500 ms (p99 1.5 s), timeout 1.2 s, 30 calls/s, no hang", // 3,513 / 3,487; 320 / 296 (3,338; 424)
			fifo{240 * s, 30, 30, 0, s, 10, 500 * ms, 1500 * ms, 1200 * ms, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var with, without fifoResult
			for _, tol := range []float64{0, -1} {
				synctest.Test(t, func(t *testing.T) {
					r := tc.c.run(func() Algorithm { h, _ := NewHybrid(HybridConfig{DropTolerance: tol}); return h })
					if tol == 0 {
						with = r
					} else {
						without = r
					}
				})
			}
			t.Logf("successes %d / %d, queue timeouts %d / %d", with.ok, without.ok, with.queueTOs, without.queueTOs)
			if float64(with.ok) < 0.96*float64(without.ok) || float64(with.queueTOs) > 2.8*float64(without.queueTOs) {
				t.Errorf("with the tolerance %d successes and %d queue timeouts, without %d and %d; want at least 96%% of the successes and at most 2.8× the timeouts",
					with.ok, with.queueTOs, without.ok, without.queueTOs)
			}
		})
	}
}

// A window of nothing but drops is congested whatever the tolerance: the
// first version tested each window against d × S plus its noise, which
// for DropTolerance ≥ 0.172 (then accepted up to 0.5) let a window of one
// drop through, so a total outage at a few calls/s never lowered the
// limit (review finding: at 2 calls/s and 0.3, the limit stayed at 20 for
// 5 min of timeouts). The run: 30 s healthy at 50.3 ms, then every call
// times out at 1 s for 2 min; the limit must be at 1 from 1 min into the
// outage on.
func TestHybridDropToleranceOutage(t *testing.T) {
	for _, tc := range []struct {
		rate int     // calls/s
		tol  float64 // DropTolerance
	}{
		{2, 0.1}, {10, 0.1}, {100, 0.1}, {2, 0}, {100, 0},
	} {
		t.Run(fmt.Sprintf("%d calls/s, tolerance %v", tc.rate, tc.tol), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, err := NewHybrid(HybridConfig{DropTolerance: tc.tol})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: h})
				arr := runOpenLoop(l, tc.rate, time.Second+300*time.Microsecond, []phase{
					{dur: 30 * time.Second, rtt: 50*time.Millisecond + 300*time.Microsecond},
					{dur: 2 * time.Minute, rtt: time.Minute},
				})
				for _, a := range arr {
					if a.at >= 90*time.Second && a.limit != 1 {
						t.Fatalf("limit %d at %v, 60 s into a total outage; want 1", a.limit, a.at-30*time.Second)
					}
				}
			})
		})
	}
}

// Update is public: a Window no Limiter would make (negative samples,
// more drops than samples) must not drive the limit up or to NaN.
func TestHybridOddWindows(t *testing.T) {
	for _, w := range []Window{
		{Duration: time.Second, Samples: -5, Drops: 3},
		{Duration: time.Second, Samples: 5, Drops: 9},
		{Duration: time.Second, Samples: 5, Drops: -3, MeanRTT: 50 * time.Millisecond, MaxInFlight: 2},
	} {
		h, err := NewHybrid(HybridConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Update(20, w); got > 20 || got < 1 {
			t.Errorf("Update(20, %+v) = %d; want 1..20", w, got)
		}
	}
}

// At a background share right at the tolerance, one window in 30 passes
// the 2σ test by chance. Such a conviction used to open a congestion
// episode, whose ssthresh (at most the window's peak in-flight: the demand
// of that moment) then capped slow start: a start-up could crawl at +1 per
// window, and a later surge of demand was served at +1 per window for
// good. Found by the third adversarial review; now a conviction by drops
// alone within 3 standard deviations of the tolerance cuts but opens no
// episode. Poisson arrivals, 50.3 ms, seeded (runs repeat).
func TestHybridDropToleranceFalseAlarms(t *testing.T) {
	const rtt = 50*time.Millisecond + 300*time.Microsecond
	t.Run("start-up at 4,000 calls/s, 2% background", func(t *testing.T) {
		// measured, seeds 1–4: 6,193, 4,214, 9,019, 7,700 calls shed of
		// 120,000, the last 2.6–3.5 s in (without drops: 3,990 at 1.5 s);
		// before, seed 3 shed 29,468, the last 29.9 s in
		for seed := uint64(1); seed <= 4; seed++ {
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, Config{})
				shed, last := 0, time.Duration(0)
				for _, a := range runArrivals(l, 4000, 0, []phase{{dur: 30 * time.Second, rtt: rtt, drop: 0.02}}, seed) {
					if a.shed {
						shed++
						last = a.at
					}
				}
				if shed > 12000 || last > 6*time.Second {
					t.Errorf("seed %d: %d calls shed, the last %v in; want at most 12,000, none after 6 s", seed, shed, last)
				}
			})
		}
	})
	// A surge of demand after 2 min of quiet at a background share of
	// drops: any conviction in the quiet spell (at 40 calls/s a window of
	// 10 samples with 2 drops passes even the 3σ test, about once a
	// minute at 1%) left ssthresh at the quiet demand, so the surge grew
	// at +1 per window. Slow start now also runs once the limit is past
	// twice ssthresh and the limit the episode began at.
	for _, tc := range []struct {
		quiet int     // calls/s before the surge to 4,000
		drop  float64 // background share
		// measured, seeds 1–2: calls shed of the surge's first 30 s
		// (120,000); before the two fixes
	}{
		{400, 0.01}, // 1,025, 1,064; 40,225–41,910
		{400, 0.02}, // 5,246, 3,034; 46,065–52,579
		{40, 0.01},  // 4,304, 4,775; 74,144–75,785
		{100, 0.02}, // 7,163, 6,128; 71,748–73,103
	} {
		t.Run(fmt.Sprintf("surge %d → 4,000 calls/s after 2 min, %v%% background", tc.quiet, 100*tc.drop), func(t *testing.T) {
			for seed := uint64(1); seed <= 2; seed++ {
				synctest.Test(t, func(t *testing.T) {
					l := mustNew(t, Config{})
					runArrivals(l, tc.quiet, 0, []phase{{dur: 2 * time.Minute, rtt: rtt, drop: tc.drop}}, seed)
					shed, last := 0, time.Duration(0)
					for _, a := range runArrivals(l, 4000, 0, []phase{{dur: 30 * time.Second, rtt: rtt, drop: tc.drop}}, seed+100) {
						if a.shed {
							shed++
							last = a.at
						}
					}
					t.Logf("seed %d: %d shed, the last %v in", seed, shed, last)
					if shed > 12000 || last > 5*time.Second {
						t.Errorf("seed %d: %d calls shed, the last %v into the surge; want at most 12,000, none after 5 s", seed, shed, last)
					}
				})
			}
		})
	}
}
