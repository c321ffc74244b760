package floodgate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// An inner Gate's own refusals (its limiter shed the call, its breaker was
// open) never reached the downstream: an outer Gate wrapping it must not
// count them as failures, or an overload that the inner limiter is
// handling by shedding would open the outer breaker and refuse every call,
// and an outage would keep the outer breaker open after the inner one has
// closed.
func TestOuterGateIgnoresInnerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		innerLimit int // the inner gate's fixed limit (calls)
		concurrent int // calls in flight at once through the outer gate
		innerOpen  bool
		wantReason error
	}{
		{"inner sheds 30 of 40 concurrent calls, 5 rounds", 10, 40, false, ErrShed},
		{"inner breaker open, 200 calls", 1000, 40, true, ErrOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := mustGate(t, WithLimiter(adaptive.Config{MinLimit: tc.innerLimit, MaxLimit: tc.innerLimit, InitialLimit: tc.innerLimit}),
					WithBreaker(breaker.Config{MinCalls: 5, OpenFor: time.Hour}))
				outer := mustGate(t, WithBreaker(breaker.Config{MinCalls: 5}))
				if tc.innerOpen {
					for range 5 {
						_ = inner.Guard(context.Background(), func(context.Context) error { return errUpstream })
					}
					if s := inner.Breaker().State(); s != breaker.Open {
						t.Fatalf("inner breaker %v, want open", s)
					}
				}
				refused := 0
				var mu sync.Mutex
				for range 5 {
					var wg sync.WaitGroup
					for range tc.concurrent {
						wg.Add(1)
						go func() {
							defer wg.Done()
							err := outer.Guard(context.Background(), func(ctx context.Context) error {
								return inner.Guard(ctx, func(context.Context) error {
									time.Sleep(10 * time.Millisecond)
									return nil
								})
							})
							if errors.Is(err, tc.wantReason) {
								mu.Lock()
								refused++
								mu.Unlock()
							}
						}()
					}
					wg.Wait()
				}
				if refused == 0 {
					t.Fatalf("the inner gate refused nothing: the test does not test")
				}
				if s := outer.Breaker().State(); s != breaker.Closed {
					t.Errorf("outer breaker %v after %d inner refusals, want closed", s, refused)
				}
				if c := outer.Breaker().Counts(); c.Failures != 0 {
					t.Errorf("outer breaker counted %d failures, want 0 (counts %+v)", c.Failures, c)
				}
			})
		})
	}
}

// The class an outer Gate sees for each way this Gate can end a call: a
// refusal is Refused only when no attempt reached the downstream (an
// attempt that did, failed, and then tripped the breaker or met a full
// limit on its retry, is a failure the outer breaker must count).
func TestErrorRetryClass(t *testing.T) {
	for _, tc := range []struct {
		reason   error
		attempts int
		want     retry.Class
	}{
		{ErrShed, 0, retry.ClassRefused},
		{ErrOpen, 0, retry.ClassRefused},
		{ErrShed, 1, retry.ClassFailure},
		{ErrOpen, 1, retry.ClassFailure},
		{ErrAttemptsExhausted, 3, retry.ClassFailure},
		{ErrBudgetExhausted, 1, retry.ClassFailure},
		{ErrDeadline, 1, retry.ClassFailure},
		{ErrWaitTooLong, 1, retry.ClassFailure},
		{context.Canceled, 0, retry.ClassCanceled},
		{nil, 2, retry.ClassFailure},
	} {
		e := &Error{Gate: "inner", Reason: tc.reason, Attempts: tc.attempts, Last: errUpstream}
		if got := retry.Classify(e); got != tc.want {
			t.Errorf("Reason %v, Attempts %d: class %v, want %v", tc.reason, tc.attempts, got, tc.want)
		}
	}
}

