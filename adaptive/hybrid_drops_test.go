package adaptive

import (
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
// to 3% sheds nothing, while a downstream whose own limiter answers 503
// beyond its capacity is still backed off from: the limit stays near that
// capacity. The run: 30 s healthy, then 150 s in the row's condition; the
// figures are over its last 60 s (rate × 60 calls). Without the tolerance
// the limit keeps falling: 1% of drops shed 14% of the calls in the
// second minute and 30% in the third. Each RTT is 50.3 ms,
// so that no call ends at the instant another arrives: runs repeat
// exactly.
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
		{"5% background at 100 calls/s", 100, 0, 0.05, 0, 0, 60, 1000},               // 0, 13
		{"1% background, no tolerance", 1000, -1, 0.01, 0, 12000, 30000, 1000},       // 18,192 (30%), 40
		{"2% background, no tolerance", 1000, -1, 0.02, 0, 20000, 40000, 1000},       // 29,090 (48%), 38
		{"503 beyond 40 in flight", 1000, 0, 0, 40, 12000, 18000, 48},                // 14,575 (24%; 20.5% at best), 41
		{"503 beyond 40 in flight, no tolerance", 1000, -1, 0, 40, 12000, 18000, 48}, // 14,560 (24%), 41
		{"503 beyond 4 in flight at 100 calls/s", 100, 0, 0, 4, 1200, 2100, 6},       // 1,564 (26%; 20.5% at best), 5
		{"503 beyond 10 in flight at 300 calls/s", 300, 0, 0, 10, 6000, 8000, 12},    // 6,909 (38%; 34% at best), 11
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
