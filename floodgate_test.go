package floodgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustGate(t testing.TB, opts ...Option) *Gate {
	t.Helper()
	g, err := New("test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var errUpstream = errors.New("upstream says no")

// Scenarios 6 and 7: when the next wait (the server's hint, or the backoff)
// would end past the deadline, Guard returns at once with the last error
// and the hint, instead of sleeping until the deadline.
func TestReturnsAtOnceWhenWaitOutlastsDeadline(t *testing.T) {
	maxRand := func(k int64) int64 { return k - 1 }
	for _, tc := range []struct {
		name      string
		retry     retry.Config
		deadline  time.Duration
		failAfter time.Duration
		err       error
		within    time.Duration // after the failed attempt
		wantHint  time.Duration
		reason    error
	}{
		// A hint longer than MaxDelay (10 s) is ErrWaitTooLong whatever the deadline.
		{name: "Retry-After 3600 s, deadline 5 s", deadline: 5 * time.Second, failAfter: 100 * time.Millisecond,
			err: retry.Overload(errUpstream, 3600*time.Second), within: 10 * time.Millisecond, wantHint: 3600 * time.Second, reason: ErrWaitTooLong},
		{name: "Retry-After 8 s, deadline 5 s", deadline: 5 * time.Second, failAfter: 100 * time.Millisecond,
			err: retry.Overload(errUpstream, 8*time.Second), within: 10 * time.Millisecond, wantHint: 8 * time.Second, reason: ErrDeadline},
		{name: "backoff 10 s, deadline 5 s", retry: retry.Config{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second},
			deadline: 5 * time.Second, failAfter: 100 * time.Millisecond,
			err: retry.Transient(errUpstream), within: 0, reason: ErrDeadline},
		{name: "backoff 10 s, Timeout option 5 s", retry: retry.Config{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second, Timeout: 5 * time.Second},
			failAfter: 100 * time.Millisecond, err: retry.Transient(errUpstream), within: 0, reason: ErrDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tc.retry
				cfg.Rand = maxRand
				g := mustGate(t, WithRetry(cfg))
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				start := time.Now()
				attempts := 0
				err := g.Guard(ctx, func(ctx context.Context) error {
					attempts++
					time.Sleep(tc.failAfter)
					return tc.err
				})
				took := time.Since(start) - tc.failAfter
				if took > tc.within {
					t.Errorf("returned %v after the failed attempt, want within %v", took, tc.within)
				}
				if attempts != 1 {
					t.Errorf("%d attempts, want 1", attempts)
				}
				if !errors.Is(err, errUpstream) || !errors.Is(err, tc.reason) {
					t.Errorf("err = %v, want it to wrap the last error and %v", err, tc.reason)
				}
				if hint, _ := RetryAfter(err); hint != tc.wantHint {
					t.Errorf("hint %v, want %v", hint, tc.wantHint)
				}
			})
		})
	}
}

// Scenario 8: six callers cancel their own contexts mid-call and the breaker
// stays closed; six calls that time out instead open it (the control row,
// so the test can fail).
func TestCallerCancellationDoesNotTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		callers  int
		minCalls int
		cancel   bool
		want     breaker.State
	}{
		{"callers cancel", 6, 5, true, breaker.Closed},
		{"calls time out", 6, 5, false, breaker.Open},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustGate(t, WithBreaker(breaker.Config{MinCalls: tc.minCalls}),
					WithRetry(retry.Config{MaxAttempts: 1, AttemptTimeout: time.Second}))
				var wg sync.WaitGroup
				for range tc.callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ctx, cancel := context.WithCancel(context.Background())
						defer cancel()
						if tc.cancel {
							time.AfterFunc(50*time.Millisecond, cancel)
						}
						err := g.Guard(ctx, func(ctx context.Context) error {
							<-ctx.Done()
							return ctx.Err()
						})
						if err == nil {
							t.Error("Guard returned nil")
						}
					}()
				}
				wg.Wait()
				if s := g.Breaker().State(); s != tc.want {
					t.Errorf("breaker %v, want %v (counts %+v)", s, tc.want, g.Breaker().Counts())
				}
				if n := g.Limiter().InFlight(); n != 0 {
					t.Errorf("%d slots still held", n)
				}
			})
		})
	}
}

