package adaptive

import (
	"sync/atomic"
	"time"
)

// Algorithm moves the limit. The [Limiter] calls Update once per closed
// window, never concurrently, with the current limit and the window's
// summary; the result is clamped to [MinLimit, MaxLimit]. An Algorithm keeps
// state between windows, so a value must not be shared between limiters:
// [New] refuses a [Hybrid], [Gradient2] or [Vegas] that another Limiter
// already runs (their Update is not safe for concurrent use, and they
// would mix two downstreams' RTTs). It cannot tell for an Algorithm of
// your own.
type Algorithm interface {
	Update(limit int, w Window) int
}

// Baseliner is implemented by an [Algorithm] that keeps an RTT baseline,
// the no-load RTT it compares each window's RTT against. After each
// Update, the [Limiter] reads it (under the same lock) and publishes it
// through [Limiter.BaselineRTT]. Hybrid, Gradient2 and Vegas implement it.
type Baseliner interface {
	// Baseline returns the current baseline RTT, or 0 before the first
	// success.
	Baseline() time.Duration
}

// Fixed keeps the limit at InitialLimit: a plain semaphore that sheds instead
// of queueing. Useful as a baseline and in tests.
type Fixed struct{}

// Update returns limit unchanged.
func (Fixed) Update(limit int, _ Window) int { return limit }

// estimate keeps an algorithm's fractional limit in step with the integer
// limit the Limiter actually applied (which it may have clamped).
type estimate float64

func (e *estimate) sync(limit int) float64 {
	if int(*e) != limit {
		*e = estimate(limit)
	}
	return float64(*e)
}

func (e *estimate) set(v float64) int {
	*e = estimate(v)
	return int(v)
}

// ratioIn reports whether v lies in [lo, hi] (and is not NaN).
func ratioIn(v, lo, hi float64) bool { return v >= lo && v <= hi }

// owner marks a stateful Algorithm as run by one Limiter; [New] claims it.
type owner struct{ taken atomic.Bool }

// claim takes the Algorithm for one Limiter: false if another has it.
func (o *owner) claim() bool { return o.taken.CompareAndSwap(false, true) }

// claimer is an Algorithm with an owner.
type claimer interface{ claim() bool }
