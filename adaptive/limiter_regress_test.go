package adaptive

import (
	"testing"
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
			var l *Limiter
			depth := 0
			l = mustNew(t, Config{Algorithm: raiseEach{}, MinSamples: 1, WindowMin: time.Millisecond, WindowMax: time.Millisecond,
				OnLimitChange: func(from, to int, _ Window) {
					if depth++; depth > 1 {
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
			done := make(chan struct{})
			go func() {
				defer close(done)
				if !l.Acquire() {
					t.Error("shed")
					return
				}
				l.Release(time.Now(), 10*time.Millisecond, Success) // closes the first window
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second): // a watchdog only: the test returns at once unless it deadlocks
				t.Fatal("Release deadlocked: OnLimitChange's own call into the limiter waits for the callback to return")
			}
			if depth != 2 {
				t.Errorf("OnLimitChange ran %d times, want 2 (the outer window and the one its call closed)", depth)
			}
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
