package adaptive

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// raiseEach is an Algorithm that raises the limit at every window, so that
// each closed window calls OnLimitChange.
type raiseEach struct{}

func (raiseEach) Update(limit int, _ Window) int { return limit + 1 }

// OnLimitChange "runs after the limiter's lock is released", like the
// breaker's OnStateChange, which may call back into the gate: a callback
// that makes a call through the same limiter (a guarded call from the
// callback, a log handler shipping through the same gate) must not
// deadlock when that call closes a window that moves the limit.
func TestOnLimitChangeReentrantRelease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inner Outcome
	}{
		{"inner success", Success},
		{"inner drop", Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l *Limiter
				var depth atomic.Int32
				l = mustNew(t, Config{Algorithm: raiseEach{}, MinSamples: 1, WindowMin: time.Millisecond, WindowMax: time.Millisecond,
					OnLimitChange: func(from, to int, _ Window) {
						if depth.Add(1) > 1 {
							return
						}
						// A call made from the callback; its start is past the
						// next window's minimum age, so its Release closes it.
						if !l.Acquire() {
							t.Error("the callback's call was shed")
							return
						}
						l.Release(time.Now().Add(time.Hour), 10*time.Millisecond, tc.inner)
					}})
				if !l.Acquire() {
					t.Fatal("shed")
				}
				l.Release(time.Now(), 10*time.Millisecond, Success) // closes the first window
				synctest.Wait()                                     // a deadlock fails the test here
				if n := depth.Load(); n != 2 {
					t.Errorf("OnLimitChange ran %d times, want 2 (the outer window and the one its call closed)", n)
				}
			})
		})
	}
}

// OnLimitChange had the shape of breaker defects 1 and 2: it ran on the
// goroutine calling Release, so a callback that blocked held that caller
// (a Guard call past its deadline) and a callback's panic came out of
// Release into the user's call. Now it runs on a goroutine of the
// limiter's own: a blocking callback delays later callbacks only, a panic
// is recovered and counted, and later changes are still delivered.
func TestLimitCallbackNeverHoldsACaller(t *testing.T) {
	for _, tc := range []struct {
		name       string
		block      bool // the first callback blocks until released
		panics     bool // every callback panics
		wantPanics int64
	}{
		{"blocks", true, false, 0},
		{"panics", false, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				unblock := make(chan struct{})
				var calls atomic.Int32
				l := mustNew(t, Config{Algorithm: raiseEach{}, MinSamples: 1, WindowMin: time.Millisecond, WindowMax: time.Millisecond,
					OnLimitChange: func(int, int, Window) {
						if calls.Add(1) == 1 && tc.block {
							<-unblock
						}
						if tc.panics {
							panic("limit callback")
						}
					}})
				for i := range 3 { // three windows, three limit changes
					if !l.Acquire() {
						t.Fatal("shed")
					}
					start := time.Now()
					l.Release(start, 10*time.Millisecond, Success) // would panic or block here before
					if d := time.Since(start); d != 0 {
						t.Errorf("window %d: Release took %v of fake time, want 0", i, d)
					}
					time.Sleep(2 * time.Millisecond)
				}
				synctest.Wait()
				if tc.block {
					if n := calls.Load(); n != 1 {
						t.Errorf("%d callbacks ran while the first blocks, want 1 (in order, never concurrent)", n)
					}
					close(unblock)
					synctest.Wait()
				}
				if n := calls.Load(); n != 3 {
					t.Errorf("%d callbacks ran, want 3", n)
				}
				if n := l.CallbackPanics(); n != tc.wantPanics {
					t.Errorf("CallbackPanics %d, want %d", n, tc.wantPanics)
				}
				if l.Limit() != DefaultInitialLimit+3 {
					t.Errorf("limit %d, want %d", l.Limit(), DefaultInitialLimit+3)
				}
			})
		})
	}
}

