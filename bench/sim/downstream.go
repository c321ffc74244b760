package sim

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrServer is the downstream's transient failure (an HTTP 500 or a reset
// connection): retrying may succeed.
var ErrServer = errors.New("downstream: server error")

// ThrottledError is the downstream's 429/503 answer with a Retry-After
// header.
type ThrottledError struct {
	// RetryAfter is the server's Retry-After hint.
	RetryAfter time.Duration
}

// Error returns a message with the hint.
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("downstream: 429 too many requests, retry after %v", e.RetryAfter)
}

// LogNormal is a log-normal service-time distribution given by its median
// and its 99th percentile.
type LogNormal struct {
	// Median is the 50th percentile of the service time.
	Median time.Duration
	// P99 is the 99th percentile of the service time; at least Median.
	P99 time.Duration
}

// Draw returns one service time: Median·exp(σ·Z) with Z standard normal
// and σ = ln(P99/Median)/2.326, so that the 99th percentile is P99.
func (d LogNormal) Draw(r *rand.Rand) time.Duration {
	if d.P99 <= d.Median {
		return d.Median
	}
	sigma := math.Log(float64(d.P99)/float64(d.Median)) / 2.3263
	return time.Duration(float64(d.Median) * math.Exp(sigma*r.NormFloat64()))
}

// Mean returns the distribution's mean, Median·exp(σ²/2).
func (d LogNormal) Mean() time.Duration {
	if d.P99 <= d.Median {
		return d.Median
	}
	sigma := math.Log(float64(d.P99)/float64(d.Median)) / 2.3263
	return time.Duration(float64(d.Median) * math.Exp(sigma*sigma/2))
}

// Phase is the downstream's behaviour from time From (since the start of
// the run) until the next phase.
type Phase struct {
	// From is when the phase starts, since the start of the run.
	From time.Duration
	// Workers is how many requests are served at once (calls); the others
	// wait in a FIFO queue in front. At least 1.
	Workers int
	// Service is the service time of one request on a worker.
	Service LogNormal
	// ErrRate is the share of requests, in [0, 1], that end in ErrServer
	// after their service time.
	ErrRate float64
	// FailFast is the share of requests, in [0, 1], answered ErrServer after
	// FastLatency without taking a worker (a hard outage: refused
	// connections, an empty load balancer).
	FailFast float64
	// Throttle is the share of requests, in [0, 1], answered with a
	// ThrottledError after FastLatency without taking a worker.
	Throttle float64
	// RetryAfter is the hint of throttled answers.
	RetryAfter time.Duration
	// Stall, if positive, blocks the server in back-to-back stalls of this
	// length from From on, as a single-threaded server running DEBUG SLEEP
	// in a loop is: a request that a worker starts finishes at the end of
	// the stall it started in, plus its service time, so the answers come
	// back in one burst per stall; the burst of every stall that slips
	// (half of them, by a fixed hash of the stall's number) comes at the
	// end of the next one instead, as a real Redis's does when the next
	// DEBUG SLEEP is read in the same batch as the requests.
	Stall time.Duration
	// Slips picks which stalls slip: another value, another choice of
	// about half of them (another alignment of the stalls with the
	// limiter's windows, as another run of the real trial is); 0 is the
	// suite's S18.
	Slips uint64
}

// FastLatency is how long a fail-fast or throttled answer takes.
const FastLatency = time.Millisecond

// job is one request admitted to the worker queue.
type job struct {
	service  time.Duration
	fail     bool
	elem     *list.Element // in the queue while waiting; nil once started
	started  bool
	finished bool
	err      error
	done     chan struct{}
}

