package adaptive

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// One success far faster than the rest (a cached answer) must not make
// Vegas read every later window as a queue (Netflix concurrency-limits
// issue #37). The downstream answers in 20.3 ms with capacity to spare;
// 2,000 calls/s keep 41 in flight; InitialLimit 60, so that the first
// windows bind (peak in-flight ≥ limit/2) and Vegas acts on them; the
// 101st call answers in 0.05 ms; 30 s. With the no-load RTT the smallest
// sample, it became 0.05 ms: every binding window read as a queue of the
// whole limit, which fell to 5 and stayed there (42,258 calls shed) until
// the next probe; the code before took that RTT and probed every 30 ×
// limit samples (about every second here), which reset it after 3
// windows (60 → 54, nothing shed) but not with a ProbeMultiplier of 1000
// (60 → 11, 4,803 shed).
func TestVegasFastOutlier(t *testing.T) {
	const rtt = 20*time.Millisecond + 300*time.Microsecond
	for _, tc := range []struct {
		name  string
		probe int    // ProbeMultiplier; 0: the default
		seed  uint64 // arrivals: 0 evenly spaced, else Poisson
	}{
		// measured: calls shed, lowest limit; before (smallest sample; the
		// probe in samples): the same; the smallest sample, the probe in windows
		{"default probe", 0, 0},                    // 0, 60; 0, 54; 42,258, 5
		{"ProbeMultiplier 1000", 1000, 0},          // 0, 60; 4,803, 11
		{"Poisson arrivals", 0, 1},                 // 0, 60; 0, 54; 42,849, 5
		{"Poisson, ProbeMultiplier 1000", 1000, 1}, // 0, 60; 5,397, 11
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, err := NewVegas(VegasConfig{ProbeMultiplier: tc.probe})
				if err != nil {
					t.Fatal(err)
				}
				l := mustNew(t, Config{Algorithm: v, InitialLimit: 60})
				arr := openLoop(l, 2000, 30*time.Second, tc.seed, func(i int) (time.Duration, Outcome) {
					if i == 100 {
						return 50 * time.Microsecond, Success
					}
					return rtt, Success
				})
				shed, lo := 0, 1<<30
				for _, x := range arr {
					lo = min(lo, x.limit)
					if x.shed {
						shed++
					}
				}
				t.Logf("%d of %d calls shed; limit at least %d, final %d, no-load RTT %v", shed, len(arr), lo, l.Limit(), l.BaselineRTT())
				if shed > 0 || lo <= 41 {
					t.Errorf("%d calls shed, limit down to %d; want none shed and the limit above the demand of 41", shed, lo)
				}
			})
		})
	}
}

// Vegas must still cut on a real queue: a downstream of N workers behind a
// FIFO queue, offered half its capacity for 10 s and then twice it (ramped
// over 10 s), must hold the limit near N: Vegas keeps 3L to 6L calls
// queued (L = log10(limit)). Service times are log-normal (median 20 ms,
// p99 30 ms); the limit is read over the last 30 s of 60. With the
// no-load RTT the smallest sample, the spread of service times read as a
// queue and the limit held at 8 to 11 whatever N; with the window mean
// but the probe every 30 × limit samples (about every second here), each
// probe took the standing queue for no load and the limit climbed to 4×
// to 8× N.
func TestVegasHoldsQueueNearWorkers(t *testing.T) {
	for _, tc := range []struct {
		workers int
		lo, hi  int // band of the limit over the last 30 s
	}{
		// measured: limit; before (smallest sample, probe in samples);
		// smallest sample, probe in windows; window mean, probe in samples
		{5, 7, 12},   // 10; 9; 8; 39–84
		{10, 13, 18}, // 16; 10–11; 10; 69–125
		{20, 23, 30}, // 27; 10–11; 10; 107–182
		{50, 54, 62}, // 58; 11; 10; 196–313
	} {
		t.Run(fmt.Sprintf("%d workers", tc.workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v, err := NewVegas(VegasConfig{})
				if err != nil {
					t.Fatal(err)
				}
				rec := &recorder{Algorithm: v}
				capacity := float64(tc.workers) / 0.020 // calls/s
				res := fifo{dur: time.Minute, r0: capacity / 2, r1: 2 * capacity, rampFrom: 10 * time.Second, rampTo: 20 * time.Second,
					workers: tc.workers, median: 20 * time.Millisecond, p99: 30 * time.Millisecond, timeout: time.Second, clients: 1, seed: 1,
				}.run(func() Algorithm { return rec })
				last := rec.limits[len(rec.limits)/2:]
				lo, hi := last[0], last[0]
				for _, x := range last {
					lo, hi = min(lo, x), max(hi, x)
				}
				t.Logf("%d workers: limit %d..%d over the last 30 s; %d successes, %d queue timeouts", tc.workers, lo, hi, res.ok, res.queueTOs)
				if lo < tc.lo || hi > tc.hi {
					t.Errorf("%d workers: limit %d..%d over the last 30 s; want within %d..%d", tc.workers, lo, hi, tc.lo, tc.hi)
				}
			})
		})
	}
}
