package floodgate

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// The package doc's rule, path by path (issue 13, defect 12: the shape
// depended on the path): fn's error comes back as it is only when fn's
// only attempt failed with an error that is never retried; every other
// failure is an *Error with a non-nil Reason; fn's error is always
// reachable with errors.Is. The "before" column is what the trial saw.
func TestErrorShapeOfEveryPath(t *testing.T) {
	maxWait := func(k int64) int64 { return k - 1 }
	second := func(first, then error) func(context.Context) error {
		n := 0
		return func(context.Context) error {
			time.Sleep(10 * time.Millisecond)
			if n++; n == 1 {
				return first
			}
			return then
		}
	}
	permanent := retry.Permanent(errUpstream)
	for _, tc := range []struct {
		name       string
		before     string // what Guard returned before the fix
		opts       []Option
		ctx        func() (context.Context, context.CancelFunc)
		prepare    func(g *Gate)
		fn         func(context.Context) error
		wantBare   bool  // fn's error as it is
		wantReason error // otherwise the *Error's Reason
		wantFnErr  bool  // errors.Is(err, errUpstream)
	}{
		{name: "first attempt shed", before: "bare ErrShed",
			opts:    []Option{WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1})},
			prepare: func(g *Gate) { g.Limiter().Acquire() }, fn: ok, wantReason: ErrShed},
		{name: "breaker open before any attempt", before: "*Error, ErrOpen",
			opts:    []Option{WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Hour}), WithRetry(retry.Config{MaxAttempts: 1})},
			prepare: func(g *Gate) { _ = g.Guard(context.Background(), func(context.Context) error { return errUpstream }) },
			fn:      ok, wantReason: ErrOpen},
		{name: "permanent error, first attempt", before: "bare", fn: second(permanent, nil), wantBare: true, wantFnErr: true},
		{name: "permanent error after a retry", before: "*Error, Reason nil",
			opts: []Option{WithRetry(retry.Config{Rand: maxWait})},
			fn:   second(retry.Transient(errUpstream), permanent), wantReason: ErrNotRetried, wantFnErr: true},
		{name: "caller cancels during a retry", before: "*Error, Reason nil",
			opts: []Option{WithRetry(retry.Config{Rand: maxWait})},
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(150*time.Millisecond, cancel)
				return ctx, cancel
			},
			fn: func() func(context.Context) error {
				attempt := second(retry.Transient(errUpstream), nil)
				return func(ctx context.Context) error {
					if err := attempt(ctx); err != nil {
						return err
					}
					<-ctx.Done() // 120 ms: the retry waits for the downstream; the caller cancels at 150 ms
					return ctx.Err()
				}
			}(),
			wantReason: context.Canceled},
		{name: "hint 1 h > MaxDelay 10 s, deadline 5 s", before: "*Error, ErrDeadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 5*time.Second)
			},
			fn: second(retry.Overload(errUpstream, time.Hour), nil), wantReason: ErrWaitTooLong, wantFnErr: true},
		{name: "hint 1 h > MaxDelay 10 s, no deadline", before: "*Error, ErrWaitTooLong",
			fn: second(retry.Overload(errUpstream, time.Hour), nil), wantReason: ErrWaitTooLong, wantFnErr: true},
		{name: "MaxAttempts 1, transient error", before: "bare",
			opts: []Option{WithRetry(retry.Config{MaxAttempts: 1})},
			fn:   second(retry.Transient(errUpstream), nil), wantReason: ErrAttemptsExhausted, wantFnErr: true},
		{name: "non-idempotent, transient error", before: "bare",
			ctx: func() (context.Context, context.CancelFunc) {
				return retry.NonIdempotent(context.Background()), func() {}
			},
			fn: second(retry.Transient(errUpstream), nil), wantReason: ErrNotIdempotent, wantFnErr: true},
		{name: "budget empty", before: "*Error, ErrBudgetExhausted",
			opts: []Option{WithRetry(retry.Config{Budget: emptyBudget()})},
			fn:   second(retry.Transient(errUpstream), nil), wantReason: ErrBudgetExhausted, wantFnErr: true},
		{name: "attempts used up", before: "*Error, ErrAttemptsExhausted",
			opts: []Option{WithRetry(retry.Config{Rand: func(int64) int64 { return 0 }})},
			fn:   func(context.Context) error { return retry.Transient(errUpstream) }, wantReason: ErrAttemptsExhausted, wantFnErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustGate(t, tc.opts...)
				if tc.prepare != nil {
					tc.prepare(g)
				}
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tc.ctx != nil {
					ctx, cancel = tc.ctx()
				}
				defer cancel()
				err := g.Guard(ctx, tc.fn)
				var e *Error
				isError := errors.As(err, &e)
				switch {
				case tc.wantBare && isError:
					t.Errorf("got %T %v, want fn's error as it is (before: %s)", err, err, tc.before)
				case !tc.wantBare && (!isError || e.Reason != tc.wantReason):
					t.Errorf("got %T %v, want an *Error with Reason %v (before: %s)", err, err, tc.wantReason, tc.before)
				}
				if tc.wantFnErr && !errors.Is(err, errUpstream) {
					t.Errorf("errors.Is(%v, fn's error) = false", err)
				}
				if !tc.wantBare && !errors.Is(err, tc.wantReason) {
					t.Errorf("errors.Is(%v, %v) = false", err, tc.wantReason)
				}
			})
		})
	}
}

// Error.Is matches the Reason without Unwrap, and errors.Is still finds
// everything else through Unwrap.
func TestErrorIs(t *testing.T) {
	e := &Error{Gate: "g", Reason: ErrOpen, Last: errUpstream}
	for _, tc := range []struct {
		target error
		want   bool
	}{
		{ErrOpen, true}, {ErrShed, false}, {errUpstream, true}, {context.Canceled, false},
	} {
		if got := errors.Is(e, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", e, tc.target, got, tc.want)
		}
	}
	// ErrNotIdempotent is a kind of ErrNotRetried (a fresh user's check
	// for "not retried" must still find it); the converse does not hold.
	ni := &Error{Gate: "g", Reason: ErrNotIdempotent, Last: errUpstream}
	nr := &Error{Gate: "g", Reason: ErrNotRetried, Last: errUpstream}
	for _, tc := range []struct {
		err    *Error
		target error
		want   bool
	}{
		{ni, ErrNotIdempotent, true}, {ni, ErrNotRetried, true}, {nr, ErrNotRetried, true}, {nr, ErrNotIdempotent, false},
	} {
		if got := tc.err.Is(tc.target); got != tc.want {
			t.Errorf("%v.Is(%v) = %v, want %v", tc.err.Reason, tc.target, got, tc.want)
		}
		if got := errors.Is(tc.err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", tc.err.Reason, tc.target, got, tc.want)
		}
	}
}
