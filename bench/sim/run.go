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
	// layer's when nested, the sum of the gates' in a fleet), 0 if it has
	// none.
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
	layers, gates := max(1, sc.Layers), sc.gates()
	share := func() int { return max(1, (capacity()+gates/2)/gates) } // one gate's, rounded
	// callers[g][i]: gate g's layer i, callers[g][0] outermost.
	callers := make([][]Caller, gates)
	for g := range callers {
		callers[g] = make([]Caller, layers)
		for i := range callers[g] {
			env := Env{Capacity: share, AttemptTimeout: sc.attemptTimeout(), Gates: gates,
				Seed: sc.Seed*1000 + uint64(g*layers+i), Outer: i < layers-1}
			var err error
			if callers[g][i], err = c.New(env); err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
		}
	}
	pz := &pauser{p: sc.Pause, start: start}

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
				limit := 0
				for _, g := range callers {
					limit += g[layers-1].Limit()
				}
				out = append(out, Sample{T: el, Limit: limit, InFlight: ds.InFlight(), Capacity: PhaseAt(sc.Phases, el).Workers})
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
			gate := callers[n%uint64(gates)]
			var (
				lastEnd time.Time
				hint    time.Duration
				early   int
			)
			attempt := func(ctx context.Context) error {
				pz.wait() // nothing is sent during a pause
				if hint > 0 && time.Since(lastEnd) < hint {
					early++
				}
				err := ds.Serve(ctx, rng)
				pz.wait() // an answer that lands in a pause is seen at its end
				lastEnd, hint = time.Now(), 0
				var t *ThrottledError
				if errors.As(err, &t) {
					hint = t.RetryAfter
				}
				return err
			}
			// Layers wrap each other: gate[0] outermost.
			for i := layers - 1; i >= 0; i-- {
				next, c := attempt, gate[i]
				attempt = func(ctx context.Context) error { return c.Call(ctx, next) }
			}
			ctx, cancel := context.WithTimeout(context.Background(), sc.callDeadline())
			defer cancel()
			s := time.Now()
			pz.wait() // a call that arrives in a pause reaches the contender at its end
			err := attempt(ctx)
			pz.wait() // nor does a call complete in one
			cl := call{at: at, latency: time.Since(s), ok: err == nil, shed: err != nil && gate[0].Shed(err), early: early}
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

// pauser holds the client's goroutines through its pauses (Scenario.Pause).
type pauser struct {
	p     Pause
	start time.Time

	mu  sync.Mutex
	cur time.Duration // start of the pause the last waiter came in
	n   int           // waiters in that pause so far
}

// wait returns at once outside a pause. In one, it returns after the
// pause's end: the k-th goroutine to come in (k from 0) goes on k µs after
// it, so that the burst runs in the order it came in, as a runtime works
// through it, and not in an order the bubble picks among goroutines woken
// at one instant (which would make a run differ from the next).
func (w *pauser) wait() {
	el := time.Since(w.start)
	from, end, ok := w.p.Covering(el)
	if !ok {
		return
	}
	w.mu.Lock()
	if w.cur != from {
		w.cur, w.n = from, 0
	}
	k := w.n
	w.n++
	w.mu.Unlock()
	time.Sleep(end + time.Duration(k)*time.Microsecond - el)
}
