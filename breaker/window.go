package breaker

import "sync/atomic"

// rolling is a time-bucketed window of call counts kept with atomics: no
// lock per call. A bucket is reused when its epoch (time / bucket period)
// comes round again; the goroutine that moves its epoch on zeroes it. A
// sample racing that reset may be lost or kept: the ratios are estimates,
// off by at most the calls of that instant.
type rolling struct {
	buckets []bucket
	period  int64        // ns per bucket
	head    atomic.Int64 // newest epoch seen
}

type bucket struct {
	epoch               atomic.Int64
	calls, failed, slow atomic.Int64
}

func newRolling(n int, period int64) *rolling {
	r := &rolling{buckets: make([]bucket, n), period: period}
	for i := range r.buckets {
		r.buckets[i].epoch.Store(-1)
	}
	return r
}

// add counts one call that ended at now (ns since the breaker's origin).
func (r *rolling) add(now int64, failed, slow bool) {
	if now < 0 {
		return // an end before the breaker existed (a zero time.Time): not counted
	}
	e := now / r.period
	b := &r.buckets[e%int64(len(r.buckets))]
	for {
		old := b.epoch.Load()
		if old == e {
			break
		}
		if old > e {
			return // the bucket has moved past this late sample
		}
		if b.epoch.CompareAndSwap(old, e) {
			b.calls.Store(0)
			b.failed.Store(0)
			b.slow.Store(0)
			break
		}
	}
	b.calls.Add(1)
	if failed {
		b.failed.Add(1)
	}
	if slow {
		b.slow.Add(1)
	}
	for {
		h := r.head.Load()
		if e <= h || r.head.CompareAndSwap(h, e) {
			return
		}
	}
}

// sum returns the counts of the buckets within the window that ends at the
// newest epoch seen.
func (r *rolling) sum() (calls, failed, slow int64) {
	h := r.head.Load()
	n := int64(len(r.buckets))
	for i := range r.buckets {
		b := &r.buckets[i]
		if e := b.epoch.Load(); e >= 0 && e > h-n && e <= h {
			calls += b.calls.Load()
			failed += b.failed.Load()
			slow += b.slow.Load()
		}
	}
	return calls, failed, slow
}

// reset forgets every count.
func (r *rolling) reset() {
	for i := range r.buckets {
		r.buckets[i].epoch.Store(-1)
	}
}
