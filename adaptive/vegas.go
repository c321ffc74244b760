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
	// ProbeMultiplier: the no-load RTT is measured afresh after about
	// ProbeMultiplier × limit samples, so that it can follow a downstream
	// that got slower for good. Default 30; range [1, 1e6].
	ProbeMultiplier int
}

// Vegas is TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End
// Congestion Avoidance on a Global Internet", IEEE JSAC 1995) as Netflix
// concurrency-limits' VegasLimit applies it to concurrency. It estimates the
// calls queued at the downstream from the no-load RTT (the smallest RTT
// seen since the last probe) and the window's mean RTT r:
//
//	queue = ceil(limit × (1 − noLoadRTT / r))
//	with L = log10(limit), at least 1:
//	  after a drop:      limit − L
//	  queue ≤ L:         limit + 6L    (almost no queue: grow fast)
//	  queue < 3L:        limit + L
//	  queue > 6L:        limit − L
//	  otherwise:         unchanged
//	limit = limit × (1 − Smoothing) + new × Smoothing
//
// Like Netflix it leaves the limit alone while peak in-flight < limit/2 and
// there was no drop. Unlike Netflix's windows, a window of drops alone
// still closes and lowers the limit.
type Vegas struct {
	owner      owner // claimed by the Limiter that runs it
	smoothing  float64
	probeMult  int
	noLoad     float64 // ns; 0 until the first success
	sinceProbe int     // samples since the no-load RTT was last reset
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
	v.sinceProbe += w.Samples
	if v.sinceProbe >= v.probeMult*limit {
		v.sinceProbe, v.noLoad = 0, 0 // probe: take the next window's minimum afresh
	}
	if m := float64(w.MinRTT); m > 0 && (v.noLoad == 0 || m < v.noLoad) {
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
