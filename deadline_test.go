package floodgate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// downstream answers after latency(), or returns ctx's error if ctx ends first.
func downstream(latency func() time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(latency())
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Issue 13, defect 11: callers' own short deadlines counted as downstream
// failures. In the trial, eight callers with 1 ms deadlines against a
// healthy 2 ms downstream opened the breaker, and patient callers then got
// 60% ErrOpen. An attempt cut by the caller's deadline before the
// downstream's normal latency says nothing about the downstream: the
// breaker and the limiter ignore it.
func TestShortCallerDeadlinesDoNotTrip(t *testing.T) {
	for _, tc := range []struct {
		name              string
		impatient         int           // callers
		impatientDeadline time.Duration // each call's deadline
		patient           int           // callers with a 1 s deadline
		latency           time.Duration // the healthy downstream's
		run               time.Duration
	}{
		{"trial: 8 callers at 1 ms, 2 ms downstream", 8, time.Millisecond, 8, 2 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opened atomic.Int64
				g := mustGate(t, WithBreaker(breaker.Config{OnStateChange: func(_ string, _, to breaker.State) {
					if to == breaker.Open {
						opened.Add(1)
					}
				}}))
				fn := downstream(func() time.Duration { return tc.latency })
				var patientCalls, patientErrs, patientOpen, impatientCalls atomic.Int64
				stop := time.Now().Add(tc.run)
				var wg sync.WaitGroup
				caller := func(deadline time.Duration, calls, errs, open *atomic.Int64) {
					defer wg.Done()
					for time.Now().Before(stop) {
						ctx, cancel := context.WithTimeout(context.Background(), deadline)
						err := g.Guard(ctx, fn)
						cancel()
						calls.Add(1)
						if err != nil && errs != nil {
							errs.Add(1)
							if errors.Is(err, ErrOpen) {
								open.Add(1)
							}
						}
						time.Sleep(time.Millisecond)
					}
				}
				for range tc.impatient {
					wg.Add(1)
					go caller(tc.impatientDeadline, &impatientCalls, nil, nil)
				}
				for range tc.patient {
					wg.Add(1)
					go caller(time.Second, &patientCalls, &patientErrs, &patientOpen)
				}
				wg.Wait()
				t.Logf("%d impatient calls; %d patient calls, %d failed (%d ErrOpen); breaker opened %d times",
					impatientCalls.Load(), patientCalls.Load(), patientErrs.Load(), patientOpen.Load(), opened.Load())
				if n := opened.Load(); n != 0 {
					t.Errorf("breaker opened %d times against a healthy downstream", n)
				}
				if n := patientErrs.Load(); n != 0 {
					t.Errorf("%d of %d patient calls failed (%d ErrOpen; the trial: 60%% ErrOpen), want all served",
						n, patientCalls.Load(), patientOpen.Load())
				}
			})
		})
	}
}

// The rule must not blind the gate: with only a caller deadline (no
// AttemptTimeout), a 20× slowdown (S1's 100 ms -> 2 s) cuts every attempt
// at the deadline after it ran longer than the downstream's normal
// latency, and those still count: the limiter sees drops and cuts the
// limit, and the breaker opens.
func TestSlowdownWithOnlyCallerDeadlineStillTrips(t *testing.T) {
	for _, tc := range []struct {
		name            string
		callers         int
		deadline        time.Duration // each call's, the caller's own
		normal, slow    time.Duration // the downstream's latency before and after the onset
		onset, run      time.Duration
		limitBelow      int           // the limit must fall below this after the onset
		breakerOpenedBy time.Duration // after the onset
	}{
		{"S1-style: 20 callers, deadline 1 s, 100 ms -> 2 s", 20, time.Second, 100 * time.Millisecond, 2 * time.Second,
			5 * time.Second, 20 * time.Second, 20, 12 * time.Second},
		// Before the first window with successes the normal latency is the
		// breaker's SlowCall (1 s): a downstream that hangs from the start
		// is still caught by 2 s caller deadlines.
		{"hangs from the start: 20 callers, deadline 2 s", 20, 2 * time.Second, 0, time.Hour,
			0, 20 * time.Second, 20, 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var openedAt atomic.Int64 // since start; 0: never
				var drops atomic.Int64    // drops in the windows that closed after the onset
				var minLimit atomic.Int64
				minLimit.Store(1 << 30)
				g := mustGate(t,
					WithBreaker(breaker.Config{OnStateChange: func(_ string, _, to breaker.State) {
						if to == breaker.Open {
							openedAt.CompareAndSwap(0, int64(time.Since(start)))
						}
					}}),
					WithLimiter(adaptive.Config{OnLimitChange: func(_, to int, w adaptive.Window) {
						if time.Since(start) > tc.onset {
							drops.Add(int64(w.Drops))
							if int64(to) < minLimit.Load() {
								minLimit.Store(int64(to))
							}
						}
					}}),
					WithRetry(retry.Config{MaxAttempts: 1}))
				fn := downstream(func() time.Duration {
					if time.Since(start) >= tc.onset {
						return tc.slow
					}
					return tc.normal
				})
				var wg sync.WaitGroup
				for range tc.callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Since(start) < tc.run {
							ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
							_ = g.Guard(ctx, fn)
							cancel()
							time.Sleep(10 * time.Millisecond)
						}
					}()
				}
				wg.Wait()
				at := time.Duration(openedAt.Load())
				t.Logf("after the onset: %d drops, lowest limit %d; breaker opened at %v (onset %v)", drops.Load(), minLimit.Load(), at, tc.onset)
				if drops.Load() == 0 || minLimit.Load() >= int64(tc.limitBelow) {
					t.Errorf("after the onset the limiter saw %d drops and its lowest limit was %d, want drops and a limit below %d",
						drops.Load(), minLimit.Load(), tc.limitBelow)
				}
				if at == 0 || at-tc.onset > tc.breakerOpenedBy {
					t.Errorf("breaker opened at %v, want within %v of the onset at %v", at, tc.breakerOpenedBy, tc.onset)
				}
			})
		})
	}
}
