package adaptive

import (
	"fmt"
	"math"
	"time"
)

// Gradient2Config configures [Gradient2]. Zero fields select the defaults of
// Netflix concurrency-limits' Gradient2Limit.
type Gradient2Config struct {
	// Smoothing weighs a window's new estimate against the old one.
	// Default 0.2; range (0, 1].
	Smoothing float64
	// Tolerance is how much the window's RTT may exceed the long-term RTT
	// before the limit falls. Default 1.5; range [1, 100].
	Tolerance float64
	// LongWindow is the long-term RTT average's window, in windows.
	// Default 600; range [1, 1e6].
	LongWindow int
	// QueueSize is added to the limit each window, allowing that many calls
	// to queue at the downstream. Default 4; range [1, 1000].
	QueueSize int
}

// Gradient2 is Netflix concurrency-limits' Gradient2Limit, run once per
// window with the window's mean RTT of successes as the short RTT:
//
//	longRTT  = exponential average of shortRTT over LongWindow windows
//	           (a plain mean for the first 10); if longRTT/shortRTT > 2,
//	           longRTT = longRTT × 0.95 (so it recovers after a slowdown)
//	if peak in-flight < limit/2: limit unchanged (the caller is not using it)
//	gradient = max(0.5, min(1, Tolerance × longRTT / shortRTT))
//	new      = limit × gradient + QueueSize
//	limit    = limit × (1 − Smoothing) + new × Smoothing
//
// Kept as Netflix wrote it, with its known weaknesses: drops are ignored (a
// window without successes leaves the limit unchanged, and a downstream that
// fails fast with 503 never lowers it), and a slowdown that lasts is
// forgotten: longRTT catches up with it, the gradient returns to 1 and the
// limit creeps back up by QueueSize per window. [Gradient] fixes both.
type Gradient2 struct {
	owner                owner // claimed by the Limiter that runs it
	smoothing, tolerance float64
	queue                float64
	longWindow           int
	longRTT              float64 // ns
	longCount            int
	est                  estimate
}

// NewGradient2 returns a Gradient2 algorithm, or an error naming the field of
// cfg that is out of range.
func NewGradient2(cfg Gradient2Config) (*Gradient2, error) {
	if cfg.Smoothing == 0 {
		cfg.Smoothing = 0.2
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 1.5
	}
	if cfg.LongWindow == 0 {
		cfg.LongWindow = 600
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = 4
	}
	switch {
	case !(cfg.Smoothing > 0 && cfg.Smoothing <= 1):
		return nil, fmt.Errorf("adaptive: Gradient2 Smoothing must be in (0, 1], got %v", cfg.Smoothing)
	case !ratioIn(cfg.Tolerance, 1, 100):
		return nil, fmt.Errorf("adaptive: Gradient2 Tolerance must be in [1, 100], got %v", cfg.Tolerance)
	case cfg.LongWindow < 1 || cfg.LongWindow > 1e6:
		return nil, fmt.Errorf("adaptive: Gradient2 LongWindow must be in [1, 1000000], got %d", cfg.LongWindow)
	case cfg.QueueSize < 1 || cfg.QueueSize > 1000:
		return nil, fmt.Errorf("adaptive: Gradient2 QueueSize must be in [1, 1000], got %d", cfg.QueueSize)
	}
	return &Gradient2{smoothing: cfg.Smoothing, tolerance: cfg.Tolerance,
		queue: float64(cfg.QueueSize), longWindow: cfg.LongWindow}, nil
}

// Update applies the Gradient2 rule to one window.
func (g *Gradient2) Update(limit int, w Window) int {
	est := g.est.sync(limit)
	if w.MeanRTT <= 0 {
		return limit // no success in the window: Gradient2 has no RTT to use
	}
	short := float64(w.MeanRTT)
	const warmup = 10
	g.longCount++
	if g.longCount <= warmup {
		g.longRTT += (short - g.longRTT) / float64(g.longCount)
	} else {
		g.longRTT += (short - g.longRTT) * 2 / float64(g.longWindow+1)
	}
	if g.longRTT/short > 2 {
		g.longRTT *= 0.95
	}
	if float64(w.MaxInFlight) < est/2 {
		return limit
	}
	gradient := math.Max(0.5, math.Min(1, g.tolerance*g.longRTT/short))
	next := est*gradient + g.queue
	return g.est.set(est*(1-g.smoothing) + next*g.smoothing)
}

// Baseline returns longRTT, Gradient2's baseline; 0 before the first
// success.
func (g *Gradient2) Baseline() time.Duration { return time.Duration(g.longRTT) }
