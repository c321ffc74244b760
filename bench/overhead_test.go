package bench

// Overhead benchmarks: the cost a resilience layer adds to one call, measured
// beside the alternatives a user would pick instead, in one run so that
// benchstat can put them side by side (see docs/benchmarks.md, "Overhead").
//
//	BenchmarkSuccess/<contender>          serial success path
//	BenchmarkSuccessParallel/<contender>  success path from b.RunParallel
//	BenchmarkShed/<contender>             limit full: time to return the shed error
//	BenchmarkOpen/<contender>             breaker open: time to refuse the call
//	BenchmarkClock/{now,pair}             time.Now, and time.Now with time.Since
//
// Every contender is built once, outside the timed loop, as a fair user
// would build it, and calls the same function: a no-op, so that ns/op is
// the wrapper's cost alone.
// TestOverheadCases checks, without timing, that each contender really takes
// the path its benchmark is named after. Besides ns/op, B/op and allocs/op,
// each benchmark reports cpu-ns/op, the process's CPU time per op, which
// other processes on a shared machine disturb much less than wall time.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/sony/gobreaker/v2"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
)

// limitFloor is the lowest concurrency limit of the success-path limiters
// and the size of the success-path semaphore. b.RunParallel runs GOMAXPROCS
// goroutines; with this floor no limiter can shed one of them however its
// algorithm moves the limit on a no-op's nanosecond RTTs, so every timed op
// is a success. It is a clamp only: no code path changes.
const limitFloor = 64

// errSemFull is the channel semaphore's shed error.
var errSemFull = errors.New("semaphore full")

// noop is the guarded call: it returns at once.
func noop(context.Context) error { return nil }

// overheadCase is one contender on one path.
type overheadCase struct {
	name string
	// build returns one call through the contender, which calls fn when the
	// call is admitted. Everything a user would build once is built here.
	build func(tb testing.TB, fn func(context.Context) error) func() error
	// refused is what a refused call's error matches with errors.Is; nil
	// for the success path, where every call must succeed.
	refused error
}

// successCases are the contenders on the success path, cheapest first.
var successCases = []overheadCase{
	{name: "bare", build: func(_ testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		return func() error { return fn(ctx) }
	}},
	{name: "semaphore", build: func(_ testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		sem := make(chan struct{}, limitFloor)
		return func() error {
			sem <- struct{}{}
			defer func() { <-sem }()
			return fn(ctx)
		}
	}},
	{name: "gobreaker-execute", build: func(_ testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{})
		req := func() (struct{}, error) { return struct{}{}, fn(ctx) }
		return func() error {
			_, err := cb.Execute(req)
			return err
		}
	}},
	{name: "floor", build: func(_ testing.TB, fn func(context.Context) error) func() error {
		// The floor: gobreaker's two-step Allow and done around the
		// call, and one clock pair for the RTT; what Guard could not avoid
		// while every call went through gobreaker (a closed breaker now
		// admits calls without it).
		ctx := context.Background()
		cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{})
		return func() error {
			done, err := cb.Allow()
			if err != nil {
				return err
			}
			start := time.Now()
			err = fn(ctx)
			_ = time.Since(start)
			done(err)
			return err
		}
	}},
	{name: "floodgate-limiter", build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		l := newLimiter(tb, adaptive.Config{MinLimit: limitFloor})
		return limiterCall(l, func() error { return fn(ctx) })
	}},
	{name: "floodgate-guard", build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		g := newGate(tb, floodgate.WithLimiter(adaptive.Config{MinLimit: limitFloor}))
		return func() error { return g.Guard(ctx, fn) }
	}},
	{name: "failsafe-go", build: func(_ testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		lim := adaptivelimiter.NewBuilder[any]().WithLimits(limitFloor, 200, limitFloor).Build()
		ex := newFailsafe(lim, newFailsafeBreaker(breaker.DefaultMaxOpenFor))
		run := func() error { return fn(ctx) }
		return func() error { return ex.Run(run) }
	}},
	{name: "failsafe-go-ctx", build: func(_ testing.TB, fn func(context.Context) error) func() error {
		// The same executor used with a per-call context, as a server
		// handler passes its request's: WithContext copies the executor and
		// RunWithExecution copies the execution for fn.
		ctx := context.Background()
		lim := adaptivelimiter.NewBuilder[any]().WithLimits(limitFloor, 200, limitFloor).Build()
		ex := newFailsafe(lim, newFailsafeBreaker(breaker.DefaultMaxOpenFor))
		run := func(e failsafe.Execution[any]) error { return fn(e.Context()) }
		return func() error { return ex.WithContext(ctx).RunWithExecution(run) }
	}},
}

