package floodgate

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// A breaker held open from outside (package fleet's shared breaker) refuses
// Guard's call before fn, with ErrOpen, the hold's rest as the hint and the
// class Refused; a hold that begins during a call stops its retries, the
// retry's token refunded; the breaker's own state stays closed.
func TestHeldBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := retry.NewBudget(retry.BudgetConfig{})
		if err != nil {
			t.Fatal(err)
		}
		g := mustGate(t, WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: time.Second, Budget: b}))
		g.Breaker().Hold(4*time.Second, 0)
		err = g.Guard(context.Background(), func(context.Context) error {
			t.Error("fn called while held")
			return nil
		})
		var fe *Error
		if !errors.As(err, &fe) || fe.Reason != ErrOpen || fe.Hint != 4*time.Second || fe.Attempts != 0 ||
			fe.RetryClass() != retry.ClassRefused {
			t.Errorf("held: err = %#v, want ErrOpen, hint 4s, no attempt, class refused", err)
		}
		g.Breaker().Release()
		tokens := b.Tokens()
		attempts := 0
		err = g.Guard(context.Background(), func(context.Context) error {
			attempts++
			g.Breaker().Hold(time.Minute, 0) // the fleet opens during the attempt
			return retry.Transient(errUpstream)
		})
		if attempts != 1 || !errors.Is(err, ErrOpen) || !errors.Is(err, errUpstream) {
			t.Errorf("a hold during the call: %d attempts, err %v; want 1, ErrOpen wrapping the last error", attempts, err)
		}
		if b.Tokens() < tokens {
			t.Errorf("budget %v tokens after, %v before: no retry was made", b.Tokens(), tokens)
		}
		if g.Breaker().State() != breaker.Closed {
			t.Errorf("own state %v, want closed", g.Breaker().State())
		}
	})
}
