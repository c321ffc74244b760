package adaptive

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// phase is a stretch of simulated traffic: every call started in it takes
// rtt, or ends as a drop after the attempt timeout if rtt exceeds it, or as
// a drop after rtt if fail is set (a fast 503). A share drop of the calls,
// drawn at random (seeded: runs repeat), end as a drop after rtt whatever
// the load (background 503s or timeouts of a healthy downstream); when cap
// > 0, a call that finds cap calls in flight at the downstream is answered
// with a drop after 1.7 ms (a server's own limiter shedding with 503;
// not 1 ms, so that it never ends at the instant another call ends).
type phase struct {
	dur  time.Duration
	rtt  time.Duration
	fail bool
	drop float64
	cap  int
}

// arrival is what one offered call saw.
type arrival struct {
	at    time.Duration // since the start of the run
	limit int
	shed  bool
}

// runOpenLoop offers calls to l at rate per second (open loop: arrivals do
// not wait for the limiter) through the phases, and returns what each
// arrival saw. It must run inside a synctest bubble.
func runOpenLoop(l *Limiter, rate int, timeout time.Duration, phases []phase) []arrival {
	return runArrivals(l, rate, timeout, phases, 0)
}

// runArrivals is runOpenLoop with arrivals evenly spaced (seed 0) or, for
// seed > 0, a Poisson process drawn from a generator seeded with seed.
func runArrivals(l *Limiter, rate int, timeout time.Duration, phases []phase, seed uint64) []arrival {
	start := time.Now()
	every := time.Second / time.Duration(rate)
	rng := rand.New(rand.NewPCG(max(seed, 1), 2))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var atServer int // calls in flight at the downstream, under mu
	var out []arrival
	var end time.Duration
	for _, p := range phases {
		end += p.dur
		for time.Since(start) < end {
			ok := l.Acquire()
			out = append(out, arrival{at: time.Since(start), limit: l.Limit(), shed: !ok})
			if ok {
				dropped := p.drop > 0 && rng.Float64() < p.drop
				wg.Add(1)
				go func(p phase) {
					defer wg.Done()
					s := time.Now()
					d, o := p.rtt, Success
					if timeout > 0 && d > timeout {
						d, o = timeout, Drop
					}
					if p.fail || dropped {
						o = Drop
					}
					if p.cap > 0 {
						mu.Lock()
						full := atServer >= p.cap
						if !full {
							atServer++
						}
						mu.Unlock()
						if full {
							d, o = 1700*time.Microsecond, Drop
						} else {
							defer func() { mu.Lock(); atServer--; mu.Unlock() }()
						}
					}
					time.Sleep(d)
					l.Release(s, time.Since(s), o)
				}(p)
			}
			if seed > 0 {
				time.Sleep(time.Duration(rng.ExpFloat64() * float64(every)))
			} else {
				time.Sleep(every)
			}
		}
	}
	wg.Wait()
	return out
}

// recorder wraps an Algorithm and keeps every limit it returned.
type recorder struct {
	Algorithm
	mu     sync.Mutex
	limits []int
}

func (r *recorder) Update(limit int, w Window) int {
	next := r.Algorithm.Update(limit, w)
	r.mu.Lock()
	r.limits = append(r.limits, next)
	r.mu.Unlock()
	return next
}

// fifo is a downstream with a FIFO queue in front of its workers, offered
// Poisson arrivals whose rate ramps linearly from r0 to r1 between rampFrom
// and rampTo, through one Limiter per client (each arrival picks a client
// at random). Service times are log-normal (median, p99); a call whose
// queueing plus service exceeds timeout ends as a drop at the timeout (the
// worker still serves it), and a share hang of the calls ends as a drop
// at the timeout whatever the load (background timeouts).
type fifo struct {
	dur                  time.Duration
	r0, r1               float64 // calls/s
	rampFrom, rampTo     time.Duration
	workers              int
	median, p99, timeout time.Duration
	hang                 float64
	clients              int
	seed                 uint64
}

// fifoResult is what a fifo run measured.
type fifoResult struct {
	ok       int // successes
	queueTOs int // drops caused by the queue: service alone was under the timeout
}

// run drives the downstream through limiters made by newAlg, one per
// client; it must run inside a synctest bubble.
func (c fifo) run(newAlg func() Algorithm) fifoResult {
	ls := make([]*Limiter, max(c.clients, 1))
	for i := range ls {
		ls[i], _ = New(Config{Algorithm: newAlg()})
	}
	sigma := math.Log(float64(c.p99)/float64(c.median)) / 2.3263
	rng := rand.New(rand.NewPCG(c.seed, 77))
	rate := func(t time.Duration) float64 {
		f := min(max(float64(t-c.rampFrom)/float64(max(c.rampTo-c.rampFrom, 1)), 0), 1)
		return c.r0 + (c.r1-c.r0)*f
	}
	free := make([]time.Duration, c.workers) // when each worker is next free
	var res fifoResult
	var wg sync.WaitGroup
	start := time.Now()
	for now := time.Since(start); now < c.dur; now = time.Since(start) {
		l := ls[rng.IntN(len(ls))]
		hang := rng.Float64() < c.hang
		svc := time.Duration(float64(c.median) * math.Exp(sigma*rng.NormFloat64()))
		gap := time.Duration(rng.ExpFloat64() / rate(now) * float64(time.Second))
		if l.Acquire() {
			d, o := c.timeout, Drop
			if !hang {
				if d = book(free, now, svc); d > c.timeout {
					d = c.timeout
					if svc <= c.timeout {
						res.queueTOs++
					}
				} else {
					o = Success
					res.ok++
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := time.Now()
				time.Sleep(d)
				l.Release(s, time.Since(s), o)
			}()
		}
		time.Sleep(gap)
	}
	wg.Wait()
	return res
}

// book queues a call that arrives at now (since the run's start) for
// service time svc in a FIFO in front of workers that are next free at
// free[i]: it takes the worker free first, books it, and returns the
// call's latency (queueing plus service).
func book(free []time.Duration, now, svc time.Duration) time.Duration {
	w := 0
	for i := range free {
		if free[i] < free[w] {
			w = i
		}
	}
	begin := max(now, free[w])
	free[w] = begin + svc
	return free[w] - now
}
