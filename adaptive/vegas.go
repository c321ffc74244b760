package adaptive

import (
	"fmt"
	"math"
	"time"
)

// VegasConfig configures [Vegas]. Zero fields select the defaults of Netflix
// concurrency-limits' VegasLimit.
type VegasConfig struct {
	// Smoothing weighs a window's new limit against the old one.
	// Default 1 (no smoothing); range (0, 1].
	Smoothing float64
	// ProbeMultiplier: the no-load RTT is measured afresh, from the
	// window at hand, after ProbeMultiplier × limit windows, so that it
	// can follow a downstream that got slower for good (until then Vegas
	// reads the slowdown as a queue). Windows, as Netflix's VegasLimit
	// counts them under its WindowedLimit (one update per window): at a
	// limit of 20 and 250 ms windows, every 2.5 min. Counted in samples
	// (before), the probe came in under a second at 1,000 calls/s and took
	// a standing queue for no load: the limit on a downstream of 20
	// workers offered twice their capacity climbed to 107–182. Default 30;
	// range [1, 1e6].
	ProbeMultiplier int
}

// Vegas is TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End
// Congestion Avoidance on a Global Internet", IEEE JSAC 1995) as Netflix
// concurrency-limits' VegasLimit applies it to concurrency. It estimates
// the calls queued at the downstream from how far the window's mean RTT r
// exceeds the no-load RTT, and keeps that queue between 3L and 6L calls:
//
//	noLoadRTT = the smallest window mean RTT since the last probe
//	queue = ceil(limit × (1 − noLoadRTT / r))
//	with L = log10(limit), at least 1:
//	  after a drop:      limit − L
//	  queue ≤ L:         limit + 6L    (almost no queue: grow fast)
//	  queue < 3L:        limit + L
//	  queue > 6L:        limit − L
//	  otherwise:         unchanged
//	limit = limit × (1 − Smoothing) + new × Smoothing
//
// The no-load RTT is the smallest window mean, not the smallest sample:
// one fast sample sets the smallest too low (Netflix concurrency-limits
// issue #37), and Netflix's WindowedLimit (since commit 3882327, 2018)
// hands VegasLimit one RTT per window, the window's average, so that its
// no-load RTT is the smallest window average too.
// Here, with the smallest sample, one answer at 0.05 ms among calls of
// 20 ms made every window look like a queue of the whole limit: the limit
// fell from 60 to 5 at 41 calls in flight and stayed there until the next
// probe. The smallest sample also read the spread of service times as a
// queue: the limit on an overloaded downstream held at 9 to 11 whether it
// had 5, 10, 20 or 50 workers (now 10, 16, 27, 58). A no-load RTT first
// measured under a queue includes that queue until a window's mean is
// lower.
//
// Like Netflix it leaves the limit alone while peak in-flight < limit/2 and
// there was no drop. Unlike Netflix's windows, a window of drops alone
// still closes and lowers the limit.
type Vegas struct {
	owner      owner // claimed by the Limiter that runs it
	smoothing  float64
	probeMult  int
	noLoad     float64 // ns; 0 until the first success
	sinceProbe int     // windows since the no-load RTT was last reset
	est        estimate
}

// NewVegas returns a Vegas algorithm, or an error naming the field of cfg
// that is out of range.
func NewVegas(cfg VegasConfig) (*Vegas, error) {
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 1
	}
	if cfg.ProbeMultiplier == 0 {
		cfg.ProbeMultiplier = 30
	}
	switch {
	case !(cfg.Smoothing > 0 && cfg.Smoothing <= 1):
		return nil, fmt.Errorf("adaptive: Vegas Smoothing must be in (0, 1], got %v", cfg.Smoothing)
	case cfg.ProbeMultiplier < 1 || cfg.ProbeMultiplier > 1e6:
		return nil, fmt.Errorf("adaptive: Vegas ProbeMultiplier must be in [1, 1000000], got %d", cfg.ProbeMultiplier)
	}
	return &Vegas{smoothing: cfg.Smoothing, probeMult: cfg.ProbeMultiplier}, nil
}

// Update applies the Vegas rule to one window.
func (v *Vegas) Update(limit int, w Window) int {
	est := v.est.sync(limit)
	v.sinceProbe++
	if v.sinceProbe >= v.probeMult*limit {
		v.sinceProbe, v.noLoad = 0, 0 // probe: take this window's mean afresh
	}
	if m := float64(w.MeanRTT); m > 0 && (v.noLoad == 0 || m < v.noLoad) {
		v.noLoad = m
	}
	l := max(1, math.Log10(est))
	next := est
	switch {
	case w.Drops > 0:
		next = est - l
	case w.MeanRTT <= 0 || 2*w.MaxInFlight < limit:
		return limit
	default:
		queue := math.Ceil(est * (1 - v.noLoad/float64(w.MeanRTT)))
		switch {
		case queue <= l:
			next = est + 6*l
		case queue < 3*l:
			next = est + l
		case queue > 6*l:
			next = est - l
		default:
			return limit
		}
	}
	return v.est.set(est*(1-v.smoothing) + next*v.smoothing)
}

// Baseline returns the no-load RTT; 0 before the first success and just
// after a periodic reset.
func (v *Vegas) Baseline() time.Duration { return time.Duration(v.noLoad) }