// The outer breaker counts what reached the downstream through the inner
// Gate, whatever the inner Gate did next, and only that (found by an
// adversarial review of ClassRefused): the inner breaker tripping on the
// attempt's failure, the inner limiter shedding the retry of a failed
// attempt, and a middle Gate whose retry an innermost Gate refused all
// count one failure.
func TestOuterBreakerCountsWhatReachedTheDownstream(t *testing.T) {
	wait := func(n int64) int64 { return n - 1 } // the longest backoff: deterministic
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, outer *Gate) error
	}{
		{"inner breaker trips on the attempt's failure (MinCalls 1)", func(t *testing.T, outer *Gate) error {
			inner := mustGate(t, WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Hour}))
			return outer.Guard(context.Background(), func(ctx context.Context) error {
				return inner.Guard(ctx, func(context.Context) error { return retry.Transient(errUpstream) })
			})
		}},
		{"inner limit 1 sheds the retry of a failed attempt", func(t *testing.T, outer *Gate) error {
			inner := mustGate(t, WithLimiter(adaptive.Config{MinLimit: 1, MaxLimit: 1, InitialLimit: 1}),
				WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond, Rand: wait}))
			release := make(chan struct{})
			defer close(release)
			go func() {
				time.Sleep(10 * time.Millisecond) // takes the slot during the backoff
				_ = inner.Guard(context.Background(), func(context.Context) error { <-release; return nil })
			}()
			return outer.Guard(context.Background(), func(ctx context.Context) error {
				return inner.Guard(ctx, func(context.Context) error { return retry.Transient(errUpstream) })
			})
		}},
		{"three levels: the middle Gate's retry refused by a shed", middleRetryRefusedBy(&Error{Gate: "innermost", Reason: ErrShed})},
		{"three levels: the middle Gate's retry refused by an open breaker",
			middleRetryRefusedBy(&Error{Gate: "innermost", Reason: ErrOpen, Hint: time.Second})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				outer := mustGate(t, WithBreaker(breaker.Config{MinCalls: 100}), WithRetry(retry.Config{MaxAttempts: 1}))
				if err := tc.run(t, outer); err == nil {
					t.Fatal("the call succeeded: the test does not test")
				}
				if c := outer.Breaker().Counts(); c.Failures != 1 {
					t.Errorf("outer breaker counted %d failures, want 1 (an attempt reached the downstream and failed)", c.Failures)
				}
			})
		})
	}
}

// A custom classifier replaces the Gate's default whole: one that calls
// every error a failure gets an inner Gate's shed counted as a failure too
// (the default classes it Refused, through Error.RetryClass, and ignores
// it; found by an adversarial review).
func TestCustomClassifierDecidesForInnerShed(t *testing.T) {
	g := mustGate(t, WithBreaker(breaker.Config{MinCalls: 100}), WithRetry(retry.Config{MaxAttempts: 1,
		Classify: func(err error) retry.Class {
			if err == nil {
				return retry.ClassSuccess
			}
			return retry.ClassFailure
		}}))
	shed := &Error{Gate: "inner", Reason: ErrShed}
	if err := g.Guard(context.Background(), func(context.Context) error { return shed }); err != shed {
		t.Fatalf("got %v, want the inner Gate's error returned as fn returned it", err)
	}
	if c := g.Breaker().Counts(); c.Failures != 1 {
		t.Errorf("breaker counted %d failures, want 1 (the custom classifier's verdict)", c.Failures)
	}
}

// middleRetryRefusedBy runs a call through outer and a middle Gate whose
// first attempt fails transiently at the downstream and whose retry an
// innermost Gate refuses with refusal.
func middleRetryRefusedBy(refusal error) func(t *testing.T, outer *Gate) error {
	return func(t *testing.T, outer *Gate) error {
		middle := mustGate(t, WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: time.Millisecond}))
		n := 0
		return outer.Guard(context.Background(), func(ctx context.Context) error {
			return middle.Guard(ctx, func(context.Context) error {
				if n++; n == 1 {
					return retry.Transient(errUpstream)
				}
				return refusal
			})
		})
	}
}

// An outer Gate's retry that an inner Gate refuses never reached the
// downstream: its budget token comes back, as for the outer Gate's own
// refusals (found by an adversarial review).
func TestOuterRetryRefusedByInnerRefundsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := mustGate(t, WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Hour}), WithRetry(retry.Config{MaxAttempts: 1}))
		b, err := retry.NewBudget(retry.BudgetConfig{Max: 5})
		if err != nil {
			t.Fatal(err)
		}
		outer := mustGate(t, WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: time.Millisecond, Budget: b}))
		_ = inner.Guard(context.Background(), func(context.Context) error { return retry.Transient(errUpstream) }) // opens it
		attempts := 0
		_ = outer.Guard(context.Background(), func(ctx context.Context) error {
			if attempts++; attempts == 1 {
				return retry.Transient(errUpstream) // the outer call's own first step fails (an inner Gate's error is never retried)
			}
			return inner.Guard(ctx, func(context.Context) error { return nil })
		})
		if attempts != 2 {
			t.Fatalf("%d outer attempts, want 2 (a failure, then a retry refused by the open inner breaker)", attempts)
		}
		if got := b.Tokens(); got != 5 {
			t.Errorf("budget %.1f tokens after a retry the inner Gate refused, want 5 (full)", got)
		}
	})
}

