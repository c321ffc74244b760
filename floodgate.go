package floodgate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// Gate guards the calls to one downstream. Create one with [New]; it is safe
// for concurrent use, and meant to be shared by every call to that
// downstream.
type Gate struct {
	name    string
	limiter *adaptive.Limiter
	breaker *breaker.Breaker
	retry   *retry.Policy
	budget  *retry.Budget
	obs     Observer  // nil: no observer calls, no extra clock reads
	base    time.Time // monotonic origin: attempt starts are base + time.Since(base)
	shed    *Error    // returned, shared, for every call shed at its first attempt
	// slowCall is the breaker's SlowCall: the longest an attempt cut by
	// the call's deadline must have run to count (see normalRTT).
	slowCall time.Duration
}

// New returns a Gate named name (used in errors and by the breaker's
// callback; must not be empty), or an error: when name is empty, when an
// option is nil (naming its position), naming the first option field that
// is out of range, when the limiter's Algorithm already runs in another
// gate or Limiter (adaptive.New), when the Observer is a nil pointer, or
// when the Observer's Attach fails.
// With no options every layer uses its defaults. A New that fails in the
// Observer's Attach has claimed the limiter's Algorithm: retry with a new
// one.
func New(name string, opts ...Option) (*Gate, error) {
	if name == "" {
		return nil, errors.New("floodgate: name must not be empty")
	}
	var cfg config
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("floodgate: gate %q: option %d is nil", name, i)
		}
		o(&cfg)
	}
	if v := reflect.ValueOf(cfg.observer); cfg.observer != nil && v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("floodgate: gate %q: Observer is a nil %T", name, cfg.observer)
	}
	cfg.hooks(name)
	b, err := breaker.New(name, cfg.breaker)
	if err != nil {
		return nil, fmt.Errorf("floodgate: gate %q: %w", name, err)
	}
	p, err := retry.New(cfg.retry)
	if err != nil {
		return nil, fmt.Errorf("floodgate: gate %q: %w", name, err)
	}
	// The limiter last: it claims its Algorithm (adaptive.New), which a
	// failed New should leave free wherever it can.
	l, err := adaptive.New(cfg.limiter)
	if err != nil {
		return nil, fmt.Errorf("floodgate: gate %q: %w", name, err)
	}
	g := &Gate{name: name, limiter: l, breaker: b, retry: p, budget: p.Budget(), obs: cfg.observer, base: time.Now(),
		shed: &Error{Gate: name, Reason: ErrShed}, slowCall: cfg.breaker.SlowCall}
	if g.slowCall == 0 {
		g.slowCall = breaker.DefaultSlowCall
	}
	if g.obs != nil {
		if err := g.obs.Attach(g); err != nil {
			return nil, fmt.Errorf("floodgate: gate %q: observer: %w", name, err)
		}
	}
	return g, nil
}

