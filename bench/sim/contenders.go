package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// Settings of the fixed pool.
const (
	// PoolSize is the fixed pool's size (calls in flight; in a fleet of N
	// gates, PoolSize/N per gate, so that the fleet's pools total the
	// single gate's) and the S1 and S11 downstreams' worker count.
	PoolSize = 50
	// PoolAttempts is how many attempts the fixed pool makes per call, the
	// first included (the same as floodgate's and failsafe-go's defaults).
	PoolAttempts = 3
	// PoolBackoff is the fixed pool's wait between attempts.
	PoolBackoff = 100 * time.Millisecond
)

// Caller makes user calls through one contender's protection.
type Caller interface {
	// Call makes one user call: it calls attempt once per attempt, with
	// the attempt's context, and returns nil or the call's error.
	Call(ctx context.Context, attempt func(context.Context) error) error
	// Limit returns the current concurrency limit (calls in flight), or 0
	// when the contender has none.
	Limit() int
	// Shed reports whether err, returned by Call, says that the contender
	// refused the call's last try itself: its limiter shed it or its
	// breaker was open (for a nested stack, any layer's).
	Shed(err error) bool
}

// Env is what a contender may know when it is built.
type Env struct {
	// Capacity returns the downstream's true capacity now (workers, calls in
	// flight), in a fleet this gate's share of it (Run rounds workers/Gates
	// to the nearest, at least 1). Only the oracle reads it: it is known in
	// advance.
	Capacity func() int
	// AttemptTimeout bounds one attempt (Scenario.AttemptTimeout with its
	// default applied): every contender uses it.
	AttemptTimeout time.Duration
	// Gates is how many gates of the fleet share the downstream, this one
	// included (Scenario.Gates, at least 1).
	Gates int
	// Seed seeds the contender's own randomness (backoff jitter).
	Seed uint64
	// Outer is set for the outer layers of a nested stack (S7): the layer
	// wraps another layer, not the downstream.
	Outer bool
}

// Contender is one way to call the downstream.
type Contender struct {
	// Name labels the contender in tables and plots.
	Name string
	// New builds one layer of one gate of the contender. S7 builds three
	// layers and nests them, S15 ten gates; every other scenario builds one.
	New func(Env) (Caller, error)
}

// Contenders returns the six contenders, in table order: floodgate
// (Gradient), floodgate with AIMD, floodgate with Gradient2, failsafe-go, a
// fixed pool of PoolSize, and the oracle.
func Contenders() []Contender {
	return []Contender{
		{"floodgate", func(e Env) (Caller, error) { return newFloodgate(e, nil) }},
		{"floodgate AIMD", func(e Env) (Caller, error) {
			a, err := adaptive.NewAIMD(adaptive.AIMDConfig{})
			if err != nil {
				return nil, err
			}
			return newFloodgate(e, a)
		}},
		{"floodgate Gradient2", func(e Env) (Caller, error) {
			a, err := adaptive.NewGradient2(adaptive.Gradient2Config{})
			if err != nil {
				return nil, err
			}
			return newFloodgate(e, a)
		}},
		{"failsafe-go", func(e Env) (Caller, error) { return newFailsafe(e.AttemptTimeout), nil }},
		{"fixed pool 50", func(e Env) (Caller, error) {
			if e.Outer {
				return newPool(0, e.AttemptTimeout), nil // a retry layer above the client: no pool of its own
			}
			return newPool(max(1, PoolSize/max(1, e.Gates)), e.AttemptTimeout), nil
		}},
		{"oracle", func(e Env) (Caller, error) {
			return newFloodgate(e, oracleLimit{e.Capacity})
		}},
	}
}

// lockedRand is a seeded generator shared by a gate's calls.
type lockedRand struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (r *lockedRand) Int64N(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.Int64N(n)
}

// gate is floodgate: one Gate, configured only through the public API.
type gate struct{ g *floodgate.Gate }

// newFloodgate returns a Gate with the scenario's attempt timeout and
// seeded jitter; alg nil keeps the default algorithm (Gradient).
func newFloodgate(e Env, alg adaptive.Algorithm) (*gate, error) {
	r := &lockedRand{rng: rand.New(rand.NewPCG(e.Seed, 0x6a7e))}
	opts := []floodgate.Option{floodgate.WithRetry(retry.Config{AttemptTimeout: e.AttemptTimeout, Rand: r.Int64N})}
	if e.AttemptTimeout > breaker.DefaultSlowCall {
		// An answer the attempt timeout waits for is not slow (S11):
		// with the default 1 s, 2 s answers trip the breaker.
		opts = append(opts, floodgate.WithBreaker(breaker.Config{SlowCall: e.AttemptTimeout}))
	}
	if alg != nil {
		lc := adaptive.Config{Algorithm: alg}
		if o, ok := alg.(oracleLimit); ok {
			// The oracle's limit is the capacity, up to the 10,000
			// workers of an unlimited downstream (S12–S14).
			lc.InitialLimit, lc.MaxLimit = o.capacity(), 1<<20
		}
		opts = append(opts, floodgate.WithLimiter(lc))
	}
	g, err := floodgate.New("downstream", opts...)
	if err != nil {
		return nil, err
	}
	return &gate{g}, nil
}

// GateCaller returns a Caller that calls through g, marking the
// downstream's answers as the README tells users to; for running a
// floodgate configuration other than the six contenders.
func GateCaller(g *floodgate.Gate) Caller { return &gate{g} }

