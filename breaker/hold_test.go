package breaker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A hold refuses calls whatever the breaker's own state, but for its probe
// allowance; it ends after its duration or at Release; the state machine
// does not see it.
func TestHold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d        time.Duration
		probes   int
		calls    int           // Allow calls made at once after Hold
		admitted int           // of which admitted
		held     bool          // Held after them
		wait     time.Duration // then, after waiting this long:
		heldThen bool          // Held, and whether a call is admitted (the contrary)
	}{
		{"no probes", time.Second, 0, 5, 0, true, 999 * time.Millisecond, true},
		{"ends after d", time.Second, 0, 5, 0, true, time.Second, false},
		{"two probes", time.Second, 2, 5, 2, true, 500 * time.Millisecond, true},
		{"negative probes count as 0", time.Second, -3, 5, 0, true, 0, true},
		{"d ≤ 0 is Release", 0, 0, 5, 5, false, 0, false},
		{"negative d is Release", -time.Second, 0, 5, 5, false, 0, false},
		{"d capped at MaxHold", 100 * time.Hour, 0, 1, 0, true, MaxHold, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{})
				b.Hold(tc.d, tc.probes)
				admitted := 0
				for range tc.calls {
					p, err := b.Allow()
					switch {
					case err == nil:
						admitted++
						b.Done(p, Success, time.Millisecond, time.Now())
					case !errors.Is(err, ErrOpen):
						t.Fatalf("Allow: %v", err)
					}
				}
				if admitted != tc.admitted || b.Held() != tc.held {
					t.Fatalf("admitted %d of %d, Held %v; want %d, %v", admitted, tc.calls, b.Held(), tc.admitted, tc.held)
				}
				if tc.held && tc.admitted == 0 {
					if got := b.RetryIn(); got != min(tc.d, MaxHold) {
						t.Errorf("RetryIn %v, want %v", got, min(tc.d, MaxHold))
					}
					if !b.OpenAt(time.Now()) {
						t.Error("OpenAt(now) false while held")
					}
				}
				time.Sleep(tc.wait)
				_, err := b.Allow()
				if b.Held() != tc.heldThen || (err != nil) != tc.heldThen {
					t.Errorf("after %v: Held %v, Allow %v; want held %v", tc.wait, b.Held(), err, tc.heldThen)
				}
				if b.State() != Closed {
					t.Errorf("State %v: a hold must not change the state machine", b.State())
				}
			})
		})
	}
}

// Release ends a hold at once; a new Hold replaces the old one, allowance
// included; OpenAt sees a hold only while its probes are spent.
func TestHoldReleaseReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{})
		b.Release() // without a hold: nothing
		b.Hold(time.Minute, 1)
		if b.OpenAt(time.Now()) {
			t.Error("OpenAt true with a probe left")
		}
		if b.RetryIn() != 0 {
			t.Errorf("RetryIn %v with a probe left, want 0", b.RetryIn())
		}
		if _, err := b.Allow(); err != nil {
			t.Fatalf("the probe: %v", err)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("after the probe: %v, want ErrOpen", err)
		}
		if !b.OpenAt(time.Now()) || b.OpenAt(time.Now().Add(time.Minute)) {
			t.Error("OpenAt: want true now, false at the hold's end")
		}
		b.Hold(time.Second, 2) // replaces: two probes again
		for i := range 2 {
			if _, err := b.Allow(); err != nil {
				t.Fatalf("probe %d of the new hold: %v", i, err)
			}
		}
		b.Release()
		if b.Held() {
			t.Error("Held after Release")
		}
		for range 10 {
			if _, err := b.Allow(); err != nil {
				t.Fatalf("after Release: %v", err)
			}
		}
	})
}

// A hold over an open breaker: RetryIn is the longer of the two; once the
// hold ends the breaker's own state decides; the probe allowance goes to
// the breaker's own machine, which refuses it while open.
func TestHoldOverOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 1, OpenFor: 2 * time.Second})
		if err := call(t, b, time.Millisecond, Failure); err != nil {
			t.Fatal(err)
		}
		if b.State() != Open {
			t.Fatalf("state %v, want open", b.State())
		}
		b.Hold(time.Second, 1)
		if got := b.RetryIn(); got != 2*time.Second {
			t.Errorf("RetryIn %v, want the breaker's 2s", got)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Errorf("probe of the hold over an open breaker: %v, want ErrOpen", err)
		}
		b.Hold(5*time.Second, 0)
		if got := b.RetryIn(); got != 5*time.Second {
			t.Errorf("RetryIn %v, want the hold's 5s", got)
		}
		time.Sleep(5 * time.Second)
		if err := call(t, b, time.Millisecond, Success); err != nil {
			t.Errorf("after the hold, half-open: %v", err)
		}
	})
}

// Under concurrency a hold admits exactly its allowance.
func TestHoldProbesConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{})
		b.Hold(time.Minute, 7)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				for range 20 {
					if p, err := b.Allow(); err == nil {
						admitted.Add(1)
						b.Done(p, Success, time.Millisecond, time.Now())
					}
				}
			})
		}
		wg.Wait()
		if admitted.Load() != 7 {
			t.Errorf("admitted %d, want 7", admitted.Load())
		}
	})
}

// ResetCounts empties the window without changing the state; Config
// returns the defaults filled in.
func TestResetCountsConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 5})
		for range 4 {
			if err := call(t, b, time.Millisecond, Failure); err != nil {
				t.Fatal(err)
			}
		}
		if c := b.Counts(); c.Calls != 4 || c.Failures != 4 {
			t.Fatalf("Counts %+v", c)
		}
		b.ResetCounts()
		if c := b.Counts(); c != (Counts{}) || b.State() != Closed {
			t.Fatalf("after ResetCounts: %+v, %v", c, b.State())
		}
		for range 4 {
			_ = call(t, b, time.Millisecond, Failure)
		}
		if b.State() != Closed {
			t.Errorf("tripped on 4 calls after the reset, MinCalls 5")
		}
		_ = call(t, b, time.Millisecond, Failure)
		if b.State() != Open {
			t.Errorf("5 failures after the reset: %v, want open", b.State())
		}
		c := b.Config()
		if c.MinCalls != 5 || c.Window != DefaultWindow || c.FailureRatio != DefaultFailureRatio || c.Probes != DefaultProbes {
			t.Errorf("Config %+v", c)
		}
	})
}

// A probe of the hold that the breaker's own state refuses gives its place
// back: once the breaker is half-open, the allowance is still there.
func TestHoldProbeRefusedGivesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 1, OpenFor: time.Second, Probes: 5})
		_ = call(t, b, time.Millisecond, Failure)
		b.Hold(time.Minute, 2)
		for range 10 {
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Fatalf("open under the hold: %v, want ErrOpen", err)
			}
		}
		time.Sleep(1100 * time.Millisecond) // half-open
		admitted := 0
		for range 5 {
			if err := call(t, b, time.Millisecond, Success); err == nil {
				admitted++
			}
		}
		if admitted != 2 {
			t.Errorf("half-open under a hold of 2 probes admitted %d, want 2", admitted)
		}
	})
}