// Guard calls fn through the gate's three layers, outermost first: the
// budgeted retry loop, the circuit breaker, the adaptive limiter. Per
// attempt, in this order: breaker check, limiter admission, fn with the
// attempt's context, limiter release with the RTT, breaker record. Nothing
// is held while waiting between attempts.
//
// It returns nil when an attempt succeeds; fn's error as it is when fn's
// only attempt failed with an error of a class that is never retried;
// otherwise an [*Error] with a non-nil Reason that wraps fn's last error
// (the package doc's table lists every path). Without touching any layer (no slot, no
// breaker permit, no budget deposit: the call never starts), it returns an
// *Error with Reason [ErrNilArgument] when g, ctx or fn is nil, and one
// with the context's error as its Reason when ctx has already ended
// (cancelled, or its deadline passed).
//
// If fn (or a custom classifier) panics or calls runtime.Goexit, its slot
// is released, the breaker records a failure, the observer is told of a
// failed call, and the panic goes on to the caller.
func (g *Gate) Guard(ctx context.Context, fn func(context.Context) error) error {
	if g == nil {
		return &Error{Reason: ErrNilArgument}
	}
	var c call
	if g.obs != nil {
		// Deferred, so that a call that does not return (fn, a classifier
		// or a callback panicked, or fn called runtime.Goexit) is reported too.
		defer g.observe(&c)
	}
	if fn == nil || ctx == nil {
		return c.finish(&Error{Gate: g.name, Reason: ErrNilArgument}, OutcomeFailure, 0, time.Time{})
	}
	if err := ctx.Err(); err != nil { // the caller gave up before the call: it never starts
		return c.finish(&Error{Gate: g.name, Reason: err}, outcomeOf(err), 0, time.Time{})
	}
	g.budget.Deposit()
	var (
		last        error
		deadline    time.Time
		hasDeadline bool
	)
	for attempt := 0; ; attempt++ {
		permit, err := g.breaker.Allow()
		if err != nil {
			if attempt > 0 {
				g.budget.Refund() // the retry's token: it never reached the downstream
			}
			return c.finish(&Error{Gate: g.name, Reason: ErrOpen, Last: last, Attempts: attempt, Hint: g.breaker.RetryIn()},
				OutcomeOpen, attempt, time.Time{})
		}
		if !g.limiter.Acquire() {
			g.breaker.Done(permit, breaker.Ignore, 0, time.Time{})
			if attempt == 0 {
				return c.finish(g.shed, OutcomeShed, 0, time.Time{})
			}
			g.budget.Refund()
			return c.finish(&Error{Gate: g.name, Reason: ErrShed, Last: last, Attempts: attempt},
				OutcomeShed, attempt, time.Time{})
		}
		// One monotonic clock read: time.Now would also read the wall clock
		// (39 ns against 22 ns here); every use of start compares or
		// subtracts, which uses the monotonic reading.
		start := g.base.Add(time.Since(g.base))
		if attempt == 0 {
			c.first = start
			deadline, hasDeadline = g.retry.Deadline(ctx, start)
		}
		if hasDeadline && !start.Before(deadline) {
			// The deadline passed before this attempt: not the downstream's doing.
			g.limiter.Release(start, 0, adaptive.Ignore)
			g.breaker.Done(permit, breaker.Ignore, 0, start)
			if attempt > 0 {
				g.budget.Refund()
			}
			reason := ctx.Err()
			if reason == nil {
				reason = ErrDeadline
			}
			return c.finish(&Error{Gate: g.name, Reason: reason, Last: last, Attempts: attempt},
				outcomeOf(reason), attempt, start)
		}
		c.attempts = attempt + 1 // reaches the downstream
		class, end, err := g.attempt(ctx, fn, permit, attempt > 0, start, deadline, hasDeadline)
		if class == retry.ClassRefused && attempt > 0 {
			g.budget.Refund() // an inner Gate refused the retry: it never reached the downstream
		}
		if class == retry.ClassSuccess {
			if err == nil {
				return c.finish(nil, OutcomeSuccess, attempt+1, end)
			}
			if attempt == 0 { // a custom classifier's success: not retried
				return c.finish(err, OutcomeFailure, 1, end)
			}
			return c.finish(&Error{Gate: g.name, Reason: ErrNotRetried, Last: err, Attempts: attempt + 1},
				OutcomeFailure, attempt+1, end)
		}
		var blocked error
		if g.breaker.OpenAt(end) {
			blocked = ErrOpen
		}
		var d retry.Decision
		if class.Retryable() && RetriesOwned(ctx) { // an upstream retries: one attempt (read on failures only)
			d.Stop, d.Hint = ErrAttemptsExhausted, hintOf(err)
		} else {
			d = g.retry.Decide(ctx, attempt, err, class, end, deadline, hasDeadline, blocked)
		}
		if !d.Retry {
			o := outcomeOf(d.Stop)
			switch {
			case d.Stop != nil && d.Stop != ErrAttemptsExhausted && d.Stop != ErrNotIdempotent:
			case class == retry.ClassCanceled:
				o = OutcomeCanceled
			case hasDeadline && !end.Before(deadline):
				o = OutcomeDeadline // the last attempt ran into the call's deadline
			}
			reason, hint := d.Stop, d.Hint
			switch {
			case reason == ErrOpen:
				hint = g.breaker.RetryIn()
			case reason != nil:
			case attempt == 0: // fn's only attempt, with an error that is never retried
				return c.finish(err, o, 1, end)
			case class == retry.ClassCanceled:
				reason = context.Canceled
			default:
				reason = ErrNotRetried
			}
			return c.finish(&Error{Gate: g.name, Reason: reason, Last: err, Attempts: attempt + 1, Hint: hint},
				o, attempt+1, end)
		}
		last = err
		if err := sleep(ctx, d.Wait); err != nil {
			g.budget.Refund() // the retry's token: the caller gave up before it reached the downstream
			return c.finish(&Error{Gate: g.name, Reason: err, Last: last, Attempts: attempt + 1, Hint: d.Hint},
				outcomeOf(err), attempt+1, end)
		}
	}
}

