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

// The class an outer Gate sees for each way this Gate can end a call.
func TestErrorRetryClass(t *testing.T) {
	for _, tc := range []struct {
		reason error
		want   retry.Class
	}{
		{ErrShed, retry.ClassRefused},
		{ErrOpen, retry.ClassRefused},
		{ErrAttemptsExhausted, retry.ClassFailure},
		{ErrBudgetExhausted, retry.ClassFailure},
		{ErrDeadline, retry.ClassFailure},
		{ErrWaitTooLong, retry.ClassFailure},
		{context.Canceled, retry.ClassCanceled},
		{nil, retry.ClassFailure},
	} {
		e := &Error{Gate: "inner", Reason: tc.reason, Last: errUpstream}
		if got := retry.Classify(e); got != tc.want {
			t.Errorf("Reason %v: class %v, want %v", tc.reason, got, tc.want)
		}
	}
}