func (c *gate) Call(ctx context.Context, attempt func(context.Context) error) error {
	return c.g.Guard(ctx, func(ctx context.Context) error { return floodgateError(attempt(ctx)) })
}

func (c *gate) Limit() int { return c.g.Limiter().Limit() }

func (c *gate) Shed(err error) bool {
	return errors.Is(err, floodgate.ErrShed) || errors.Is(err, floodgate.ErrOpen)
}

// floodgateError marks the downstream's own answers the way the README
// tells users to: a server error is transient, a 429 is an overload with
// its Retry-After. Anything else (timeouts, an inner Gate's error) is
// returned as it is.
func floodgateError(err error) error {
	if err == ErrServer {
		return retry.Transient(err)
	}
	if t, ok := err.(*ThrottledError); ok {
		return retry.Overload(t, t.RetryAfter)
	}
	return err
}

// oracleLimit is an Algorithm that sets the limit to the downstream's true
// capacity, known in advance. The limiter applies it at each window's close
// (every 250 ms to 1 s).
type oracleLimit struct{ capacity func() int }

func (o oracleLimit) Update(int, adaptive.Window) int { return o.capacity() }

// failsafeCaller is failsafe-go v0.9.8: a retry policy with a budget, a
// circuit breaker and an adaptive limiter, outermost first, built once.
type failsafeCaller struct {
	exec    failsafe.Executor[any]
	limiter adaptivelimiter.AdaptiveLimiter[any]
	timeout time.Duration // of one attempt
}

// newFailsafe builds failsafe-go set up the way the harness sets up
// floodgate, everything else at failsafe-go's defaults (no backoff,
// budget.New(), the adaptive limiter's defaults):
//   - the breaker: floodgate's thresholds (50% failures of at least 20
//     calls in 10 s, 3 probes) and its longest open time as a fixed one
//     (breaker.DefaultMaxOpenFor, 2 s; floodgate's opens for 250 ms first
//     and doubles on each failed probe), instead of failsafe-go's default (open
//     after one failure, for one minute), which would turn any error rate
//     into an outage; like floodgate's, it does not count the limiter's
//     rejections as failures (by default it counts every error, and opens
//     as soon as the limiter sheds: S2 goodput 6.4 calls/s);
//   - the server's Retry-After through WithDelayFunc, as failsafehttp's
//     retry policy does (floodgate gets retry.Overload(err, hint));
//   - no retry of a call its own breaker or limiter refused, as Guard does
//     (AbortOnErrors), the same setup as bench/overhead_test.go's.
//
// Each attempt gets timeout.
func newFailsafe(timeout time.Duration) *failsafeCaller {
	lim := adaptivelimiter.NewWithDefaults[any]()
	rp := retrypolicy.NewBuilder[any]().WithBudget(budget.New()).
		WithDelayFunc(func(e failsafe.ExecutionAttempt[any]) time.Duration {
			var th *ThrottledError
			if errors.As(e.LastError(), &th) {
				return th.RetryAfter
			}
			return -1 // the policy's own delay
		}).
		AbortOnErrors(circuitbreaker.ErrOpen, adaptivelimiter.ErrExceeded).
		Build()
	cb := circuitbreaker.NewBuilder[any]().
		WithFailureRateThreshold(0.5, 20, 10*time.Second).
		WithDelay(breaker.DefaultMaxOpenFor).
		WithSuccessThreshold(3).
		HandleIf(func(_ any, err error) bool { return err != nil && !errors.Is(err, adaptivelimiter.ErrExceeded) }).
		Build()
	return &failsafeCaller{exec: failsafe.With[any](rp, cb, lim), limiter: lim, timeout: timeout}
}

func (c *failsafeCaller) Call(ctx context.Context, attempt func(context.Context) error) error {
	return c.exec.WithContext(ctx).RunWithExecution(func(e failsafe.Execution[any]) error {
		actx, cancel := context.WithTimeout(e.Context(), c.timeout)
		defer cancel()
		return attempt(actx)
	})
}

func (c *failsafeCaller) Limit() int { return c.limiter.Limit() }

func (c *failsafeCaller) Shed(err error) bool {
	return errors.Is(err, adaptivelimiter.ErrExceeded) || errors.Is(err, circuitbreaker.ErrOpen)
}

// pool is the unprotected client: a fixed pool of connections (a call
// waits for a free one, as http.Transport's MaxConnsPerHost makes it),
// PoolAttempts attempts per call with a fixed PoolBackoff between them,
// every error retried. Nested (S7), only the innermost layer has a pool:
// the outer ones are the retry loops of a gateway and a service above the
// client, as in examples/slowdown's naive client.
type pool struct {
	slots   chan struct{} // nil: no pool, retries only
	timeout time.Duration // of one attempt
}

// newPool returns a pool of size connections (0 for retries only) whose
// attempts get timeout.
func newPool(size int, timeout time.Duration) *pool {
	if size == 0 {
		return &pool{timeout: timeout}
	}
	return &pool{slots: make(chan struct{}, size), timeout: timeout}
}

func (p *pool) Call(ctx context.Context, attempt func(context.Context) error) error {
	var err error
	for i := range PoolAttempts {
		if i > 0 {
			t := time.NewTimer(PoolBackoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		if err = p.attempt(ctx, attempt); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (p *pool) attempt(ctx context.Context, attempt func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if p.slots == nil {
		return attempt(ctx)
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	return attempt(ctx)
}

func (p *pool) Limit() int { return cap(p.slots) }

// Shed is always false: a pool waits for a connection, it never refuses.
func (p *pool) Shed(error) bool { return false }