// call is what a Guard call reports to the observer as it returns.
type call struct {
	o        Outcome
	attempts int       // attempts that reached the downstream
	first    time.Time // start of the first attempt
	end      time.Time // end of the last attempt, for a success
	returned bool      // false: fn, a classifier or a callback panicked, or fn called runtime.Goexit
}

// finish records how the call ended and returns err.
func (c *call) finish(err error, o Outcome, attempts int, end time.Time) error {
	c.o, c.attempts, c.end, c.returned = o, attempts, end, true
	return err
}

// observe tells the observer of the call, once, as Guard returns or
// unwinds: a call that did not return is a failure with the attempts
// made so far.
func (g *Gate) observe(c *call) {
	if !c.returned {
		c.o = OutcomeFailure
	}
	var d time.Duration
	switch {
	case c.attempts == 0:
	case c.o == OutcomeSuccess:
		d = c.end.Sub(c.first)
	default:
		d = time.Since(c.first) // failure paths only: includes any wait
	}
	g.obs.Call(c.o, c.attempts, d)
}

// attempt runs fn once inside a limiter slot and a breaker permit, and
// reports the outcome to both, even if fn panics.
func (g *Gate) attempt(ctx context.Context, fn func(context.Context) error, permit breaker.Permit,
	isRetry bool, start, deadline time.Time, hasDeadline bool) (class retry.Class, end time.Time, err error) {
	actx := ctx
	if d, ok := g.retry.AttemptDeadline(start, deadline, hasDeadline); ok {
		if cd, cok := ctx.Deadline(); !cok || d.Before(cd) {
			var cancel context.CancelFunc
			actx, cancel = context.WithDeadline(ctx, d)
			defer cancel()
		}
	}
	reported := false
	defer func() {
		if !reported { // fn or the classifier panicked
			rtt := time.Since(start)
			g.limiter.Release(start, rtt, adaptive.Ignore)
			g.breaker.Done(permit, breaker.Failure, rtt, start.Add(rtt))
			if g.obs != nil {
				g.obs.Attempt(isRetry, rtt)
			}
		}
	}()
	err = fn(actx)
	rtt := time.Since(start)
	class = g.retry.Classify(err)
	if class > retry.ClassRefused {
		class = retry.ClassFailure // a custom classifier's unknown class
	}
	if class != retry.ClassSuccess && ctx.Err() == context.Canceled {
		class = retry.ClassCanceled // the caller gave up: says nothing about the downstream
	}
	end = start.Add(rtt)
	reported = true
	bo, lo := breakerOutcome[class], limiterOutcome[class]
	if bo == breaker.Failure && hasDeadline && !end.Before(deadline) && rtt < g.normalRTT() {
		// Cut by the call's deadline (the caller's or Timeout, not
		// AttemptTimeout) before the downstream's normal latency: it says
		// nothing about the downstream.
		bo, lo = breaker.Ignore, adaptive.Ignore
	}
	// deferred so that the permit is reported even if a limit-change
	// callback panics in Release (the slot is given back before it runs)
	if lo == adaptive.Drop && actx.Err() == nil && !timedOut(err) {
		lo = adaptive.Overload // the server's overload answer, not a timeout
	}
	defer g.breaker.Done(permit, bo, rtt, end)
	g.limiter.Release(start, rtt, lo)
	if g.obs != nil {
		g.obs.Attempt(isRetry, rtt)
	}
	return class, end, err
}

