package adaptive

import (
	"fmt"
	"time"
)

// Config configures a [Limiter]. Every field's zero value selects the default
// named in its doc; [New] rejects values outside the stated ranges.
type Config struct {
	// Algorithm moves the limit once per window. nil selects [Gradient]
	// with its defaults. An Algorithm holds state: give each Limiter its own
	// ([New] refuses a Gradient, Gradient2 or Vegas that another Limiter
	// already runs).
	Algorithm Algorithm

	// InitialLimit is the limit (calls in flight) before the first window
	// closes. Default 20; range [MinLimit, MaxLimit]. With [Gradient] (a
	// [Grower]), a start-up demand above it is not shed: Acquire raises the
	// limit on demand, up to MaxLimit before the first window closes; with
	// other algorithms it is shed until the limit grows.
	InitialLimit int

	// MinLimit is the lowest limit (calls), unless [Limiter.SetCap] sets a
	// lower cap, which wins. Default 1; range [1, MaxLimit].
	MinLimit int

	// MaxLimit is the highest limit (calls). Default 1000, or MinLimit if
	// that is larger (so a MinLimit over a zero MaxLimit is accepted);
	// range [MinLimit, 1<<20].
	MaxLimit int

	// WindowMin is the shortest window. Default 250 ms; range [1 ms, 1 min],
	// and at most WindowMax.
	WindowMin time.Duration

	// WindowMax is the longest window: once a window is this old, the next
	// sample closes it whatever the sample count. Default 1 s; range
	// [WindowMin, 1 min].
	WindowMax time.Duration

	// MinSamples is how many samples (successes plus drops) close a window
	// that is at least WindowMin old. Default 10; range [1, 1e6].
	MinSamples int

	// OnLimitChange, if set, is called when a closing window moves the
	// limit, with the old and new limits (calls) and the window that moved
	// it: at most once per window (WindowMin apart at the closest). It runs
	// on a goroutine of the limiter's own, started when a change is queued
	// and ending once every queued change is delivered, never on a
	// goroutine calling Acquire or Release: a callback that blocks delays
	// later callbacks only, never a call. It runs outside the limiter's
	// locks, so it may call into the Limiter or the Gate around it; by then
	// the limit may have moved on. Calls are in order and never concurrent.
	// A panic in the callback is recovered and its value discarded; it
	// changes nothing in the limiter, later changes are still delivered,
	// and [Limiter.CallbackPanics] counts it. If 64 changes are already
	// waiting for the callback, a new one is not delivered;
	// [Limiter.DroppedLimitChanges] counts them.
	OnLimitChange func(from, to int, w Window)
}

// Defaults of [Config].
const (
	DefaultInitialLimit = 20
	DefaultMinLimit     = 1
	DefaultMaxLimit     = 1000
	DefaultWindowMin    = 250 * time.Millisecond
	DefaultWindowMax    = time.Second
	DefaultMinSamples   = 10
)

const maxLimitCeiling = 1 << 20

// withDefaults returns c with zero fields set to their defaults, or an error
// naming the first field out of range.
func (c Config) withDefaults() (Config, error) {
	if c.MinLimit == 0 {
		c.MinLimit = DefaultMinLimit
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = max(DefaultMaxLimit, c.MinLimit)
	}
	if c.InitialLimit == 0 {
		c.InitialLimit = min(max(DefaultInitialLimit, c.MinLimit), c.MaxLimit)
	}
	if c.WindowMin == 0 {
		c.WindowMin = DefaultWindowMin
	}
	if c.WindowMax == 0 {
		c.WindowMax = max(DefaultWindowMax, c.WindowMin)
	}
	if c.MinSamples == 0 {
		c.MinSamples = DefaultMinSamples
	}
	switch {
	case c.MinLimit < 1 || c.MinLimit > maxLimitCeiling:
		return c, fmt.Errorf("adaptive: MinLimit must be in [1, %d], got %d", maxLimitCeiling, c.MinLimit)
	case c.MaxLimit < c.MinLimit || c.MaxLimit > maxLimitCeiling:
		return c, fmt.Errorf("adaptive: MaxLimit must be in [MinLimit=%d, %d], got %d", c.MinLimit, maxLimitCeiling, c.MaxLimit)
	case c.InitialLimit < c.MinLimit || c.InitialLimit > c.MaxLimit:
		return c, fmt.Errorf("adaptive: InitialLimit must be in [MinLimit=%d, MaxLimit=%d], got %d", c.MinLimit, c.MaxLimit, c.InitialLimit)
	case c.WindowMin < time.Millisecond || c.WindowMin > time.Minute:
		return c, fmt.Errorf("adaptive: WindowMin must be in [1ms, 1m], got %v", c.WindowMin)
	case c.WindowMax < c.WindowMin || c.WindowMax > time.Minute:
		return c, fmt.Errorf("adaptive: WindowMax must be in [WindowMin=%v, 1m], got %v", c.WindowMin, c.WindowMax)
	case c.MinSamples < 1 || c.MinSamples > 1e6:
		return c, fmt.Errorf("adaptive: MinSamples must be in [1, 1000000], got %d", c.MinSamples)
	}
	return c, nil
}
