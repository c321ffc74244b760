package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// SampleEvery is the period of the time series (limit, in-flight).
const SampleEvery = 100 * time.Millisecond

// call is what one user call saw.
type call struct {
	at      time.Duration // arrival, since the start of the run
	latency time.Duration // until Call returned
	ok      bool
	shed    bool // the contender refused it (Caller.Shed)
	early   int  // attempts started before a previous answer's Retry-After expired
}

// Sample is one point of a run's time series.
type Sample struct {
	// T is the time since the start of the run.
	T time.Duration
	// Limit is the contender's concurrency limit (calls; the innermost
	// layer's when nested), 0 if it has none.
	Limit int
	// InFlight is the requests the downstream holds (calls).
	InFlight int
	// Capacity is the downstream's workers at T (calls).
	Capacity int
}

// Run offers sc's load to contender c and returns what happened. It must run
// inside a testing/synctest bubble: it sleeps for the whole simulated run.
func Run(sc Scenario, c Contender) (*Result, error) {
	start := time.Now()
	ds := NewDownstream(sc.Phases)
	capacity := func() int { return PhaseAt(sc.Phases, time.Since(start)).Workers }
	layers := max(1, sc.Layers)
	callers := make([]Caller, layers)
	for i := range callers {
		var err error
		if callers[i], err = c.New(Env{Capacity: capacity, Seed: sc.Seed*1000 + uint64(i), Outer: i < layers-1}); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	inner := callers[layers-1]

	var (
		mu    sync.Mutex
		calls []call
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	samplerDone := make(chan []Sample)
	go func() {
		var out []Sample
		t := time.NewTicker(SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				samplerDone <- out
				return
			case <-t.C:
				el := time.Since(start)
				out = append(out, Sample{T: el, Limit: inner.Limit(), InFlight: ds.InFlight(), Capacity: PhaseAt(sc.Phases, el).Workers})
			}
		}
	}()

	arr := NewArrivals(sc.Rate, sc.Seed)
	for n := uint64(0); ; n++ {
		el := time.Since(start)
		gap := arr.Next(el)
		if el+gap >= sc.Duration {
			break
		}
		time.Sleep(gap)
		wg.Add(1)
		go func(n uint64, at time.Duration) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(sc.Seed, n))
			var (
				lastEnd time.Time
				hint    time.Duration
				early   int
			)
			attempt := func(ctx context.Context) error {
				if hint > 0 && time.Since(lastEnd) < hint {
					early++
				}
				err := ds.Serve(ctx, rng)
				lastEnd, hint = time.Now(), 0
				var t *ThrottledError
				if errors.As(err, &t) {
					hint = t.RetryAfter
				}
				return err
			}
			// Layers wrap each other: callers[0] outermost.
			for i := layers - 1; i >= 0; i-- {
				next, c := attempt, callers[i]
				attempt = func(ctx context.Context) error { return c.Call(ctx, next) }
			}
			ctx, cancel := context.WithTimeout(context.Background(), CallDeadline)
			defer cancel()
			s := time.Now()
			err := attempt(ctx)
			cl := call{at: at, latency: time.Since(s), ok: err == nil, shed: err != nil && callers[0].Shed(err), early: early}
			mu.Lock()
			calls = append(calls, cl)
			mu.Unlock()
		}(n, el+gap)
	}
	wg.Wait()
	for ds.InFlight() > 0 {
		time.Sleep(SampleEvery)
	}
	close(stop)
	samples := <-samplerDone
	return reduce(sc, c.Name, calls, samples, ds), nil
}
