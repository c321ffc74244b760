package floodgate

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

var conservationCalls = flag.Int("conservation.calls", 0,
	"Guard calls TestConservation makes; 0: 100000, or 10000 with -short (the full run is 1000000)")

// countingObserver counts a gate's observer events.
type countingObserver struct {
	attempts, retries atomic.Int64 // Attempt calls, and those with isRetry
	calls             atomic.Int64 // Call calls
	callAttempts      atomic.Int64 // the sum of their attempts
	notStarted        atomic.Int64 // calls whose context had ended before Guard: no deposit
	outcomes          [numOutcomes]atomic.Int64
	changes           atomic.Int64 // StateChange calls
}

func (c *countingObserver) Attach(*Gate) error { return nil }
func (c *countingObserver) Attempt(isRetry bool, _ time.Duration) {
	c.attempts.Add(1)
	if isRetry {
		c.retries.Add(1)
	}
}
func (c *countingObserver) Call(o Outcome, attempts int, _ time.Duration) {
	c.calls.Add(1)
	c.callAttempts.Add(int64(attempts))
	if attempts == 0 && (o == OutcomeCanceled || o == OutcomeDeadline) {
		c.notStarted.Add(1)
	}
	c.outcomes[o].Add(1)
}
func (c *countingObserver) StateChange(_, _ breaker.State) { c.changes.Add(1) }

// conservationGate is one gate of TestConservation with what the test
// counts of it from the outside.
type conservationGate struct {
	name   string
	g      *Gate
	obs    *countingObserver
	ratio  float64 // its budget's Ratio
	start  int64   // its budget's tokens when the chaos began
	guards atomic.Int64
	fnRuns atomic.Int64 // fn invocations
	// fn reached with a context cancelled before Guard was called (and no
	// deadline)
	cancelledReached atomic.Int64
	panics, goexits  atomic.Int64 // raised by fn
	recovered        atomic.Int64 // panics that reached the caller
	exited           atomic.Int64 // Guard calls that did not return (Goexit)
}

// chaosPanic is what fn panics with.
type chaosPanic struct{}

var errChaos = errors.New("chaos: downstream says no")

// TestConservation makes many Guard calls from 256 goroutines against two
// gates, one with the defaults and one with adaptive.Fixed{}, InitialLimit
// 8 and MaxAttempts 5, with every way a call can go: fn panics (recovered
// by the caller) or calls runtime.Goexit, contexts cancelled before and
// during calls, tiny deadlines, and every error class (retry.Permanent,
// retry.Transient, retry.Overload with and without a Retry-After hint, one
// past MaxDelay among them, plain errors, context errors). Afterwards:
//
//   - every limiter's in-flight is 0;
//   - exactly one Observer.Call per Guard call, and their attempts add up
//     to the Observer.Attempt calls, which equal fn's invocations;
//   - every panic reached the caller, every Goexit ended its goroutine;
//   - fn never ran for a context cancelled before the call (it has no
//     deadline);
//   - each budget holds exactly what its credits predict: start + calls ×
//     Ratio − the retries that reached fn. A retry's token is refunded on
//     every path on which it does not reach fn (shed, breaker open,
//     deadline before the attempt, cancelled during the backoff), so the
//     unrefunded withdrawals are the Observer.Attempt(isRetry=true) calls.
//     The cap is never reached, so the model is exact: each gate has its
//     own budget of Max 1e6 tokens, drained to 50 first, and 50 + calls ×
//     Ratio stays far below 1e6 (a failed withdrawal changes nothing, so
//     the floor needs no care);
//   - after the chaos, healthy calls close each breaker (at most 100,
//     waiting out OpenFor when refused).
//
// Time is synctest's: no real sleeping, so the call count decides the
// wall time. By default it makes 100,000 calls (10,000 with -short); the
// full run is
//
//	go test -run TestConservation -conservation.calls=1000000 .
func TestConservation(t *testing.T) {
	total := *conservationCalls
	if total <= 0 {
		total = 100_000
		if testing.Short() {
			total = 10_000
		}
	}
	const workers = 256
	began := time.Now()
	t.Cleanup(func() { // also if the bubble's test failed, which ends this one
		t.Logf("%d calls from %d goroutines: %v of wall time", total, workers, time.Since(began).Round(time.Millisecond))
	})
	synctest.Test(t, func(t *testing.T) {
		gates := []*conservationGate{
			newConservationGate(t, "defaults", 0.1, retry.Config{}),
			newConservationGate(t, "fixed-8", 0.25, retry.Config{MaxAttempts: 5},
				WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 8})),
		}
		var wg sync.WaitGroup
		for w := range workers {
			n := total / workers
			if w < total%workers {
				n++
			}
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(13, uint64(w)))
				for range n {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond) // think time: lets the clock move
					conservationCall(gates[rng.IntN(len(gates))], rng)
				}
			})
		}
		wg.Wait()
		for _, cg := range gates {
			healBreaker(t, cg)
			checkConservation(t, cg)
		}
	})
}

