package breaker

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t *testing.T, cfg Config) *Breaker {
	t.Helper()
	b, err := New("test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call runs one call through b that takes rtt and ends with o.
func call(t *testing.T, b *Breaker, rtt time.Duration, o Outcome) error {
	t.Helper()
	p, err := b.Allow()
	if err != nil {
		return err
	}
	start := time.Now()
	time.Sleep(rtt)
	b.Done(p, o, time.Since(start), time.Now())
	return nil
}

// The breaker trips on the failure ratio and on the slow-call ratio, but
// only once the window holds MinCalls calls; ignored calls never count.
func TestTrips(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		calls    []Outcome
		rtt      time.Duration
		wantOpen bool
	}{
		{"failures below MinCalls", Config{MinCalls: 20}, repeat(Failure, 19), time.Millisecond, false},
		{"failures at MinCalls", Config{MinCalls: 20}, repeat(Failure, 20), time.Millisecond, true},
		{"40% failures under 50%", Config{MinCalls: 10}, mix(6, 4), time.Millisecond, false},
		{"50% failures", Config{MinCalls: 10}, mix(5, 5), time.Millisecond, true},
		{"slow successes (2 s, SlowCall 1 s)", Config{MinCalls: 5}, repeat(Success, 5), 2 * time.Second, true},
		{"fast successes", Config{MinCalls: 10}, repeat(Success, 100), 100 * time.Millisecond, false},
		{"ignored calls do not count", Config{MinCalls: 10}, repeat(Ignore, 100), 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, tc.cfg)
				for _, o := range tc.calls {
					var wg sync.WaitGroup
					wg.Add(1)
					go func() { defer wg.Done(); _ = call(t, b, tc.rtt, o) }()
					wg.Wait()
				}
				if got := b.State() == Open; got != tc.wantOpen {
					t.Errorf("open=%v after %d calls, want %v (counts %+v)", got, len(tc.calls), tc.wantOpen, b.Counts())
				}
			})
		})
	}
}

func repeat(o Outcome, n int) []Outcome {
	out := make([]Outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}

func mix(ok, failed int) []Outcome {
	return append(repeat(Success, ok), repeat(Failure, failed)...)
}

// Open, the breaker refuses at once with ErrOpen and says when to come back;
// after OpenFor it lets probes through and closes on their successes, with
// the window emptied so that old failures cannot trip it again.
func TestOpenHalfOpenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 5, OpenFor: 5 * time.Second, Probes: 2})
		for range 5 {
			_ = call(t, b, time.Millisecond, Failure)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow while open: %v, want ErrOpen", err)
		}
		if got := b.RetryIn(); got != 5*time.Second {
			t.Errorf("RetryIn %v, want 5s", got)
		}
		if !b.OpenAt(time.Now()) {
			t.Error("OpenAt(now) false while open")
		}
		time.Sleep(5*time.Second + time.Millisecond)
		if b.OpenAt(time.Now()) {
			t.Error("OpenAt true after OpenFor")
		}
		if err := call(t, b, time.Millisecond, Success); err != nil {
			t.Fatal(err)
		}
		if s := b.State(); s != HalfOpen {
			t.Fatalf("state %v after one of two probes", s)
		}
		if err := call(t, b, time.Millisecond, Success); err != nil {
			t.Fatal(err)
		}
		if s := b.State(); s != Closed {
			t.Fatalf("state %v after two successful probes", s)
		}
		if c := b.Counts(); c.Calls != 0 {
			t.Errorf("window holds %+v right after closing, want empty", c)
		}
		_ = call(t, b, time.Millisecond, Failure)
		if s := b.State(); s != Closed {
			t.Errorf("one failure after closing reopened the breaker")
		}
	})
}

// A slow probe reopens the breaker: the downstream is still slow.
func TestSlowProbeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 1, OpenFor: time.Second, Probes: 1})
		_ = call(t, b, time.Millisecond, Failure)
		time.Sleep(time.Second + time.Millisecond)
		_ = call(t, b, 2*time.Second, Success)
		if s := b.State(); s != Open {
			t.Errorf("state %v after a 2 s probe with SlowCall 1 s, want open", s)
		}
	})
}

// Scenario 9: half-open with one probe allowed and the probe never returns:
// once its lease is over another probe is admitted, and the lost probe's
// late report changes nothing.
func TestProbeLeaseExpires(t *testing.T) {
	for _, tc := range []struct {
		probes       int
		lease, open  time.Duration
		beforeExpiry time.Duration
	}{
		{probes: 1, lease: 10 * time.Second, open: 5 * time.Second, beforeExpiry: 9 * time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			b := mustNew(t, Config{MinCalls: 1, OpenFor: tc.open, Probes: tc.probes, ProbeLease: tc.lease})
			_ = call(t, b, time.Millisecond, Failure)
			time.Sleep(tc.open + time.Millisecond)
			stuck, err := b.Allow() // the probe that never returns
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.beforeExpiry)
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Fatalf("second probe admitted %v into a %v lease: %v", tc.beforeExpiry, tc.lease, err)
			}
			if got := b.RetryIn(); got != tc.lease-tc.beforeExpiry {
				t.Errorf("RetryIn %v while the probe is out, want %v", got, tc.lease-tc.beforeExpiry)
			}
			time.Sleep(tc.lease - tc.beforeExpiry)
			p, err := b.Allow()
			if err != nil {
				t.Fatalf("no probe admitted after the lease: %v", err)
			}
			b.Done(stuck, Failure, time.Hour, time.Now()) // the lost probe's late report
			if s := b.State(); s != HalfOpen {
				t.Fatalf("late report of a given-up probe moved the breaker to %v", s)
			}
			b.Done(p, Success, time.Millisecond, time.Now())
			if s := b.State(); s != Closed {
				t.Errorf("state %v after the new probe succeeded, want closed", s)
			}
		})
	}
}