// Scenario 12: fn panics (or a custom classifier does): the slot is
// released, the breaker records a failure, and the panic reaches the caller.
func TestPanicReleasesSlot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		classify func(error) retry.Class
		fn       func(context.Context) error
	}{
		{"fn panics", nil, func(context.Context) error { panic("boom") }},
		{"classifier panics", func(error) retry.Class { panic("boom") }, func(context.Context) error { return errUpstream }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGate(t, WithRetry(retry.Config{Classify: tc.classify}))
			func() {
				defer func() {
					if r := recover(); r != "boom" {
						t.Errorf("recovered %v, want the panic value", r)
					}
				}()
				_ = g.Guard(context.Background(), tc.fn)
				t.Error("Guard returned instead of panicking")
			}()
			if n := g.Limiter().InFlight(); n != 0 {
				t.Errorf("in-flight %d after panic, want 0", n)
			}
			if c := g.Breaker().Counts(); c.Failures != 1 || c.Calls != 1 {
				t.Errorf("breaker counts %+v, want 1 call, 1 failure", c)
			}
		})
	}
}

// A caller whose deadline has already passed gets an error at once; fn is
// not called and the breaker does not count it against the downstream.
func TestExpiredDeadlineNotCounted(t *testing.T) {
	for _, tc := range []struct {
		calls, minCalls int
	}{
		{calls: 30, minCalls: 20},
	} {
		g := mustGate(t, WithBreaker(breaker.Config{MinCalls: tc.minCalls}))
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		for range tc.calls {
			err := g.Guard(ctx, func(context.Context) error { t.Error("fn called after the deadline"); return nil })
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
		}
		if s, c := g.Breaker().State(), g.Breaker().Counts(); s != breaker.Closed || c.Calls != 0 {
			t.Errorf("breaker %v with %+v after %d expired calls, want closed and empty", s, c, tc.calls)
		}
		if n := g.Limiter().InFlight(); n != 0 {
			t.Errorf("%d slots held", n)
		}
	}
}

// Once the breaker opens, the retry loop stops at once: no further attempt
// and no sleep; later calls are refused at once with the time until the
// next probe as the hint.
func TestOpenBreakerShortCircuitsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t,
			WithBreaker(breaker.Config{MinCalls: 1, OpenFor: 5 * time.Second}),
			WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: time.Second}))
		attempts := 0
		start := time.Now()
		err := g.Guard(context.Background(), func(context.Context) error {
			attempts++
			time.Sleep(10 * time.Millisecond)
			return retry.Transient(errUpstream)
		})
		if attempts != 1 || time.Since(start) != 10*time.Millisecond {
			t.Errorf("%d attempts in %v, want 1 in 10ms", attempts, time.Since(start))
		}
		if !errors.Is(err, ErrOpen) || !errors.Is(err, errUpstream) {
			t.Errorf("err = %v, want ErrOpen wrapping the last error", err)
		}
		if hint, _ := RetryAfter(err); hint != 5*time.Second {
			t.Errorf("hint %v, want 5s", hint)
		}
		time.Sleep(2 * time.Second)
		err = g.Guard(context.Background(), func(context.Context) error {
			t.Error("fn called while the breaker is open")
			return nil
		})
		var fe *Error
		if !errors.As(err, &fe) || fe.Reason != ErrOpen || fe.Hint != 3*time.Second || fe.Attempts != 0 {
			t.Errorf("err = %#v, want ErrOpen with a 3s hint and no attempt", err)
		}
	})
}

// Shedding is immediate, returns an *Error with Reason ErrShed (the gate's
// shared one, on the first attempt), and does not count against the breaker.
func TestShedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t, WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}),
			WithBreaker(breaker.Config{MinCalls: 1}))
		release := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = g.Guard(context.Background(), func(context.Context) error { <-release; return nil })
		}()
		synctest.Wait()
		start := time.Now()
		err := g.Guard(context.Background(), func(context.Context) error { return nil })
		var e *Error
		if !errors.As(err, &e) || e.Reason != ErrShed || e.Attempts != 0 || time.Since(start) != 0 {
			t.Errorf("err = %v after %v, want ErrShed at once", err, time.Since(start))
		}
		close(release)
		<-done
		if s := g.Breaker().State(); s != breaker.Closed {
			t.Errorf("breaker %v after a shed, want closed", s)
		}
	})
}

