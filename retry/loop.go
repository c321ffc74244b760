package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors that end a call early, returned in a [Decision].
var (
	// ErrBudgetExhausted: the retry budget had less than one token left.
	ErrBudgetExhausted = errors.New("floodgate: retry budget exhausted")
	// ErrDeadline: the wait before the next attempt (backoff or the
	// server's retry-after hint) would end at or past the call's deadline,
	// so the call ended at once instead of sleeping.
	// It is also the reason when an attempt ran into the deadline itself.
	ErrDeadline = errors.New("floodgate: deadline reached or would pass before the next attempt")
	// ErrAttemptsExhausted: the last attempt's error would have been
	// retried, but MaxAttempts attempts were made (with MaxAttempts 1,
	// after the only attempt).
	ErrAttemptsExhausted = errors.New("floodgate: retry attempts exhausted")
	// ErrWaitTooLong: the server's retry-after hint is longer than
	// MaxDelay, the longest the loop ever sleeps, so the call ended at once
	// with the hint instead of sleeping (hand the work to a background job),
	// whatever the deadline.
	ErrWaitTooLong = errors.New("floodgate: retry-after hint longer than MaxDelay")
	// ErrNotRetried: the last attempt's error is not retried: (returned by
	// a floodgate Gate, not by Decide) a retry failed with an error whose
	// class is never retried; or, as [ErrNotIdempotent], which wraps it, a
	// non-idempotent call could not be retried.
	ErrNotRetried = errors.New("floodgate: error not retried")
	// ErrNotIdempotent: a call marked [NonIdempotent] without a key
	// ([WithIdempotencyKey]) failed with an error that would otherwise be
	// retried; a second attempt could do its work twice. It wraps
	// ErrNotRetried, so errors.Is(err, ErrNotRetried) holds for it too.
	ErrNotIdempotent = fmt.Errorf("%w: non-idempotent call without an idempotency key", ErrNotRetried)
)

// Config configures a [Policy]. Every field's zero value selects the default
// named in its doc; [New] rejects values outside the stated ranges.
type Config struct {
	// MaxAttempts is the most attempts per call, the first included; 1
	// disables retries. Default 3; range [1, 100].
	MaxAttempts int

	// BaseDelay is the backoff's base: retry n waits a uniform random time
	// in [0, min(MaxDelay, BaseDelay·2^n)]. Default 100 ms (or MaxDelay if
	// smaller); range [1 ms, 1 h], and at most MaxDelay.
	BaseDelay time.Duration

	// MaxDelay caps the backoff, and is the longest the loop ever sleeps: a
	// server's retry-after hint above it ends the call at once with
	// ErrWaitTooLong. Default 10 s (or BaseDelay if larger); range
	// [1 ms, 1 h], and at least BaseDelay.
	MaxDelay time.Duration

	// AttemptTimeout bounds each attempt: it gets min(AttemptTimeout, time
	// left before the deadline). Default 0: no bound of its own, only the
	// deadline. Range 0 or [1 ms, 1 h]; one longer than Timeout is accepted
	// and then never binds (the deadline cuts first). A bound costs context.WithDeadline's
	// allocations per attempt. In a floodgate Gate an attempt cut by
	// AttemptTimeout always counts as a failure for the breaker and a drop
	// for the limiter; one cut by the call's deadline (Timeout or the
	// context's) counts only if it ran at least the downstream's normal
	// latency (the package floodgate doc, "Whose deadline").
	AttemptTimeout time.Duration

	// Timeout is the call's overall deadline, counted from the start of its
	// first attempt; the context's deadline wins if earlier. Default 0: the
	// context's deadline only. Range 0 or [1 ms, 24 h]. It is a deadline
	// of the call, like the context's: see AttemptTimeout for how an
	// attempt cut by it counts.
	Timeout time.Duration

	// Classify maps an attempt's error to its Class. nil uses [Classify];
	// a custom one is used as it is.
	Classify func(error) Class

	// Budget pays for retries. nil gives the Policy a budget of its own with
	// the defaults of [BudgetConfig]; share one Budget between policies to
	// cap their retries together.
	Budget *Budget

	// Rand(n) returns a uniform random integer in [0, n), for the jitter.
	// nil uses math/rand/v2. Set it for deterministic tests.
	Rand func(n int64) int64
}

// Defaults of [Config].
const (
	DefaultMaxAttempts = 3
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 10 * time.Second
)

// Policy decides retries. Create one with [New]; it is safe for concurrent
// use.
type Policy struct {
	cfg Config
}