// The state-change callback may call back into the breaker without
// deadlock, sees every change in order, and never runs concurrently.
func TestOnStateChangeReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *Breaker
		var got []string
		var mu sync.Mutex
		b = mustNew(t, Config{MinCalls: 1, OpenFor: time.Second, Probes: 1,
			OnStateChange: func(name string, from, to State) {
				if !mu.TryLock() {
					t.Error("callback ran concurrently")
					return
				}
				defer mu.Unlock()
				_ = b.State()
				_ = b.Counts()
				_ = b.RetryIn()
				got = append(got, from.String()+">"+to.String())
			}})
		_ = call(t, b, time.Millisecond, Failure)
		time.Sleep(time.Second + time.Millisecond)
		_ = call(t, b, time.Millisecond, Success)
		synctest.Wait() // every change delivered
		want := "closed>open open>half-open half-open>closed"
		if s := strings.Join(got, " "); s != want {
			t.Errorf("transitions %q, want %q", s, want)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Window: time.Millisecond}, "Window must be in [100ms, 1h]"},
		{Config{Buckets: -1}, "Buckets must be in [1, 100]"},
		{Config{Window: 500 * time.Millisecond, Buckets: 100}, "Window/Buckets must be at least 10ms"},
		{Config{MinCalls: -5}, "MinCalls must be in [1, 1000000]"},
		{Config{FailureRatio: 1.5}, "FailureRatio must be in [0.001, 1]"},
		{Config{FailureRatio: -0.1}, "FailureRatio must be in [0.001, 1]"},
		{Config{FailureRatio: 1e-9}, "FailureRatio must be in [0.001, 1]"},
		{Config{SlowRatio: 1e-9}, "SlowRatio must be in [0.001, 1]"},
		{Config{SlowCall: -time.Second}, "SlowCall must be in [1ms, 1h]"},
		{Config{SlowRatio: 2}, "SlowRatio must be in [0.001, 1]"},
		{Config{OpenFor: 2 * time.Hour}, "OpenFor must be in [1ms, 1h]"},
		{Config{Probes: 1001}, "Probes must be in [1, 1000]"},
		{Config{ProbeLease: -1}, "ProbeLease must be in [1ms, 1h]"},
		{Config{Window: -time.Second}, "Window must be in [100ms, 1h], got -1s"},
		{Config{Window: time.Hour + 1}, "Window must be in [100ms, 1h], got 1h0m0.000000001s"},
		{Config{Buckets: 101}, "Buckets must be in [1, 100], got 101"},
		{Config{MinCalls: 1e6 + 1}, "MinCalls must be in [1, 1000000], got 1000001"},
		{Config{FailureRatio: math.NaN()}, "FailureRatio must be in [0.001, 1], got NaN"},
		{Config{FailureRatio: math.Inf(1)}, "FailureRatio must be in [0.001, 1], got +Inf"},
		{Config{SlowCall: time.Microsecond}, "SlowCall must be in [1ms, 1h], got 1µs"},
		{Config{SlowCall: 2 * time.Hour}, "SlowCall must be in [1ms, 1h], got 2h0m0s"},
		{Config{SlowRatio: math.NaN()}, "SlowRatio must be in [0.001, 1], got NaN"},
		{Config{SlowRatio: -0.5}, "SlowRatio must be in [0.001, 1], got -0.5"},
		{Config{OpenFor: -time.Second}, "OpenFor must be in [1ms, 1h], got -1s"},
		{Config{OpenFor: 500 * time.Microsecond}, "OpenFor must be in [1ms, 1h], got 500µs"},
		{Config{Probes: -1}, "Probes must be in [1, 1000], got -1"},
		{Config{ProbeLease: 2 * time.Hour}, "ProbeLease must be in [1ms, 1h], got 2h0m0s"},
		{Config{ProbeLease: time.Microsecond}, "ProbeLease must be in [1ms, 1h], got 1µs"},
	} {
		_, err := New("x", tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// While closed, calls are admitted from the state mirror without gobreaker;
// failures from many goroutines at once must still open the breaker once,
// and calls admitted before it opened, reporting after, must not count in
// the next closed period's window.
func TestClosedPathTripsOnceUnderConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name       string
		goroutines int
		failures   int // per goroutine
		minCalls   int
	}{
		{"8 goroutines × 50 failures, MinCalls 20", 8, 50, 20},
		{"32 goroutines × 10 failures, MinCalls 100", 32, 10, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var got []string
				b := mustNew(t, Config{MinCalls: tc.minCalls, OpenFor: time.Hour,
					OnStateChange: func(_ string, from, to State) {
						mu.Lock()
						got = append(got, from.String()+">"+to.String())
						mu.Unlock()
					}})
				start := make(chan struct{})
				var wg sync.WaitGroup
				for range tc.goroutines {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for range tc.failures {
							p, err := b.Allow()
							if err != nil {
								continue
							}
							b.Done(p, Failure, time.Millisecond, time.Now())
						}
					}()
				}
				close(start)
				wg.Wait()
				synctest.Wait() // every change delivered
				mu.Lock()
				defer mu.Unlock()
				if s := strings.Join(got, " "); s != "closed>open" {
					t.Errorf("transitions %q, want one closed>open", s)
				}
				if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
					t.Errorf("Allow after %d failures: %v, want ErrOpen", tc.goroutines*tc.failures, err)
				}
			})
		})
	}
}