// An outer breaker that is half-open and whose probe meets an inner Gate's
// refusal gets its probe place back at once (an ignored probe frees it) and
// closes on the next probe that reaches a healthy downstream, for both kinds
// of refusal (found holding by an adversarial review; kept as a guard).
func TestHalfOpenOuterProbeMeetsInnerRefusal(t *testing.T) {
	for _, kind := range []string{"inner breaker open", "inner limit full"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				outer, err := New("outer", WithBreaker(breaker.Config{MinCalls: 1, Probes: 1, OpenFor: time.Second, ProbeLease: time.Hour}),
					WithRetry(retry.Config{MaxAttempts: 1}))
				if err != nil {
					t.Fatal(err)
				}
				inner := mustGate(t, WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Hour}),
					WithLimiter(adaptive.Config{MinLimit: 1, MaxLimit: 1, InitialLimit: 1}), WithRetry(retry.Config{MaxAttempts: 1}))
				_ = outer.Guard(context.Background(), func(context.Context) error { return errUpstream })
				release := make(chan struct{})
				if kind == "inner breaker open" {
					_ = inner.Guard(context.Background(), func(context.Context) error { return errUpstream })
				} else {
					go func() { _ = inner.Guard(context.Background(), func(context.Context) error { <-release; return nil }) }()
					synctest.Wait()
				}
				time.Sleep(time.Second + time.Millisecond)
				if s := outer.Breaker().State(); s != breaker.HalfOpen {
					t.Fatalf("outer breaker %v, want half-open", s)
				}
				for i := range 5 {
					err := outer.Guard(context.Background(), func(ctx context.Context) error {
						return inner.Guard(ctx, func(context.Context) error { return nil })
					})
					var e *Error
					if errors.As(err, &e) && e.Gate == "outer" && errors.Is(err, ErrOpen) {
						t.Fatalf("probe %d refused by the outer breaker: the ignored probe's place was not given back", i)
					}
				}
				close(release)
				synctest.Wait()
				if err := outer.Guard(context.Background(), func(context.Context) error { return nil }); err != nil {
					t.Fatalf("probe to a healthy downstream: %v", err)
				}
				if s := outer.Breaker().State(); s != breaker.Closed {
					t.Errorf("outer breaker %v after a successful probe, want closed", s)
				}
			})
		})
	}
}

// Issue 13, defect 3: an inner Gate that makes one attempt (MaxAttempts 1,
// or a non-idempotent call without a key) returned a transient error as it
// was, and the outer Gate retried it: the downstream saw 3 attempts for
// one call. An outer Gate never retries an inner Gate's error.
func TestOuterGateDoesNotRetryInnerSingleAttempt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inner    retry.Config
		innerCtx func(context.Context) context.Context
		err      error
		before   int // downstream attempts the trial saw
		want     int
	}{
		{"inner MaxAttempts 1, transient error", retry.Config{MaxAttempts: 1}, nil, retry.Transient(errUpstream), 3, 1},
		{"inner MaxAttempts 1, overload error", retry.Config{MaxAttempts: 1}, nil, retry.Overload(errUpstream, 0), 3, 1},
		{"inner call non-idempotent, transient error", retry.Config{}, retry.NonIdempotent, retry.Transient(errUpstream), 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := mustGate(t, WithRetry(tc.inner))
				outer := mustGate(t) // MaxAttempts 3
				downstream := 0
				err := outer.Guard(context.Background(), func(ctx context.Context) error {
					if tc.innerCtx != nil {
						ctx = tc.innerCtx(ctx)
					}
					return inner.Guard(ctx, func(context.Context) error { downstream++; return tc.err })
				})
				if downstream != tc.want {
					t.Errorf("%d downstream attempts for one call, want %d (before the fix: %d)", downstream, tc.want, tc.before)
				}
				if !errors.Is(err, errUpstream) {
					t.Errorf("err = %v, want it to wrap the downstream's error", err)
				}
			})
		})
	}
}