// Downstream is the simulated service: Workers workers behind a FIFO queue,
// following a script of phases. A request whose caller gives up while it is
// queued leaves the queue at once; a request already on a worker keeps the
// worker busy until its service time has elapsed (like most servers, which
// finish the work of a client that has gone), and still counts as in flight.
// Create one with NewDownstream inside the bubble; it is safe for concurrent
// use.
type Downstream struct {
	start  time.Time
	phases []Phase

	mu       sync.Mutex
	busy     int       // workers serving a request
	queue    list.List // of *job
	inFlight int       // requests held: queued, in service, or fast answers pending
	peak     int       // largest inFlight seen
	attempts int64     // requests received
}

// NewDownstream returns a downstream following phases (sorted by From, the
// first at From 0), whose clock starts now.
func NewDownstream(phases []Phase) *Downstream {
	return &Downstream{start: time.Now(), phases: phases}
}

// PhaseAt returns the phase in force at elapsed time t since the start.
func PhaseAt(phases []Phase, t time.Duration) Phase {
	p := phases[0]
	for _, q := range phases[1:] {
		if q.From > t {
			break
		}
		p = q
	}
	return p
}

// Serve is one request (one attempt). It draws the request's outcome and
// service time from r (the calling user call's own generator), then waits
// for the answer or for ctx to end. It returns nil, ErrServer, a
// *ThrottledError, or ctx's error.
func (d *Downstream) Serve(ctx context.Context, r *rand.Rand) error {
	ph := PhaseAt(d.phases, time.Since(d.start))
	u := r.Float64()
	service := ph.Service.Draw(r)

	d.mu.Lock()
	d.attempts++
	d.inFlight++
	d.peak = max(d.peak, d.inFlight)
	if u < ph.Throttle+ph.FailFast {
		d.mu.Unlock()
		var err error = ErrServer
		if u < ph.Throttle {
			err = &ThrottledError{RetryAfter: ph.RetryAfter}
		}
		t := time.NewTimer(FastLatency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
		d.mu.Lock()
		d.inFlight--
		d.mu.Unlock()
		return err
	}
	j := &job{service: service, fail: u < ph.Throttle+ph.FailFast+ph.ErrRate, done: make(chan struct{})}
	j.elem = d.queue.PushBack(j)
	d.dispatchLocked()
	d.mu.Unlock()

	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case j.finished:
		return j.err
	case !j.started:
		d.queue.Remove(j.elem)
		j.elem = nil
		d.inFlight--
	}
	// started but not finished: the worker goes on; finish accounts for it.
	return ctx.Err()
}

// dispatchLocked starts queued jobs while a worker of the phase in force
// is free. d.mu is held.
func (d *Downstream) dispatchLocked() {
	t := time.Since(d.start)
	ph := PhaseAt(d.phases, t)
	for d.busy < ph.Workers && d.queue.Len() > 0 {
		j := d.queue.Remove(d.queue.Front()).(*job)
		j.elem = nil
		j.started = true
		d.busy++
		service := j.service
		if ph.Stall > 0 {
			service += ph.Stall - (t-ph.From)%ph.Stall // to the end of this stall
			if slips(int64((t-ph.From)/ph.Stall), ph.Slips) {
				service += ph.Stall
			}
		}
		time.AfterFunc(service, func() { d.finish(j) })
	}
}

// slips reports whether stall number k's burst comes at the end of the
// next stall: half of them, by a fixed hash of k and seed (splitmix64's
// finalizer).
func slips(k int64, seed uint64) bool {
	z := uint64(k) + (seed+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z^(z>>31))&1 == 1
}

// finish ends j's service, frees its worker and starts the next queued job.
func (d *Downstream) finish(j *job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.busy--
	d.inFlight--
	j.finished = true
	if j.fail {
		j.err = ErrServer
	}
	close(j.done)
	d.dispatchLocked()
}

// InFlight returns the requests the downstream holds now (calls): queued,
// in service (including those whose caller has given up), or being answered
// fast.
func (d *Downstream) InFlight() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight
}

// Peak returns the largest InFlight seen so far (calls).
func (d *Downstream) Peak() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.peak
}

// Attempts returns the requests received so far (calls).
func (d *Downstream) Attempts() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.attempts
}