// newConservationGate returns a gate whose budget (Max 1e6, Ratio ratio)
// holds 50 tokens, whose retry policy is rc with that budget, and whose
// observer counts its events.
func newConservationGate(t *testing.T, name string, ratio float64, rc retry.Config, opts ...Option) *conservationGate {
	t.Helper()
	b, err := retry.NewBudget(retry.BudgetConfig{Max: 1e6, Ratio: ratio})
	if err != nil {
		t.Fatal(err)
	}
	for b.Tokens() > 50 {
		b.Withdraw()
	}
	cg := &conservationGate{name: name, obs: &countingObserver{}, ratio: ratio, start: int64(b.Tokens())}
	rc.Budget = b
	cg.g = mustGate(t, append(opts, WithRetry(rc), WithObserver(cg.obs))...)
	return cg
}

// conservationCall makes one Guard call on cg with a random context and a
// random fn, as the caller of a gate would, recovering fn's panic.
func conservationCall(cg *conservationGate, rng *rand.Rand) {
	// A storm for 10 s in every 30 s of the bubble's clock; calm
	// otherwise: errors, slow answers and tiny deadlines are rare, so that
	// the limit can recover and the breaker close.
	storm := time.Now().Unix()/10%3 == 0
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	preCancelled := false
	r := rng.IntN(100)
	if !storm && r >= 15 && r < 23 {
		r = 99 // 1 tiny deadline in 100 calls instead of 8
	}
	switch {
	case r < 5: // cancelled before the call, no deadline
		ctx, cancel = context.WithCancel(ctx)
		cancel()
		preCancelled = true
	case r < 15: // cancelled during the call (or its backoff)
		ctx, cancel = context.WithCancel(ctx)
		stop := time.AfterFunc(time.Duration(rng.IntN(400))*time.Millisecond, cancel)
		defer stop.Stop()
	case r < 23 || r == 99: // a tiny deadline
		d := [...]time.Duration{1, time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}[rng.IntN(5)]
		ctx, cancel = context.WithTimeout(ctx, d)
	case r < 33: // an ordinary one
		ctx, cancel = context.WithTimeout(ctx, time.Duration(500+rng.IntN(2500))*time.Millisecond)
	}
	defer cancel()
	// fate: 0 none, 1 fn panics, 2 fn calls runtime.Goexit, at attempt at
	fate, at := 0, rng.IntN(3)
	switch r := rng.IntN(100); {
	case r < 3:
		fate = 1
	case r < 6:
		fate = 2
	}
	attempt := 0
	fn := func(ctx context.Context) error {
		cg.fnRuns.Add(1)
		if preCancelled {
			cg.cancelledReached.Add(1)
		}
		a := attempt
		attempt++
		switch {
		case fate == 1 && a == at:
			cg.panics.Add(1)
			panic(chaosPanic{})
		case fate == 2 && a == at:
			cg.goexits.Add(1)
			runtime.Goexit()
		}
		if storm && rng.IntN(10) < 2 || rng.IntN(100) < 2 { // a slow answer
			timer := time.NewTimer(time.Duration(rng.IntN(100)) * time.Millisecond)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			}
		}
		r := rng.IntN(100)
		if storm && r < 40 { // 10% of successes, over half failures
			r += 50
		}
		if !storm { // 3% of errors
			r = 0
			if r2 := rng.IntN(100); r2 >= 97 {
				r = 50 + (r2-97)*15
			}
		}
		switch {
		case r < 50:
			return nil
		case r < 60:
			return retry.Permanent(errChaos)
		case r < 70:
			return retry.Transient(errChaos)
		case r < 80:
			hint := [...]time.Duration{0, 0, 50 * time.Millisecond, time.Second, 20 * time.Second}[rng.IntN(5)]
			return retry.Overload(errChaos, hint) // 20 s: past MaxDelay
		case r < 86:
			return errChaos
		case r < 90:
			return context.DeadlineExceeded
		case r < 94:
			return context.Canceled
		}
		return ctx.Err()
	}
	cg.guards.Add(1)
	if fate != 2 {
		guardRecover(cg, ctx, fn)
		return
	}
	done := make(chan struct{})
	go func() {
		returned := false
		defer func() {
			if !returned {
				cg.exited.Add(1)
			}
			close(done)
		}()
		guardRecover(cg, ctx, fn)
		returned = true
	}()
	<-done
}