// A call admitted while closed that reports after the breaker has opened and
// closed again is not counted in the new closed period.
func TestStaleClosedPermitNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 5, OpenFor: time.Second, Probes: 1})
		stale, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			_ = call(t, b, time.Millisecond, Failure)
		}
		time.Sleep(time.Second + time.Millisecond)
		_ = call(t, b, time.Millisecond, Success) // the probe closes it
		if s := b.State(); s != Closed {
			t.Fatalf("state %v, want closed", s)
		}
		b.Done(stale, Failure, time.Millisecond, time.Now())
		if c := b.Counts(); c.Calls != 0 {
			t.Errorf("stale permit counted in the new window: %+v", c)
		}
	})
}

// Done with an end before the breaker existed (a zero time.Time, or a time
// from before New) counts nothing and does not panic: it once indexed the
// window with a negative bucket (found by an adversarial review).
func TestDoneWithEndBeforeTheBreaker(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  time.Time
	}{
		{"zero time", time.Time{}},
		{"an hour before New", time.Now().Add(-time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustNew(t, Config{MinCalls: 1})
			p, err := b.Allow()
			if err != nil {
				t.Fatal(err)
			}
			b.Done(p, Failure, time.Millisecond, tc.end)
			if c := b.Counts(); c.Calls != 0 {
				t.Errorf("counts %+v, want nothing counted", c)
			}
			if s := b.State(); s != Closed {
				t.Errorf("state %v, want closed", s)
			}
		})
	}
}

// The ratios are not rounded: they were compared in thousandths, rounded
// to nearest, so FailureRatio 0.0015 tripped only at 4 failures in 2,000
// calls (0.2%), 0.0014 already at 2 (0.1%), and 1/3 at 333 in 1,000
// (0.333). Now the breaker trips when failed/calls reaches the ratio
// itself.
func TestRatiosNotRounded(t *testing.T) {
	for _, tc := range []struct {
		failureRatio, slowRatio float64
		calls, failed, slow     int // failed and slow calls come last
		wantOpen                bool
	}{
		{failureRatio: 0.0015, calls: 2000, failed: 3, wantOpen: true},
		{failureRatio: 0.0015, calls: 2000, failed: 2, wantOpen: false},
		{failureRatio: 0.0014, calls: 2000, failed: 2, wantOpen: false},
		{failureRatio: 0.0014, calls: 2000, failed: 3, wantOpen: true},
		{failureRatio: 1.0 / 3, calls: 1000, failed: 333, wantOpen: false},
		{failureRatio: 1.0 / 3, calls: 999, failed: 333, wantOpen: true},
		{failureRatio: 0.7, calls: 10, failed: 7, wantOpen: true},
		{failureRatio: 0.7, calls: 10, failed: 6, wantOpen: false},
		{slowRatio: 0.0015, calls: 2000, slow: 3, wantOpen: true},
		{slowRatio: 0.0014, calls: 2000, slow: 2, wantOpen: false},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := mustNew(t, Config{MinCalls: tc.calls, FailureRatio: tc.failureRatio, SlowRatio: tc.slowRatio})
				for i := range tc.calls {
					o, rtt := Success, time.Millisecond
					switch {
					case i >= tc.calls-tc.failed:
						o = Failure
					case i >= tc.calls-tc.failed-tc.slow:
						rtt = DefaultSlowCall
					}
					p, err := b.Allow()
					if err != nil {
						t.Fatalf("call %d refused", i)
					}
					b.Done(p, o, rtt, time.Now())
				}
				if got := b.State() == Open; got != tc.wantOpen {
					t.Errorf("open=%v after %d calls, %d failed, %d slow; want %v (counts %+v)",
						got, tc.calls, tc.failed, tc.slow, tc.wantOpen, b.Counts())
				}
			})
		})
	}
}