// shedCases are the contenders whose limit is full: one slot, held.
var shedCases = []overheadCase{
	{name: "semaphore", refused: errSemFull, build: func(_ testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		sem := make(chan struct{}, 1)
		sem <- struct{}{} // hold the only slot
		return func() error {
			select {
			case sem <- struct{}{}:
			default:
				return errSemFull
			}
			defer func() { <-sem }()
			return fn(ctx)
		}
	}},
	{name: "floodgate-limiter", refused: adaptive.ErrShed, build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		l := newLimiter(tb, adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1})
		l.Acquire() // hold the only slot
		return limiterCall(l, func() error { return fn(ctx) })
	}},
	{name: "floodgate-guard", refused: floodgate.ErrShed, build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		g := newGate(tb, floodgate.WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}))
		g.Limiter().Acquire() // hold the only slot
		return func() error { return g.Guard(ctx, fn) }
	}},
	{name: "failsafe-go", refused: adaptivelimiter.ErrExceeded, build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		lim := adaptivelimiter.NewBuilder[any]().WithLimits(1, 1, 1).Build()
		if _, ok := lim.TryAcquirePermit(); !ok { // hold the only permit
			tb.Fatal("failsafe-go: no permit to hold")
		}
		ex := newFailsafe(lim, newFailsafeBreaker(breaker.DefaultMaxOpenFor))
		run := func() error { return fn(ctx) }
		return func() error { return ex.Run(run) }
	}},
}

// openCases are the contenders whose breaker is open (for an hour).
var openCases = []overheadCase{
	{name: "gobreaker-execute", refused: gobreaker.ErrOpenState, build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		cb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
			Timeout:     time.Hour,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
		})
		_, _ = cb.Execute(func() (struct{}, error) { return struct{}{}, context.DeadlineExceeded })
		if cb.State() != gobreaker.StateOpen {
			tb.Fatalf("gobreaker: %v after a failure, want open", cb.State())
		}
		req := func() (struct{}, error) { return struct{}{}, fn(ctx) }
		return func() error {
			_, err := cb.Execute(req)
			return err
		}
	}},
	{name: "floodgate-guard", refused: floodgate.ErrOpen, build: func(tb testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		g := newGate(tb, floodgate.WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Hour}))
		_ = g.Guard(ctx, func(context.Context) error { return context.DeadlineExceeded })
		if s := g.Breaker().State(); s != breaker.Open {
			tb.Fatalf("floodgate: breaker %v after a failure, want open", s)
		}
		return func() error { return g.Guard(ctx, fn) }
	}},
	{name: "failsafe-go", refused: circuitbreaker.ErrOpen, build: func(_ testing.TB, fn func(context.Context) error) func() error {
		ctx := context.Background()
		cb := newFailsafeBreaker(time.Hour) // stays open for the whole benchmark, like floodgate's above
		cb.Open()
		ex := newFailsafe(adaptivelimiter.NewWithDefaults[any](), cb)
		run := func() error { return fn(ctx) }
		return func() error { return ex.Run(run) }
	}},
}

// limiterCall drives the limiter alone, as a user of package adaptive
// does: Release needs the start time and the RTT, so one clock pair is
// part of it.
func limiterCall(l *adaptive.Limiter, fn func() error) func() error {
	return func() error {
		if !l.Acquire() {
			return adaptive.ErrShed
		}
		start := time.Now()
		err := fn()
		l.Release(start, time.Since(start), adaptive.Success)
		return err
	}
}

