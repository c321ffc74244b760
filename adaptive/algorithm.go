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
// A plain int32 changed only through sync/atomic's functions, not an
// atomic.Int32: that would make copying an algorithm by value a go vet
// error in the users' code. A copy of a claimed algorithm is claimed too.
type owner struct{ taken int32 }

// claim takes the Algorithm for one Limiter: false if another has it.
func (o *owner) claim() bool { return atomic.CompareAndSwapInt32(&o.taken, 0, 1) }

// claimer is an Algorithm with an owner. nilAlg is true for a nil pointer,
// which may sit inside a user's type that embeds one and so escape New's
// check of the Algorithm itself.
type claimer interface{ claim() (ok, nilAlg bool) }

// claim claims h for one Limiter.
func (h *Hybrid) claim() (ok, nilAlg bool) { return h != nil && h.owner.claim(), h == nil }

// claim claims g for one Limiter.
func (g *Gradient2) claim() (ok, nilAlg bool) { return g != nil && g.owner.claim(), g == nil }

// claim claims v for one Limiter.
func (v *Vegas) claim() (ok, nilAlg bool) { return v != nil && v.owner.claim(), v == nil }