// The retry budget keeps a 3-attempt policy from tripling the load on a
// downstream that always fails: 1,000 calls make at most 1,000 + 20 + 100
// attempts, not 3,000.
func TestBudgetCapsAmplification(t *testing.T) {
	for _, tc := range []struct {
		calls, maxAttempts int
		wantMax            int
	}{
		{calls: 1000, maxAttempts: 3, wantMax: 1000 + 20 + 100},
	} {
		synctest.Test(t, func(t *testing.T) {
			g := mustGate(t, WithBreaker(breaker.Config{MinCalls: 1e6}),
				WithRetry(retry.Config{MaxAttempts: tc.maxAttempts, BaseDelay: time.Millisecond}))
			attempts, exhausted := 0, 0
			for range tc.calls {
				err := g.Guard(context.Background(), func(context.Context) error {
					attempts++
					return retry.Transient(errUpstream)
				})
				if errors.Is(err, ErrBudgetExhausted) {
					exhausted++
				}
			}
			t.Logf("%d calls: %d attempts (%.2f per call), %d ended by the budget", tc.calls, attempts, float64(attempts)/float64(tc.calls), exhausted)
			if attempts > tc.wantMax || attempts <= tc.calls {
				t.Errorf("%d attempts, want in (%d, %d]", attempts, tc.calls, tc.wantMax)
			}
			if exhausted == 0 {
				t.Error("no call was ended by the budget")
			}
		})
	}
}

// Three nested gates around a failing downstream: only the innermost layer
// retries, so one user call makes MaxAttempts attempts, not 3×3×3 = 27.
func TestNestedGatesDoNotMultiplyRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var downstream atomic.Int64
		inner := mustGate(t)
		mid := mustGate(t)
		outer := mustGate(t)
		err := outer.Guard(context.Background(), func(ctx context.Context) error {
			return mid.Guard(ctx, func(ctx context.Context) error {
				return inner.Guard(ctx, func(ctx context.Context) error {
					downstream.Add(1)
					return retry.Overload(errUpstream, 0)
				})
			})
		})
		if got := downstream.Load(); got != 3 {
			t.Errorf("%d downstream attempts for one user call, want 3", got)
		}
		if !errors.Is(err, errUpstream) {
			t.Errorf("err = %v, want it to wrap the downstream's error", err)
		}
	})
}

// A non-idempotent call is not retried unless it carries an idempotency key.
func TestNonIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() context.Context
		want int
	}{
		{"plain", context.Background, 3},
		{"non-idempotent", func() context.Context { return retry.NonIdempotent(context.Background()) }, 1},
		{"non-idempotent with key", func() context.Context {
			return retry.WithIdempotencyKey(retry.NonIdempotent(context.Background()), "order-42")
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustGate(t)
				n := 0
				_ = g.Guard(tc.ctx(), func(context.Context) error { n++; return retry.Transient(errUpstream) })
				if n != tc.want {
					t.Errorf("%d attempts, want %d", n, tc.want)
				}
			})
		})
	}
}

// The attempt context gets what is left of the overall deadline, never a
// fresh timeout.
func TestAttemptGetsTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t, WithRetry(retry.Config{Timeout: 3 * time.Second, AttemptTimeout: 2 * time.Second,
			BaseDelay: 100 * time.Millisecond, Rand: func(k int64) int64 { return k - 1 }}))
		var got []time.Duration
		start := time.Now()
		_ = g.Guard(context.Background(), func(ctx context.Context) error {
			d, _ := ctx.Deadline()
			got = append(got, time.Until(d))
			<-ctx.Done()
			return ctx.Err()
		})
		// Attempt 1: 2 s (AttemptTimeout); waits 100 ms; attempt 2: the 900 ms left.
		want := []time.Duration{2 * time.Second, 900 * time.Millisecond}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("attempt budgets %v, want %v", got, want)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("call took %v, want the 3 s deadline", took)
		}
	})
}

