package real

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is one stretch of a trial's timeline.
type Phase struct {
	// Name labels the phase in tables.
	Name string
	// Healthy says the downstream is healthy during the phase: a call
	// refused in it counts against the target "no call shed while the
	// downstream is healthy" (outside the recovery when it follows a
	// fault: PhaseStats.HealthyShed).
	Healthy bool
	// For is how long the phase lasts, fault included; the next phase
	// starts once the fault's stop function has returned.
	For time.Duration
	// Start starts the phase's fault (nil: none) and returns the function
	// that ends it, which returns once the fault is gone, and its error.
	Start func() (stop func() error, err error)
}

// HealGrace is the longest part of a healthy phase after a fault taken as
// the recovery, whose refusals are not counted as shed while healthy
// (PhaseStats.HealthyShed): 1 s, the time the target gives full throughput
// to come back after a heal.
const HealGrace = time.Second

// lane is one contender's calls through a timeline: its Caller and the
// attempt it makes (i numbers the call from 0).
type lane struct {
	caller  Caller
	attempt func(ctx context.Context, i int) error
}

// call is what a lane's call did, times from the timeline's start.
type call struct {
	start, end time.Duration
	attempts   int32 // attempts that reached the client (fn called)
	err        bool  // Call returned an error
	refused    bool  // the error is the contender's own refusal
	issued     bool
	errText    string // the error's text, when it is not a refusal
}

// laneRun is what one lane recorded.
type laneRun struct {
	calls            []call
	peaks            []atomic.Int64 // attempts in flight inside the client, per phase
	limitLo, limitHi []int          // the contender's limit, per phase (0, 0: none)
	inflight         atomic.Int64
}

// timeline is one run of phases with one or more lanes side by side.
type timeline struct {
	phases []Phase
	bounds []time.Duration // bounds[k]: phase k's start; bounds[len]: the end
	lanes  []*laneRun
}

// maxCalls bounds the calls a lane may issue in a timeline of total
// length: Rate per second over total plus 10 s for the faults' stops.
func maxCalls(total time.Duration) int {
	return int((total + 10*time.Second).Seconds() * Rate)
}

// runTimeline runs phases once, with every lane offered Rate calls per
// second from start to end, open loop, each call in its own goroutine with
// a Deadline. It returns when every call has returned. An error from a
// fault's start or stop ends the timeline at once (the calls still
// running are waited for) and is returned.
func runTimeline(phases []Phase, lanes []lane) (*timeline, error) {
	var total time.Duration
	for _, p := range phases {
		total += p.For
	}
	n := maxCalls(total)
	tl := &timeline{phases: phases, bounds: make([]time.Duration, len(phases)+1)}
	for range lanes {
		tl.lanes = append(tl.lanes, &laneRun{
			calls: make([]call, n), peaks: make([]atomic.Int64, len(phases)),
			limitLo: make([]int, len(phases)), limitHi: make([]int, len(phases)),
		})
	}
	var cur atomic.Int32
	t0 := time.Now()
	stop := make(chan struct{})
	var drivers, calls sync.WaitGroup
	for j, ln := range lanes {
		lr := tl.lanes[j]
		drivers.Add(1)
		go func() {
			defer drivers.Done()
			period := time.Second / Rate
			for i := range n {
				if d := time.Until(t0.Add(time.Duration(i) * period)); d > 0 {
					time.Sleep(d)
				}
				select {
				case <-stop:
					return
				default:
				}
				calls.Add(1)
				go func() {
					defer calls.Done()
					lr.run(t0, i, &cur, ln)
				}()
			}
		}()
	}
	sampled := make(chan struct{})
	go func() { // the limits, every 20 ms
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			k := cur.Load()
			for j, ln := range lanes {
				l, lr := ln.caller.Limit(), tl.lanes[j]
				if l == 0 {
					continue
				}
				if lr.limitHi[k] == 0 {
					lr.limitLo[k], lr.limitHi[k] = l, l
				}
				lr.limitLo[k], lr.limitHi[k] = min(lr.limitLo[k], l), max(lr.limitHi[k], l)
			}
		}
	}()
	err := func() error {
		for k, p := range phases {
			cur.Store(int32(k))
			tl.bounds[k] = time.Since(t0)
			var end func() error
			if p.Start != nil {
				var err error
				if end, err = p.Start(); err != nil {
					return fmt.Errorf("phase %s: %w", p.Name, err)
				}
			}
			time.Sleep(p.For)
			if end != nil {
				if err := end(); err != nil {
					return fmt.Errorf("phase %s: %w", p.Name, err)
				}
			}
		}
		return nil
	}()
	tl.bounds[len(phases)] = time.Since(t0)
	close(stop)
	drivers.Wait()
	calls.Wait()
	<-sampled
	return tl, err
}

// run makes lane call i and records it.
func (lr *laneRun) run(t0 time.Time, i int, cur *atomic.Int32, ln lane) {
	st := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), st.Add(Deadline))
	defer cancel()
	var attempts atomic.Int32
	err := ln.caller.Call(ctx, func(ctx context.Context) error {
		attempts.Add(1)
		n := lr.inflight.Add(1)
		defer lr.inflight.Add(-1)
		p := &lr.peaks[cur.Load()]
		for old := p.Load(); n > old && !p.CompareAndSwap(old, n); old = p.Load() {
		}
		return ln.attempt(ctx, i)
	})
	lr.calls[i] = call{
		start: st.Sub(t0), end: time.Since(t0), attempts: attempts.Load(),
		err: err != nil, refused: err != nil && ln.caller.Refused(err), issued: true,
	}
	if err != nil && !lr.calls[i].refused {
		lr.calls[i].errText = err.Error()
	}
}

