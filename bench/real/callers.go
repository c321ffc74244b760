package real

import (
	"context"
	"errors"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// Settings every trial shares.
const (
	// Rate is the offered load, calls per second, open loop.
	Rate = 300
	// Deadline is each call's deadline, set on its context when it starts.
	Deadline = 2 * time.Second
	// AttemptTimeout bounds one attempt of the contenders that retry
	// (floodgate, failsafe-go): the whole deadline, as the plain clients
	// get. Half of it (the first version) turned a Redis stall's 0.5–1.5 s
	// waits, which succeed within the deadline, into timeouts that every
	// limiter must cut on (floodgate 88 of 4,561 calls in the full form's
	// stalls against 429 with the whole deadline; go-redis 961 and 683).
	AttemptTimeout = Deadline
	// PoolSize is every client's connection pool (go-redis's PoolSize,
	// net/http's MaxConnsPerHost).
	PoolSize = 50
)

// Caller makes user calls through one contender's protection.
type Caller interface {
	// Call makes one user call: it calls attempt once per attempt with
	// the attempt's context and returns nil or the call's error.
	Call(ctx context.Context, attempt func(context.Context) error) error
	// Refused reports whether err, returned by Call, is the contender's own
	// refusal (a shed, an open breaker).
	Refused(err error) bool
	// Limit returns the contender's concurrency limit now, or 0 when it
	// has none.
	Limit() int
}

// direct is an unprotected client: one attempt, no limit, no refusal.
type direct struct{}

func (direct) Call(ctx context.Context, attempt func(context.Context) error) error {
	return attempt(ctx)
}
func (direct) Refused(error) bool { return false }
func (direct) Limit() int         { return 0 }

// gate is floodgate's default gate, set up as a user would: AttemptTimeout
// per attempt, the call's Deadline as the retry loop's Timeout, and the
// downstream's errors marked by mark (nil is kept nil).
type gate struct {
	g    *floodgate.Gate
	mark func(error) error
}

// newGate returns floodgate.New(name, WithRetry{AttemptTimeout, Timeout:
// Deadline}) with every other setting at its default.
func newGate(name string, mark func(error) error) (*gate, error) {
	g, err := floodgate.New(name, floodgate.WithRetry(retry.Config{AttemptTimeout: AttemptTimeout, Timeout: Deadline}))
	if err != nil {
		return nil, err
	}
	return &gate{g: g, mark: mark}, nil
}

func (c *gate) Call(ctx context.Context, attempt func(context.Context) error) error {
	return c.g.Guard(ctx, func(ctx context.Context) error { return c.mark(attempt(ctx)) })
}

func (c *gate) Refused(err error) bool {
	return errors.Is(err, floodgate.ErrShed) || errors.Is(err, floodgate.ErrOpen)
}

func (c *gate) Limit() int { return c.g.Limiter().Limit() }

// failsafeCaller is failsafe-go v0.9.8 as bench/sim sets it up: a retry
// policy with a budget, a circuit breaker and an adaptive limiter,
// outermost first, built once; here each attempt gets AttemptTimeout, and
// the errors permanent reports are not retried (as floodgate's Permanent).
type failsafeCaller struct {
	exec    failsafe.Executor[any]
	limiter adaptivelimiter.AdaptiveLimiter[any]
}

// newFailsafe builds the failsafe-go contender: failsafe-go's defaults (no
// backoff, budget.New(), the adaptive limiter's defaults) but for the
// breaker, which takes floodgate's thresholds (50% failures of at least 20
// calls in 10 s, 3 probes, a fixed breaker.DefaultMaxOpenFor open) and ignores the
// limiter's rejections, and no retry of its own refusals or of a permanent
// error; the same choices as bench/sim's newFailsafe, which says why.
func newFailsafe(permanent func(error) bool) *failsafeCaller {
	lim := adaptivelimiter.NewWithDefaults[any]()
	rp := retrypolicy.NewBuilder[any]().WithBudget(budget.New()).
		AbortOnErrors(circuitbreaker.ErrOpen, adaptivelimiter.ErrExceeded).
		AbortIf(func(_ any, err error) bool { return err != nil && permanent(err) }).
		Build()
	cb := circuitbreaker.NewBuilder[any]().
		WithFailureRateThreshold(0.5, 20, 10*time.Second).
		WithDelay(breaker.DefaultMaxOpenFor).
		WithSuccessThreshold(3).
		HandleIf(func(_ any, err error) bool {
			return err != nil && !errors.Is(err, adaptivelimiter.ErrExceeded) && !permanent(err)
		}).
		Build()
	return &failsafeCaller{exec: failsafe.With[any](rp, cb, lim), limiter: lim}
}

func (c *failsafeCaller) Call(ctx context.Context, attempt func(context.Context) error) error {
	return c.exec.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error {
		actx, cancel := context.WithTimeout(e.Context(), AttemptTimeout)
		defer cancel()
		return attempt(actx)
	})
}

func (c *failsafeCaller) Refused(err error) bool {
	return errors.Is(err, adaptivelimiter.ErrExceeded) || errors.Is(err, circuitbreaker.ErrOpen)
}

func (c *failsafeCaller) Limit() int { return c.limiter.Limit() }