// Stats reports the limiter's RTTs once a window has closed: calls of
// exactly 10 ms, one every 20 ms, fill the first window (250 ms, 10
// samples).
func TestStatsReportsRTTs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t)
		if st := g.Stats(); st.RecentRTT != 0 || st.BaselineRTT != 0 {
			t.Fatalf("before any call: RecentRTT %v, BaselineRTT %v; want 0, 0", st.RecentRTT, st.BaselineRTT)
		}
		for range 20 {
			_ = g.Guard(context.Background(), func(context.Context) error {
				time.Sleep(10 * time.Millisecond)
				return nil
			})
			time.Sleep(10 * time.Millisecond)
		}
		st := g.Stats()
		if st.RecentRTT != 10*time.Millisecond || st.BaselineRTT != 10*time.Millisecond {
			t.Errorf("RecentRTT %v, BaselineRTT %v; want 10ms, 10ms", st.RecentRTT, st.BaselineRTT)
		}
	})
}

// The breaker's state-change callback may call back into the gate (its
// stats, its breaker, even Guard) without deadlock.
func TestStateChangeCallbackReentersGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g *Gate
		var seen []string
		g = mustGate(t, WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Second, Probes: 1,
			OnStateChange: func(name string, from, to breaker.State) {
				st := g.Stats()
				_ = g.Breaker().Counts()
				err := g.Guard(context.Background(), func(context.Context) error { return nil })
				seen = append(seen, fmt.Sprintf("%s>%s stats=%v guard-open=%v", from, to, st.Breaker, errors.Is(err, ErrOpen)))
			}}))
		_ = g.Guard(context.Background(), func(context.Context) error { return errUpstream })
		time.Sleep(time.Second + time.Millisecond)
		_ = g.Guard(context.Background(), func(context.Context) error {
			synctest.Wait() // the probe is out: open>half-open is delivered now
			return nil
		})
		synctest.Wait() // the callbacks run on the breaker's own goroutine
		want := []string{
			"closed>open stats=open guard-open=true",
			"open>half-open stats=half-open guard-open=true", // the one probe is the call that moved it
			"half-open>closed stats=closed guard-open=false",
		}
		if strings.Join(seen, "; ") != strings.Join(want, "; ") {
			t.Errorf("callbacks saw %q, want %q", seen, want)
		}
	})
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"", nil, "name must not be empty"},
		{"g", []Option{nil}, "option 0 is nil"},
		{"g", []Option{WithLimiter(adaptive.Config{MinLimit: -1})}, `gate "g": adaptive: MinLimit must be in [1, 1048576], got -1`},
		{"g", []Option{WithBreaker(breaker.Config{FailureRatio: 2})}, "breaker: FailureRatio must be in [0.001, 1], got 2"},
		{"g", []Option{WithRetry(retry.Config{MaxAttempts: 0, BaseDelay: -1})}, "retry: BaseDelay must be in [1ms, 1h], got -1ns"},
	} {
		_, err := New(tc.name, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q) = %v, want error containing %q", tc.name, err, tc.want)
		}
	}
}

// One Gradient given to two gates: the second New fails and names the
// field; a New that fails on the breaker's or the retry policy's options
// leaves the Gradient free.
func TestNewAlgorithmInTwoGates(t *testing.T) {
	h, err := adaptive.NewGradient(adaptive.GradientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	lim := WithLimiter(adaptive.Config{Algorithm: h})
	if _, err := New("a", lim, WithBreaker(breaker.Config{FailureRatio: 2})); err == nil {
		t.Fatal("New with FailureRatio 2 succeeded")
	}
	if _, err := New("a", lim, WithRetry(retry.Config{BaseDelay: -1})); err == nil {
		t.Fatal("New with BaseDelay -1 succeeded")
	}
	if _, err := New("a", lim); err != nil {
		t.Fatalf("New after a New that failed on the breaker: %v, want the Gradient still free", err)
	}
	_, err = New("b", lim)
	if want := `gate "b": adaptive: Config.Algorithm (*adaptive.Gradient) is already run by another Limiter`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("second gate with the same Gradient: %v, want error containing %q", err, want)
	}
}