// Never is PhaseStats.Recovery when no bin of the phase reached full
// throughput.
const Never time.Duration = -1

// PhaseStats is one contender's numbers in one phase: the calls that
// started in it.
type PhaseStats struct {
	// Offered counts the calls started in the phase.
	Offered int
	// OK counts the successes within the Deadline; Late those after it (a
	// client that ignores its context's deadline).
	OK, Late int
	// OKAfter counts the OK calls that ended after the phase did. In a
	// fault's phase they are calls served once the fault was gone: a
	// client that queues calls for a pooled connection serves those of
	// the fault's last Deadline then, where a limiter that sheds instead
	// of queueing has refused them. In the last phase they are calls
	// that ended after the run's last bound.
	OKAfter int
	// Refused counts the calls the contender refused before any attempt
	// reached the client (shed, breaker open); P99Refused is their p99
	// duration.
	Refused    int
	P99Refused time.Duration
	// Failed counts every other error (including a retry refused after a
	// failed attempt).
	Failed int
	// P99 is the p99 duration of the calls that were not Refused;
	// P99OK that of the successes (OK and Late).
	P99, P99OK time.Duration
	// PeakInFlight is the most attempts in flight inside the client at
	// once during the phase (a wait for a pooled connection included).
	PeakInFlight int
	// LimitLo and LimitHi are the lowest and highest limit sampled every
	// 20 ms during the phase; 0 for a contender without one.
	LimitLo, LimitHi int
	// Recovery, for a phase that follows a fault, is the time from the
	// phase's start (the heal) to the start of its first 100 ms bin of
	// calls with at least 95% OK; Never if none. 0 for other phases.
	Recovery time.Duration
	// HealthyShed counts, in a Healthy phase, the calls refused by the
	// contender (on any attempt) outside the recovery: in a phase that
	// follows a fault, those that started after the 100 ms bin in which
	// full throughput came back (Recovery + 100 ms) or after HealGrace,
	// whichever is first.
	HealthyShed int
	// FirstError is the text of the first error that was not a refusal,
	// "" if none.
	FirstError string
}

// stats returns lane j's numbers per phase.
func (tl *timeline) stats(j int) []PhaseStats {
	lr := tl.lanes[j]
	out := make([]PhaseStats, len(tl.phases))
	for k, p := range tl.phases {
		from, to := tl.bounds[k], tl.bounds[k+1]
		heal := k > 0 && !tl.phases[k-1].Healthy
		s := &out[k]
		s.PeakInFlight, s.LimitLo, s.LimitHi = int(lr.peaks[k].Load()), lr.limitLo[k], lr.limitHi[k]
		var all, ok, refused []time.Duration
		bins := make([][2]int, int((to-from)/(100*time.Millisecond))+1) // offered, OK
		for _, c := range lr.calls {
			if !c.issued || c.start < from || c.start >= to {
				continue
			}
			d := c.end - c.start
			s.Offered++
			b := &bins[(c.start-from)/(100*time.Millisecond)]
			b[0]++
			switch {
			case !c.err && d <= Deadline:
				s.OK++
				if c.end > to {
					s.OKAfter++
				}
				b[1]++
				ok = append(ok, d)
				all = append(all, d)
			case !c.err:
				s.Late++
				ok = append(ok, d)
				all = append(all, d)
			case c.refused && c.attempts == 0:
				s.Refused++
				refused = append(refused, d)
			default:
				s.Failed++
				all = append(all, d)
			}
			if c.err && !c.refused && s.FirstError == "" {
				s.FirstError = c.errText
			}
		}
		s.P99, s.P99OK, s.P99Refused = p99(all), p99(ok), p99(refused)
		window := time.Duration(0) // the recovery, whose refusals are not shed while healthy
		if heal {
			s.Recovery, window = Never, HealGrace
			for i, b := range bins {
				if b[0] > 0 && 100*b[1] >= 95*b[0] {
					// The bin in which full throughput came back is part
					// of the recovery: every refusal counted as shed while
					// healthy in two runs at stop 28 was of a call started
					// 2 µs–4.7 ms after the heal, into slots still held by
					// the fault's calls. But no recovery excuses refusals
					// past HealGrace: a limiter that sheds 10% of a healed
					// downstream's calls for 5 s is shedding it.
					s.Recovery = time.Duration(i) * 100 * time.Millisecond
					window = min(s.Recovery+100*time.Millisecond, HealGrace)
					break
				}
			}
		}
		for _, c := range lr.calls {
			if p.Healthy && c.issued && c.refused && c.start >= from+window && c.start < to {
				s.HealthyShed++
			}
		}
	}
	return out
}

// p99 returns the 99th percentile of ds (nearest rank), 0 for none. It
// sorts ds.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(math.Ceil(0.99*float64(len(ds))))-1]
}