func newGate(tb testing.TB, opts ...floodgate.Option) *floodgate.Gate {
	tb.Helper()
	g, err := floodgate.New("overhead", opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func newLimiter(tb testing.TB, cfg adaptive.Config) *adaptive.Limiter {
	tb.Helper()
	l, err := adaptive.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// newFailsafeBreaker is failsafe-go's circuit breaker set like floodgate's
// default breaker where the two have the same knob: trips at 50% failures
// of at least 20 calls in 10 s, stays open for delay, closes after 3
// successes.
// By default it would count every error as a failure, including the
// limiter's ErrExceeded below it, so that shedding load alone would open it
// after 20 sheds; like floodgate's, it does not count a shed as a failure
// (failsafe-go has no "ignore" outcome: a shed counts as a success).
func newFailsafeBreaker(delay time.Duration) circuitbreaker.CircuitBreaker[any] {
	return circuitbreaker.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return err != nil && !errors.Is(err, adaptivelimiter.ErrExceeded) }).
		WithFailureRateThreshold(0.5, 20, 10*time.Second).
		WithDelay(delay).
		WithSuccessThreshold(3).
		Build()
}

// newFailsafe is failsafe-go's equivalent of Guard: Retry(CircuitBreaker(
// AdaptiveLimiter(fn))), the retries paid from a budget (failsafe-go's
// defaults), 3 attempts with exponential backoff from 100 ms to 10 s like
// floodgate's defaults, and, like Guard, no retry of a call that its own
// breaker or limiter refused. The executor is built once and shared by every
// call, as its docs intend (it is safe for concurrent use).
func newFailsafe(lim adaptivelimiter.AdaptiveLimiter[any], cb circuitbreaker.CircuitBreaker[any]) failsafe.Executor[any] {
	rp := retrypolicy.NewBuilder[any]().
		WithMaxAttempts(3).
		WithBackoff(100*time.Millisecond, 10*time.Second).
		WithBudget(budget.New()).
		AbortOnErrors(circuitbreaker.ErrOpen, adaptivelimiter.ErrExceeded).
		Build()
	return failsafe.With[any](rp, cb, lim)
}

// BenchmarkSuccess is the success path, one call at a time.
func BenchmarkSuccess(b *testing.B) { benchSerial(b, successCases) }

// BenchmarkSuccessParallel is the success path from b.RunParallel: one
// goroutine per P (-cpu), sharing one contender.
func BenchmarkSuccessParallel(b *testing.B) {
	for _, c := range successCases {
		b.Run(c.name, func(b *testing.B) {
			call := c.build(b, noop)
			b.ReportAllocs()
			defer reportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkShed is the time to return the shed error when the limit is full.
func BenchmarkShed(b *testing.B) { benchSerial(b, shedCases) }

// BenchmarkOpen is the time to refuse a call while the breaker is open.
func BenchmarkOpen(b *testing.B) { benchSerial(b, openCases) }

// BenchmarkClock is the price of the clock reads the paths above are made
// of: time.Now reads the wall and the monotonic clock, time.Since only the
// monotonic one.
func BenchmarkClock(b *testing.B) {
	b.Run("now", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			_ = time.Now()
		}
	})
	b.Run("pair", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			_ = time.Since(time.Now())
		}
	})
}

// reportCPU starts measuring the process's CPU time; the func it returns
// reports it per op as cpu-ns/op. Unlike ns/op (wall time), cpu-ns/op does
// not count the time the benchmark waited while another process had the CPU,
// so it stays comparable on a shared machine; it does count the garbage
// collector's work on other threads. In b.RunParallel it is the CPU time of
// all the goroutines per op.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		end, _ := processCPU()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func benchSerial(b *testing.B, cases []overheadCase) {
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			call := c.build(b, noop)
			wantNil := c.refused == nil
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if err := call(); (err == nil) != wantNil {
					b.Fatalf("got %v, want refused: %v", err, !wantNil)
				}
			}
		})
	}
}

// TestOverheadCases checks that every benchmarked contender takes the path
// its benchmark is named after: on the success path fn runs once per call
// and the call succeeds; on the shed and open paths fn never runs and the
// error is the contender's own refusal.
func TestOverheadCases(t *testing.T) {
	for _, group := range []struct {
		name  string
		cases []overheadCase
	}{{"Success", successCases}, {"Shed", shedCases}, {"Open", openCases}} {
		for _, c := range group.cases {
			t.Run(group.name+"/"+c.name, func(t *testing.T) {
				calls := 0
				call := c.build(t, func(ctx context.Context) error {
					if ctx == nil {
						t.Error("fn got a nil context")
					}
					calls++
					return nil
				})
				const n = 100
				for i := range n {
					err := call()
					switch {
					case c.refused == nil && err != nil:
						t.Fatalf("call %d: %v, want success", i, err)
					case c.refused != nil && !errors.Is(err, c.refused):
						t.Fatalf("call %d: %v, want %v", i, err, c.refused)
					}
				}
				want := 0
				if c.refused == nil {
					want = n
				}
				if calls != want {
					t.Errorf("fn ran %d times in %d calls, want %d", calls, n, want)
				}
			})
		}
	}
}