// TestErrorMessage: the reason, then the attempt count and the hint in
// parentheses ("error not retried after 3 attempts" read as a
// contradiction to a fresh user), then the last error.
func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Gate: "quotes", Reason: ErrDeadline, Last: errUpstream, Attempts: 2, Hint: time.Hour},
			`floodgate: gate "quotes": deadline reached or would pass before the next attempt (2 attempts, retry after 1h0m0s): upstream says no`},
		{&Error{Gate: "quotes", Reason: ErrOpen, Hint: 5 * time.Second},
			`floodgate: gate "quotes": circuit breaker open (retry after 5s)`},
		{&Error{Gate: "quotes", Reason: ErrNotRetried, Last: errUpstream, Attempts: 3},
			`floodgate: gate "quotes": error not retried (3 attempts): upstream says no`},
		{&Error{Gate: "quotes", Reason: ErrNotIdempotent, Last: errUpstream, Attempts: 1}, // why, not only that (a fresh-user finding)
			`floodgate: gate "quotes": error not retried: non-idempotent call without an idempotency key (1 attempt): upstream says no`},
		{&Error{Gate: "quotes", Reason: ErrAttemptsExhausted, Last: errUpstream, Attempts: 1},
			`floodgate: gate "quotes": ` + strings.TrimPrefix(ErrAttemptsExhausted.Error(), "floodgate: ") + ` (1 attempt): upstream says no`},
		{&Error{Gate: "quotes", Reason: ErrShed}, `floodgate: gate "quotes": ` + strings.TrimPrefix(ErrShed.Error(), "floodgate: ")},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// Misuse that must not panic: a nil fn, and a custom classifier returning a
// class floodgate does not know (treated as a non-retried failure).
func TestMisuse(t *testing.T) {
	g := mustGate(t, WithRetry(retry.Config{Classify: func(err error) retry.Class {
		if err == nil {
			return retry.ClassSuccess
		}
		return retry.Class(200)
	}}))
	if err := g.Guard(context.Background(), nil); err == nil {
		t.Error("Guard(nil fn) returned nil")
	}
	//lint:ignore SA1012 a nil ctx is the misuse under test
	if err := g.Guard(nil, func(context.Context) error { return nil }); err == nil {
		t.Error("Guard(nil ctx) returned nil")
	}
	n := 0
	err := g.Guard(context.Background(), func(context.Context) error { n++; return errUpstream })
	if err != errUpstream || n != 1 {
		t.Errorf("unknown class: err=%v after %d attempts, want the error after 1", err, n)
	}
	if c := g.Breaker().Counts(); c.Failures != 1 {
		t.Errorf("breaker counts %+v, want the unknown class counted as a failure", c)
	}
}

// A retry that is shed by the limiter or refused by the open breaker never
// reaches the downstream, so its budget token is given back: in a
// slowdown, shed retries must not drain the budget (seen in the demo: 12
// tokens spent on 6 real retries).
func TestRefusedRetryRefundsToken(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refuse     func(g *Gate, hold chan struct{}) // makes the retry be refused
		wantReason error
	}{
		{"shed by the limiter", func(g *Gate, hold chan struct{}) {
			go func() {
				time.Sleep(10 * time.Millisecond) // after the first attempt released its slot, within the 100 ms backoff
				_ = g.Guard(context.Background(), func(context.Context) error { <-hold; return nil })
			}()
		}, ErrShed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustGate(t, WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}),
					WithRetry(retry.Config{BaseDelay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond,
						Rand: func(k int64) int64 { return k - 1 }})) // backoff: the full 100 ms
				hold := make(chan struct{})
				before := g.Budget().Tokens() // 20: full
				calls := 0
				err := g.Guard(context.Background(), func(context.Context) error {
					if calls++; calls == 1 {
						tc.refuse(g, hold) // the slot is taken while the call waits out its backoff
					}
					return retry.Transient(errUpstream)
				})
				if !errors.Is(err, tc.wantReason) {
					t.Errorf("err = %v, want %v", err, tc.wantReason)
				}
				if got := g.Budget().Tokens(); got != before {
					t.Errorf("budget %v tokens after a refused retry, want %v (refunded)", got, before)
				}
				close(hold)
				synctest.Wait()
			})
		})
	}
}

