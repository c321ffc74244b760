package adaptive

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// SetCap takes [0, 1<<20] and names the range in its error otherwise.
func TestSetCapRange(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{-1, false}, {0, true}, {1, true}, {30, true}, {1 << 20, true}, {1<<20 + 1, false}, {-1 << 40, false}} {
		l := mustNew(t, Config{})
		err := l.SetCap(tc.n)
		if (err == nil) != tc.ok {
			t.Errorf("SetCap(%d): %v, want ok %v", tc.n, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "[0, 1048576]") {
			t.Errorf("SetCap(%d): %q does not name the range", tc.n, err)
		}
		if want := map[bool]int{true: tc.n, false: 0}[tc.ok]; l.Cap() != want {
			t.Errorf("SetCap(%d): Cap() %d, want %d", tc.n, l.Cap(), want)
		}
	}
}

// Lowering the cap lowers the limit at once, even below MinLimit; calls in
// flight above it finish, no new call is admitted until fewer than the cap
// are in flight; raising or removing the cap does not raise the limit.
func TestSetCapLowersLimitAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		initial, minLimit, cap int
		inFlight, wantLimit    int
	}{
		{"under the limit", 20, 1, 10, 15, 10},
		{"below MinLimit", 20, 8, 3, 15, 3},
		{"above the limit", 20, 1, 50, 15, 20},
		{"above MaxLimit", 20, 1, 1 << 20, 15, 20},
		{"cap one", 20, 1, 1, 5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustNew(t, Config{Algorithm: Fixed{}, InitialLimit: tc.initial, MinLimit: tc.minLimit})
			for range tc.inFlight {
				if !l.Acquire() {
					t.Fatal("shed under the limit")
				}
			}
			if err := l.SetCap(tc.cap); err != nil {
				t.Fatal(err)
			}
			if l.Limit() != tc.wantLimit || l.Cap() != tc.cap {
				t.Fatalf("after SetCap(%d): limit %d cap %d, want %d %d", tc.cap, l.Limit(), l.Cap(), tc.wantLimit, tc.cap)
			}
			start := time.Now()
			// Release down to one below the limit: each Acquire before is shed.
			for l.InFlight() >= tc.wantLimit {
				if l.Acquire() {
					t.Fatalf("admitted with %d in flight at limit %d", l.InFlight()-1, l.Limit())
				}
				l.Release(start, 0, Ignore)
			}
			if !l.Acquire() {
				t.Fatalf("shed with %d in flight at limit %d", l.InFlight(), l.Limit())
			}
			if err := l.SetCap(0); err != nil {
				t.Fatal(err)
			}
			if l.Limit() != tc.wantLimit || l.Cap() != 0 {
				t.Errorf("after SetCap(0): limit %d cap %d, want %d 0", l.Limit(), l.Cap(), tc.wantLimit)
			}
		})
	}
}

// Acquire's growth on demand (Gradient, a Grower) stops at the cap.
func TestCapBoundsGrowth(t *testing.T) {
	for _, cp := range []int{1, 5, 8, 40} {
		l := mustNew(t, Config{InitialLimit: 2})
		if err := l.SetCap(cp); err != nil {
			t.Fatal(err)
		}
		admitted := 0
		for range 100 {
			if l.Acquire() {
				admitted++
			}
		}
		if admitted != cp || l.Limit() > cp {
			t.Errorf("cap %d: %d admitted, limit %d; want %d, ≤ %d", cp, admitted, l.Limit(), cp, cp)
		}
	}
	// Without a cap the same demand grows it further: the cap is what stops it.
	l := mustNew(t, Config{InitialLimit: 2})
	admitted := 0
	for range 100 {
		if l.Acquire() {
			admitted++
		}
	}
	if admitted != 100 {
		t.Errorf("no cap: %d admitted, want 100", admitted)
	}
}

// Closing windows never set the limit above the cap, with every algorithm,
// under a demand that keeps the limit full of fast successes (each
// algorithm's signal to grow), with the cap above and below MinLimit; once
// the cap is removed, the algorithms that grow on fast successes do.
func TestCapBoundsWindows(t *testing.T) {
	for name, alg := range algorithms(t) {
		for _, tc := range []struct{ minLimit, cap int }{{1, 7}, {10, 4}, {1, 1}} {
			t.Run(fmt.Sprintf("%s/min%d/cap%d", name, tc.minLimit, tc.cap), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					l := mustNew(t, Config{Algorithm: alg(), InitialLimit: 10, MinLimit: tc.minLimit, MaxLimit: 200,
						WindowMin: 10 * time.Millisecond, WindowMax: 50 * time.Millisecond, MinSamples: 1})
					if err := l.SetCap(tc.cap); err != nil {
						t.Fatal(err)
					}
					var peakLimit, peakInFlight atomic.Int64
					run := func(d time.Duration) {
						var wg sync.WaitGroup
						stop := time.Now().Add(d)
						for range 64 {
							wg.Go(func() {
								for time.Now().Before(stop) {
									if !l.Acquire() {
										time.Sleep(time.Millisecond)
										continue
									}
									raise(&peakInFlight, int64(l.InFlight()))
									raise(&peakLimit, int64(l.Limit()))
									start := time.Now()
									time.Sleep(time.Millisecond)
									l.Release(start, time.Since(start), Success)
									raise(&peakLimit, int64(l.Limit()))
								}
							})
						}
						wg.Wait()
					}
					run(2 * time.Second)
					if p := peakLimit.Load(); p > int64(tc.cap) || peakInFlight.Load() > int64(tc.cap) {
						t.Errorf("min %d cap %d: peak limit %d, peak in flight %d; want ≤ cap", tc.minLimit, tc.cap, p, peakInFlight.Load())
					}
					if err := l.SetCap(0); err != nil {
						t.Fatal(err)
					}
					peakLimit.Store(0)
					run(5 * time.Second)
					if name != "Vegas" && name != "Gradient2" && peakLimit.Load() <= int64(max(tc.cap, tc.minLimit)) {
						t.Errorf("min %d, cap %d then none: peak limit %d; want it to grow once uncapped", tc.minLimit, tc.cap, peakLimit.Load())
					}
				})
			})
		}
	}
}

// Under -race: callers acquire and release (Gradient, growing on demand,
// closing windows) while the cap moves between 3 and 60; once the cap is 3
// and the callers stopped, the limit and the calls in flight are at most 3,
// whatever interleaving the cap changes had with the growth.
func TestSetCapConcurrent(t *testing.T) {
	l := mustNew(t, Config{InitialLimit: 5, WindowMin: time.Millisecond, MinSamples: 1})
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				if l.Acquire() {
					start := time.Now()
					l.Release(start, time.Since(start), Success)
				}
			}
		})
	}
	for i := range 2000 {
		if err := l.SetCap([]int{3, 60}[i%2]); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := l.SetCap(3); err != nil {
		t.Fatal(err)
	}
	// The cap is constant from here: no limit or admission above it.
	for range 20000 {
		if lim := l.Limit(); lim > 3 {
			// A raise begun before SetCap(3) may be seen for an instant;
			// it is brought back by the raiser itself.
			time.Sleep(time.Millisecond)
			if lim := l.Limit(); lim > 3 {
				t.Fatalf("limit %d under cap 3", lim)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if l.Limit() > 3 || l.InFlight() != 0 {
		t.Errorf("limit %d, in flight %d; want ≤ 3, 0", l.Limit(), l.InFlight())
	}
	if l.TakePeakInFlight(); l.TakePeakInFlight() > 3 {
		t.Error("peak in flight above the cap")
	}
}
