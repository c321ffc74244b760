package floodgate

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/retry"
)

// A call whose context says an upstream owns the retries makes one
// attempt: a retryable failure ends it with ErrAttemptsExhausted and the
// server's hint, spending no budget; a success and a permanent error are
// unchanged. Without the mark the same failure is tried MaxAttempts times.
func TestRetriesOwnedMakesOneAttempt(t *testing.T) {
	for _, tc := range []struct {
		name         string
		owned        bool
		err          error
		wantAttempts int
		wantReason   error // nil: fn's error as it is
		wantHint     time.Duration
	}{
		{"owned, overload with a 2 s hint", true, retry.Overload(errUpstream, 2*time.Second), 1, ErrAttemptsExhausted, 2 * time.Second},
		{"owned, transient", true, retry.Transient(errUpstream), 1, ErrAttemptsExhausted, 0},
		{"owned, permanent", true, retry.Permanent(errUpstream), 1, nil, 0},
		{"not owned, transient", false, retry.Transient(errUpstream), 3, ErrAttemptsExhausted, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustGate(t, WithRetry(retry.Config{MaxDelay: 5 * time.Second}))
				ctx := context.Background()
				if tc.owned {
					ctx = WithRetriesOwned(ctx)
				}
				if RetriesOwned(ctx) != tc.owned {
					t.Fatalf("RetriesOwned = %v, want %v", !tc.owned, tc.owned)
				}
				before := g.Budget().Tokens()
				attempts := 0
				err := g.Guard(ctx, func(context.Context) error { attempts++; return tc.err })
				if attempts != tc.wantAttempts {
					t.Errorf("%d attempts, want %d", attempts, tc.wantAttempts)
				}
				var e *Error
				switch {
				case tc.wantReason == nil && err != tc.err:
					t.Errorf("err = %v, want fn's error as it is", err)
				case tc.wantReason != nil && (!errors.As(err, &e) || e.Reason != tc.wantReason):
					t.Errorf("err = %v, want Reason %v", err, tc.wantReason)
				}
				if d, _ := RetryAfter(err); d != tc.wantHint {
					t.Errorf("hint %v, want %v", d, tc.wantHint)
				}
				if after := g.Budget().Tokens(); tc.owned && after < before {
					t.Errorf("owned call spent budget: %.2f tokens before, %.2f after", before, after)
				}
			})
		})
	}
}