// Issue 13, defect 4: Do(ctx, g, nil) called the nil fn, panicked, and
// the breaker recorded a downstream failure (with MinCalls 1 it opened),
// while Guard(ctx, nil) returned an error. Every nil argument is now an
// *Error with Reason ErrNilArgument, and no layer is touched.
func TestNilArguments(t *testing.T) {
	ctx := context.Background()
	var nilGate *Gate
	for _, tc := range []struct {
		name string
		call func(g *Gate) error
	}{
		{"Do, nil fn", func(g *Gate) error { _, err := Do[int](ctx, g, nil); return err }},
		{"Guard, nil fn", func(g *Gate) error { return g.Guard(ctx, nil) }},
		{"Do, nil ctx", func(g *Gate) error {
			//lint:ignore SA1012 a nil ctx is the misuse under test
			_, err := Do(nil, g, func(context.Context) (int, error) { return 1, nil })
			return err
		}},
		{"Do, nil Gate", func(*Gate) error {
			_, err := Do(ctx, nilGate, func(context.Context) (int, error) { return 1, nil })
			return err
		}},
		{"Guard, nil Gate", func(*Gate) error { return nilGate.Guard(ctx, ok) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGate(t, WithBreaker(breaker.Config{MinCalls: 1}))
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("panicked: %v", r)
					}
				}()
				err = tc.call(g)
			}()
			var e *Error
			if !errors.As(err, &e) || e.Reason != ErrNilArgument || !errors.Is(err, ErrNilArgument) {
				t.Errorf("err = %v, want an *Error with Reason ErrNilArgument", err)
			}
			if s, c := g.Breaker().State(), g.Breaker().Counts(); s != breaker.Closed || c.Calls != 0 {
				t.Errorf("breaker %v with %+v, want closed and empty (before the fix: open with MinCalls 1)", s, c)
			}
		})
	}
}

// Issue 13, defect 5: a context already cancelled (no deadline) still
// reached fn, took a slot and contacted the downstream, while one whose
// deadline had passed was refused. Both are refused before any layer is
// touched: fn is not called, the breaker sees no call, the budget gets
// no deposit (it is not full here, so a deposit would show).
func TestEndedContextRefusedBeforeAnyLayer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ctx        func() (context.Context, context.CancelFunc)
		wantReason error
	}{
		{"cancelled, no deadline", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"deadline passed 1 s ago", func() (context.Context, context.CancelFunc) {
			return context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget, err := retry.NewBudget(retry.BudgetConfig{})
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				budget.Withdraw() // 20 -> 10 tokens
			}
			g := mustGate(t, WithBreaker(breaker.Config{MinCalls: 1}), WithRetry(retry.Config{Budget: budget}))
			ctx, cancel := tc.ctx()
			defer cancel()
			called := 0
			for range 30 {
				err := g.Guard(ctx, func(context.Context) error { called++; return ctx.Err() })
				var e *Error
				if !errors.As(err, &e) || e.Reason != tc.wantReason || e.Attempts != 0 {
					t.Fatalf("err = %v, want an *Error with Reason %v and no attempt", err, tc.wantReason)
				}
			}
			if called != 0 {
				t.Errorf("fn called %d times of 30 (before the fix: 30 for a cancelled context)", called)
			}
			if c := g.Breaker().Counts(); c.Calls != 0 {
				t.Errorf("breaker counted %+v, want no call", c)
			}
			if got := budget.Tokens(); got != 10 {
				t.Errorf("budget %v tokens, want 10 (no deposit for calls that never started)", got)
			}
		})
	}
}

// Issue 13, defect 6: a retry cut short by the caller's cancellation
// during its backoff kept its budget token (20 -> 19) though it never
// reached the downstream; it is refunded, as a retry refused before it
// starts is.
func TestCanceledBackoffRefundsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t, WithRetry(retry.Config{BaseDelay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond,
			Rand: func(k int64) int64 { return k - 1 }})) // backoff: the full 100 ms
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(50*time.Millisecond, cancel) // within the backoff
		attempts := 0
		err := g.Guard(ctx, func(context.Context) error {
			attempts++
			time.Sleep(10 * time.Millisecond)
			return retry.Transient(errUpstream)
		})
		if attempts != 1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("%d attempts, err %v; want 1 attempt and context.Canceled", attempts, err)
		}
		if got := g.Budget().Tokens(); got != 20 {
			t.Errorf("budget %v tokens after a retry cancelled in its backoff, want 20 (before the fix: 19)", got)
		}
	})
}