// New returns a Policy configured by cfg, or an error naming the first field
// of cfg that is out of range.
func New(cfg Config) (*Policy, error) {
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.BaseDelay == 0 {
		cfg.BaseDelay = DefaultBaseDelay
		if cfg.MaxDelay >= time.Millisecond {
			cfg.BaseDelay = min(DefaultBaseDelay, cfg.MaxDelay)
		}
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = max(DefaultMaxDelay, cfg.BaseDelay)
	}
	switch {
	case cfg.MaxAttempts < 1 || cfg.MaxAttempts > 100:
		return nil, fmt.Errorf("retry: MaxAttempts must be in [1, 100], got %d", cfg.MaxAttempts)
	case cfg.BaseDelay < time.Millisecond || cfg.BaseDelay > time.Hour:
		return nil, fmt.Errorf("retry: BaseDelay must be in [1ms, 1h], got %v", cfg.BaseDelay)
	case cfg.MaxDelay < time.Millisecond || cfg.MaxDelay > time.Hour:
		return nil, fmt.Errorf("retry: MaxDelay must be in [1ms, 1h], got %v", cfg.MaxDelay)
	case cfg.BaseDelay > cfg.MaxDelay:
		return nil, fmt.Errorf("retry: BaseDelay must be at most MaxDelay=%v, got %v", cfg.MaxDelay, cfg.BaseDelay)
	case cfg.AttemptTimeout != 0 && (cfg.AttemptTimeout < time.Millisecond || cfg.AttemptTimeout > time.Hour):
		return nil, fmt.Errorf("retry: AttemptTimeout must be 0 or in [1ms, 1h], got %v", cfg.AttemptTimeout)
	case cfg.Timeout != 0 && (cfg.Timeout < time.Millisecond || cfg.Timeout > 24*time.Hour):
		return nil, fmt.Errorf("retry: Timeout must be 0 or in [1ms, 24h], got %v", cfg.Timeout)
	}
	if cfg.Classify == nil {
		cfg.Classify = Classify
	}
	if cfg.Budget == nil {
		cfg.Budget, _ = NewBudget(BudgetConfig{})
	}
	return &Policy{cfg: cfg}, nil
}

// Budget returns the budget that pays for the policy's retries.
func (p *Policy) Budget() *Budget { return p.cfg.Budget }

// Classify returns the class of an attempt's error, using Config.Classify.
func (p *Policy) Classify(err error) Class { return p.cfg.Classify(err) }

// Deadline returns the deadline of a call made with ctx whose first attempt
// started at first: the earlier of ctx's deadline and first+Timeout. ok is
// false when the call has neither.
func (p *Policy) Deadline(ctx context.Context, first time.Time) (deadline time.Time, ok bool) {
	deadline, ok = ctx.Deadline()
	if p.cfg.Timeout > 0 {
		if d := first.Add(p.cfg.Timeout); !ok || d.Before(deadline) {
			return d, true
		}
	}
	return deadline, ok
}

// AttemptDeadline returns the deadline of an attempt starting at start:
// start+AttemptTimeout, or the call's deadline if that is earlier. ok is
// false when the attempt has neither.
func (p *Policy) AttemptDeadline(start, deadline time.Time, hasDeadline bool) (time.Time, bool) {
	if p.cfg.AttemptTimeout > 0 {
		if d := start.Add(p.cfg.AttemptTimeout); !hasDeadline || d.Before(deadline) {
			return d, true
		}
	}
	return deadline, hasDeadline
}

// Decision is what to do after a failed attempt.
type Decision struct {
	// Retry: wait Wait, then make the next attempt. Otherwise the call ends
	// with the last error, and with Stop if Stop is not nil.
	Retry bool
	// Wait is the time to sleep before the next attempt.
	Wait time.Duration
	// Stop is ErrAttemptsExhausted, ErrBudgetExhausted, ErrDeadline,
	// ErrWaitTooLong, ErrNotIdempotent or the blocked error given to Decide
	// when one of them ended the call; nil exactly when the error's class
	// is never retried (Class.Retryable is false).
	Stop error
	// Hint is the server's retry-after hint carried by the error, 0 if none.
	Hint time.Duration
}

// Decide says whether to retry after attempt number attempt (0 = the first)
// of a call made with ctx failed with err of class c at end. blocked, if
// not nil, is a reason from outside the policy that forbids further
// attempts (the circuit breaker is open): it becomes the Decision's Stop
// when the error would otherwise be retried. The steps and their order are
// those of the package doc. A granted retry has withdrawn one token from
// the budget.
func (p *Policy) Decide(ctx context.Context, attempt int, err error, c Class, end, deadline time.Time, hasDeadline bool, blocked error) Decision {
	hint, _ := Hint(err)
	if !c.Retryable() {
		return Decision{Hint: hint}
	}
	if !mayRetry(ctx) {
		return Decision{Stop: ErrNotIdempotent, Hint: hint}
	}
	if attempt+1 >= p.cfg.MaxAttempts {
		return Decision{Stop: ErrAttemptsExhausted, Hint: hint}
	}
	if blocked != nil {
		return Decision{Stop: blocked, Hint: hint}
	}
	if hint > p.cfg.MaxDelay {
		return Decision{Stop: ErrWaitTooLong, Hint: hint}
	}
	wait := max(Backoff(attempt, p.cfg.BaseDelay, p.cfg.MaxDelay, p.cfg.Rand), hint)
	if hasDeadline && !end.Add(wait).Before(deadline) {
		return Decision{Stop: ErrDeadline, Hint: hint}
	}
	if !p.cfg.Budget.Withdraw() {
		return Decision{Stop: ErrBudgetExhausted, Hint: hint}
	}
	return Decision{Retry: true, Wait: wait, Hint: hint}
}