// normalRTT is the downstream's normal latency, for the rule on attempts
// cut by the call's deadline: the limiter's RecentRTT (the mean RTT of the
// last window's successes), at most the breaker's SlowCall (a call that
// long is slow whatever the history), and SlowCall before the first
// window with successes.
func (g *Gate) normalRTT() time.Duration {
	if r := g.limiter.RecentRTT(); r > 0 && r < g.slowCall {
		return r
	}
	return g.slowCall
}

var limiterOutcome = [...]adaptive.Outcome{
	retry.ClassSuccess:   adaptive.Success,
	retry.ClassPermanent: adaptive.Ignore,
	retry.ClassFailure:   adaptive.Ignore,
	retry.ClassTransient: adaptive.Ignore,
	retry.ClassOverload:  adaptive.Drop,
	retry.ClassCanceled:  adaptive.Ignore,
	retry.ClassRefused:   adaptive.Ignore,
}

var breakerOutcome = [...]breaker.Outcome{
	retry.ClassSuccess:   breaker.Success,
	retry.ClassPermanent: breaker.Success,
	retry.ClassFailure:   breaker.Failure,
	retry.ClassTransient: breaker.Failure,
	retry.ClassOverload:  breaker.Failure,
	retry.ClassCanceled:  breaker.Ignore,
	retry.ClassRefused:   breaker.Ignore,
}

// timedOut reports whether err is a timeout: context.DeadlineExceeded or
// an error whose Timeout method says so (net.Error), anywhere in its chain.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// hintOf is err's retry-after hint, 0 if none.
func hintOf(err error) time.Duration {
	d, _ := retry.Hint(err)
	return d
}

// sleep waits d, or returns ctx's error if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do is Guard for a function that returns a value: it returns the value of
// the attempt that succeeded, or T's zero value and Guard's error (an
// *Error with Reason [ErrNilArgument], without calling anything, when g,
// ctx or fn is nil, as Guard does).
func Do[T any](ctx context.Context, g *Gate, fn func(context.Context) (T, error)) (T, error) {
	var out T
	if fn == nil {
		return out, g.Guard(ctx, nil)
	}
	err := g.Guard(ctx, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	})
	return out, err
}

// Name returns the gate's name.
func (g *Gate) Name() string { return g.name }

// Limiter returns the gate's adaptive limiter, to read its limit and
// in-flight count.
func (g *Gate) Limiter() *adaptive.Limiter { return g.limiter }

// Breaker returns the gate's circuit breaker, to read its state and counts.
func (g *Gate) Breaker() *breaker.Breaker { return g.breaker }

// Budget returns the retry budget the gate spends from.
func (g *Gate) Budget() *retry.Budget { return g.budget }

// Stats is a snapshot of a gate's state.
type Stats struct {
	Limit        int           // current concurrency limit (calls)
	InFlight     int           // calls holding a slot now
	Breaker      breaker.State // breaker state
	BudgetTokens float64       // retry budget tokens left, 0..Max
	RecentRTT    time.Duration // mean RTT of the last window with successes
	// BaselineRTT is the limit algorithm's RTT baseline, which each
	// window's RTT is compared against (Gradient: raised only when an
	// experiment shows the RTT is not a queue of ours; see
	// adaptive.Limiter.BaselineRTT); 0 for AIMD and Fixed, and before the
	// first window with successes.
	BaselineRTT time.Duration
}

// Stats returns a snapshot of the gate's state. It takes no lock of the
// gate's own and may be called from the breaker's OnStateChange callback.
func (g *Gate) Stats() Stats {
	return Stats{
		Limit:        g.limiter.Limit(),
		InFlight:     g.limiter.InFlight(),
		Breaker:      g.breaker.State(),
		BudgetTokens: g.budget.Tokens(),
		RecentRTT:    g.limiter.RecentRTT(),
		BaselineRTT:  g.limiter.BaselineRTT(),
	}
}
