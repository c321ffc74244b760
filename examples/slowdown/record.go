package main

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/floodgate-go/floodgate"
)

// record keeps what one contender's user calls saw: per second of the run,
// and the latency of every success and failure.
type record struct {
	mu           sync.Mutex
	byStart      []tally // by the second the call was offered
	byEnd        []tally // by the second the call ended
	okLat        []time.Duration
	failLat      []time.Duration
	refusedSince []time.Duration // when calls were refused (shed or breaker open), since the start
	inFlight     int             // user calls in progress
}

type tally struct {
	offered, ok, failed, refused int
	okLat                        []time.Duration
}

func newRecord(seconds int) *record {
	return &record{byStart: make([]tally, seconds+1), byEnd: make([]tally, seconds+120)}
}

func (r *record) offer(sec int) {
	r.mu.Lock()
	r.byStart[sec].offered++
	r.inFlight++
	r.mu.Unlock()
}

// end records a call offered in second sec that ended at end (since the
// start of the run) after lat with err.
func (r *record) end(sec int, end, lat time.Duration, err error) {
	refused := errors.Is(err, floodgate.ErrShed) || errors.Is(err, floodgate.ErrOpen)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	e := min(int(end/time.Second), len(r.byEnd)-1)
	switch {
	case err == nil:
		r.byStart[sec].ok++
		r.byEnd[e].ok++
		r.byEnd[e].okLat = append(r.byEnd[e].okLat, lat)
		r.okLat = append(r.okLat, lat)
	case refused:
		r.byStart[sec].refused++
		r.byEnd[e].refused++
		r.failLat = append(r.failLat, lat)
		r.refusedSince = append(r.refusedSince, end)
	default:
		r.byStart[sec].failed++
		r.byEnd[e].failed++
		r.failLat = append(r.failLat, lat)
	}
}

// second returns the calls that ended in second s, and how many are in
// progress now.
func (r *record) second(s int) (tally, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byEnd[s], r.inFlight
}

// offered returns the calls offered in second s.
func (r *record) offered(s int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s >= len(r.byStart) {
		return 0
	}
	return r.byStart[s].offered
}

// quantile returns the q-quantile (0..1) of ds, or -1 if ds is empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

// firstRefusal returns the time from onset until the first call refused at
// or after onset, or -1 if none was.
func (r *record) firstRefusal(onset time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := time.Duration(-1)
	for _, t := range r.refusedSince {
		if t >= onset && (best < 0 || t-onset < best) {
			best = t - onset
		}
	}
	return best
}

// recovered returns the seconds from heal until the first offered second
// from which every later second had at least 95% of its calls succeed, or
// -1 if that never happened.
func (r *record) recovered(heal time.Duration, last int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := int(heal / time.Second)
	found := -1
	for s := last; s >= from; s-- {
		t := r.byStart[s]
		if t.offered == 0 || float64(t.ok) < 0.95*float64(t.offered) {
			break
		}
		found = s
	}
	if found < 0 {
		return -1
	}
	return found - from
}