// guardRecover calls Guard and recovers fn's panic, which must come through
// as it was raised.
func guardRecover(cg *conservationGate, ctx context.Context, fn func(context.Context) error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(chaosPanic); !ok {
				panic(r)
			}
			cg.recovered.Add(1)
		}
	}()
	_ = cg.g.Guard(ctx, fn)
}

// healBreaker makes healthy calls until cg's breaker is closed (at most
// 100, waiting out OpenFor or a probe's lease when refused), then checks
// that it is closed and that a healthy call succeeds.
func healBreaker(t *testing.T, cg *conservationGate) {
	t.Helper()
	ok := func(context.Context) error { cg.fnRuns.Add(1); return nil }
	for i := 0; i < 100 && cg.g.Breaker().State() != breaker.Closed; i++ {
		cg.guards.Add(1)
		if err := cg.g.Guard(context.Background(), ok); errors.Is(err, ErrOpen) {
			time.Sleep(cg.g.Breaker().RetryIn() + time.Millisecond)
		}
	}
	if s := cg.g.Breaker().State(); s != breaker.Closed {
		t.Errorf("%s: breaker %v after 100 healthy calls, want closed", cg.name, s)
	}
	cg.guards.Add(1)
	if err := cg.g.Guard(context.Background(), ok); err != nil {
		t.Errorf("%s: a healthy call after the chaos: %v", cg.name, err)
	}
}

// checkConservation checks what must add up on cg after every call
// returned.
func checkConservation(t *testing.T, cg *conservationGate) {
	t.Helper()
	o := cg.obs
	guards := cg.guards.Load()
	t.Logf("%s: %d calls, %d attempts (%d retries), %d fn panics, %d Goexits, %d breaker state changes, limit %d; outcomes %v",
		cg.name, guards, o.attempts.Load(), o.retries.Load(), cg.panics.Load(), cg.goexits.Load(), o.changes.Load(),
		cg.g.Limiter().Limit(), outcomeCounts(o))
	if n := cg.g.Limiter().InFlight(); n != 0 {
		t.Errorf("%s: limiter in-flight %d after every call returned, want 0", cg.name, n)
	}
	if got := o.calls.Load(); got != guards {
		t.Errorf("%s: %d Observer.Call for %d Guard calls, want one each (defect 7 of issue 13: none for a call whose fn panics or calls Goexit; %d panics, %d Goexits)",
			cg.name, got, guards, cg.panics.Load(), cg.goexits.Load())
	}
	if got, want := o.callAttempts.Load(), o.attempts.Load(); got != want {
		t.Errorf("%s: Observer.Call attempts add up to %d, Observer.Attempt calls %d; want equal", cg.name, got, want)
	}
	if got, want := o.attempts.Load(), cg.fnRuns.Load(); got != want {
		t.Errorf("%s: %d Observer.Attempt calls for %d fn invocations, want one each", cg.name, got, want)
	}
	if got, want := cg.recovered.Load(), cg.panics.Load(); got != want {
		t.Errorf("%s: %d of %d fn panics reached the caller", cg.name, got, want)
	}
	if got, want := cg.exited.Load(), cg.goexits.Load(); got != want {
		t.Errorf("%s: %d Guard calls ended by Goexit, %d Goexits in fn", cg.name, got, want)
	}
	if n := cg.cancelledReached.Load(); n != 0 {
		t.Errorf("%s: fn ran %d times for a context cancelled before the call, want never (defect 5 of issue 13)", cg.name, n)
	}
	// Budget, in thousandths of a token: exact for Ratio 0.1 and 0.25.
	// A call whose context had ended before Guard never starts and
	// deposits nothing (defect 5 of issue 13).
	started := guards - o.notStarted.Load()
	milli := cg.start*1000 + started*int64(cg.ratio*1000+0.5) - o.retries.Load()*1000
	want := float64(milli) / 1000
	if got := cg.g.Budget().Tokens(); got != want {
		t.Errorf("%s: budget %v tokens, want %v = %d + %d calls that started × %v − %d retries that reached fn (defect 6 of issue 13: a retry cancelled during its backoff keeps its token)",
			cg.name, got, want, cg.start, started, cg.ratio, o.retries.Load())
	}
	if got := cg.g.Budget().Tokens(); got < 0 || got > 1e6 {
		t.Errorf("%s: budget %v tokens, outside [0, Max=1e6]", cg.name, got)
	}
}

func outcomeCounts(o *countingObserver) map[string]int64 {
	m := make(map[string]int64)
	for _, oc := range Outcomes {
		if n := o.outcomes[oc].Load(); n > 0 {
			m[oc.String()] = n
		}
	}
	return m
}
