package adaptive

import (
	"errors"
	"sync/atomic"
	"time"
)

// Algorithm moves the limit. The [Limiter] calls Update once per closed
// window, never concurrently, with the current limit and the window's
// summary; the result is clamped to [MinLimit, MaxLimit]. An Algorithm keeps
// state between windows, so a value must not be shared between limiters:
// [New] refuses a [Gradient], [Gradient2] or [Vegas] that another Limiter
// already runs (their Update is not safe for concurrent use, and they
// would mix two downstreams' RTTs). It cannot tell for an Algorithm of
// your own.
type Algorithm interface {
	Update(limit int, w Window) int
}

// Baseliner is implemented by an [Algorithm] that keeps an RTT baseline,
// the no-load RTT it compares each window's RTT against. After each
// Update, the [Limiter] reads it (under the same lock) and publishes it
// through [Limiter.BaselineRTT]. Gradient, Gradient2 and Vegas implement it.
type Baseliner interface {
	// Baseline returns the current baseline RTT, or 0 before the first
	// success.
	Baseline() time.Duration
}

// Grower is implemented by an [Algorithm] that lets the limit grow on
// demand between windows: after each Update the [Limiter] reads Ceiling
// (under the same lock), and while it is above the limit, an Acquire that
// finds the limit reached doubles the limit, at most to the ceiling, instead
// of shedding (TCP slow start, grown at once instead of per round trip).
// 0 or less: no growth between windows. [Gradient] implements it.
type Grower interface {
	// Ceiling returns how far Acquire may raise the limit (calls); the
	// Limiter clamps it to MaxLimit.
	Ceiling() int
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

// claimer is an Algorithm of this package: claim checks that it was made
// by its constructor and claims it for one Limiter if it holds state. It
// returns errNilAlgorithm for a nil pointer (which may sit inside a user's
// type that embeds one and so escape New's check of the Algorithm itself),
// errZeroAlgorithm for a zero value (its fields would all be 0), and
// errTaken when another Limiter runs it.
type claimer interface{ claim() error }

var (
	errNilAlgorithm  = errors.New("holds a nil *Gradient, *AIMD, *Gradient2 or *Vegas")
	errZeroAlgorithm = errors.New("is a zero value: make it with its constructor (NewGradient, NewAIMD, ...)")
	errTaken         = errors.New("is already run by another Limiter; it holds that limiter's state: create one per Limiter")
)

// claimState checks a stateful algorithm and claims it.
func claimState(isNil, isZero bool, o *owner) error {
	switch {
	case isNil:
		return errNilAlgorithm
	case isZero:
		return errZeroAlgorithm
	case !o.claim():
		return errTaken
	}
	return nil
}

// claim claims g for one Limiter.
func (g *Gradient) claim() error {
	if g == nil {
		return errNilAlgorithm
	}
	return claimState(false, g.tol == 0, &g.owner)
}

// claim claims g for one Limiter.
func (g *Gradient2) claim() error {
	if g == nil {
		return errNilAlgorithm
	}
	return claimState(false, g.smoothing == 0, &g.owner)
}

// claim claims v for one Limiter.
func (v *Vegas) claim() error {
	if v == nil {
		return errNilAlgorithm
	}
	return claimState(false, v.smoothing == 0, &v.owner)
}

// claim checks a: AIMD holds no state, so Limiters may share one.
func (a *AIMD) claim() error {
	switch {
	case a == nil:
		return errNilAlgorithm
	case a.backoff == 0:
		return errZeroAlgorithm
	}
	return nil
}
