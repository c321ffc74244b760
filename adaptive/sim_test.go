package adaptive

import (
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
// with a drop after 1 ms (a server's own limiter shedding with 503).
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
	start := time.Now()
	every := time.Second / time.Duration(rate)
	rng := rand.New(rand.NewPCG(1, 2))
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
							d, o = time.Millisecond, Drop
						} else {
							defer func() { mu.Lock(); atServer--; mu.Unlock() }()
						}
					}
					time.Sleep(d)
					l.Release(s, time.Since(s), o)
				}(p)
			}
			time.Sleep(every)
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