// panicsOnce is an Algorithm whose first Update panics (a bug in a custom
// algorithm), or whose first Baseline does.
type panicsOnce struct {
	inUpdate bool
	n        int
}

func (p *panicsOnce) Update(limit int, _ Window) int {
	if p.n++; p.n == 1 && p.inUpdate {
		panic("algorithm")
	}
	return limit + 1
}

func (p *panicsOnce) Baseline() time.Duration {
	if p.n == 1 && !p.inUpdate {
		panic("algorithm")
	}
	return time.Millisecond
}

// A custom Algorithm (or Baseliner) that panics once, inside the window
// close, must not leave the limiter's lock held: before OnLimitChange,
// closeWindow unlocked with defer; now the next window's Release blocks
// for ever, and so does the Guard call that made it.
func TestAlgorithmPanicKeepsLock(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inUpdate bool
		onChange func(int, int, Window)
	}{
		{"Update panics", true, nil},
		{"Baseline panics", false, nil},
		{"Update panics, with OnLimitChange", true, func(int, int, Window) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustNew(t, Config{Algorithm: &panicsOnce{inUpdate: tc.inUpdate}, MinSamples: 1,
				WindowMin: time.Millisecond, WindowMax: time.Millisecond, OnLimitChange: tc.onChange})
			base := time.Now()
			release := func(at time.Duration) {
				if !l.Acquire() {
					t.Error("shed")
					return
				}
				l.Release(base.Add(at), 10*time.Millisecond, Success)
			}
			func() {
				defer func() {
					if r := recover(); r != "algorithm" {
						t.Errorf("recovered %v, want the algorithm's panic", r)
					}
				}()
				release(0) // closes the first window: the algorithm panics
			}()
			done := make(chan struct{})
			go func() { defer close(done); release(time.Second) }() // closes the next window
			select {
			case <-done:
			case <-time.After(5 * time.Second): // a watchdog only: the test returns at once unless it deadlocks
				t.Fatal("the next window's Release blocked: the limiter's lock was left held by the panic")
			}
			if n := l.InFlight(); n != 0 {
				t.Errorf("in flight %d, want 0", n)
			}
		})
	}
}

// Limiter.Release takes the call's start and RTT from the caller. Before
// stop 27 a zero start (time.Time{}) put the sample at about −292 years, so
// its window's age was negative: a Limiter given only such starts never
// closed a window, and each such sample still counted in the next window
// with its RTT. A negative RTT likewise lowered the window's mean RTT.
// Measured before: 10 zero starts of 1 s and 10 negative RTTs of −1 s,
// then, 300 ms later, 10 calls of 10 ms: the first of them closed a window
// of 21 samples, mean RTT 476 µs. Now such a call gives its slot back and
// is no sample: the tenth closes a window of 10 samples, mean 10 ms.
func TestReleaseIgnoresZeroStartAndNegativeRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &winRecorder{}
		l := mustNew(t, Config{Algorithm: rec, MinSamples: 10})
		for range 10 {
			if !l.Acquire() {
				t.Fatal("shed")
			}
			l.Release(time.Time{}, time.Second, Success)
			if !l.Acquire() {
				t.Fatal("shed")
			}
			l.Release(time.Now(), -time.Second, Success)
		}
		time.Sleep(300 * time.Millisecond) // past WindowMin (250 ms)
		for range 10 {
			if !l.Acquire() {
				t.Fatal("shed")
			}
			l.Release(time.Now(), 10*time.Millisecond, Success)
		}
		if l.InFlight() != 0 {
			t.Errorf("%d in flight after every call was released; want 0", l.InFlight())
		}
		if len(rec.ws) != 1 {
			t.Fatalf("%d windows closed; want 1", len(rec.ws))
		}
		if w := rec.ws[0]; w.Samples != 10 || w.MeanRTT != 10*time.Millisecond {
			t.Errorf("window: %d samples, mean RTT %v; want 10 and 10ms (the zero starts and negative RTTs are no samples)", w.Samples, w.MeanRTT)
		}
	})
}
