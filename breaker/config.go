package breaker

import (
	"fmt"
	"time"
)

// Config configures a [Breaker]. Every field's zero value selects the
// default named in its doc; [New] rejects values outside the stated ranges.
type Config struct {
	// Window is the span of the rolling window over which ratios are taken.
	// Default 10 s; range [100 ms, 1 h].
	Window time.Duration

	// Buckets is how many buckets the window rolls by: every Window/Buckets
	// the oldest bucket's calls leave the window. Default 10; range [1, 100],
	// and Window/Buckets must be at least 10 ms.
	Buckets int

	// MinCalls is how many calls (successes, failures and slow calls, not
	// ignored ones) the window must hold before either ratio can trip the
	// breaker. Default 20; range [1, 1e6].
	MinCalls int

	// FailureRatio trips the breaker when failed calls / calls in the window
	// reach it (compared as it is, not rounded). Default 0.5; range
	// [0.001, 1].
	FailureRatio float64

	// SlowCall is the duration from which a call counts as slow, whether it
	// succeeded or failed. Default 1 s; range [1 ms, 1 h].
	SlowCall time.Duration

	// SlowRatio trips the breaker when slow calls / calls in the window
	// reach it (compared as it is, not rounded). Default 0.8; range
	// [0.001, 1].
	SlowRatio float64

	// OpenFor is how long the breaker stays open after a trip from closed
	// before it lets probes through (half-open). Each time the probes fail
	// and it opens again, it stays open twice as long as the last time, up
	// to MaxOpenFor; closing starts again from OpenFor. A short first open
	// costs little when a trip comes late, from calls that failed before a
	// heal; the doubling keeps a long outage probed as rarely as
	// MaxOpenFor (resilience4j's exponential wait in the open state, and
	// Envoy's outlier ejection time that grows with each ejection).
	// Default 250 ms; range [1 ms, 1 h].
	OpenFor time.Duration

	// MaxOpenFor is the longest the breaker stays open at a time. Zero
	// selects DefaultMaxOpenFor (2 s) when OpenFor is zero too, and
	// OpenFor when it is set: an OpenFor set alone is a fixed open time.
	// Range [OpenFor, 1 h].
	MaxOpenFor time.Duration

	// Probes is how many calls half-open admits; it closes after that many
	// consecutive successes (none slow) and opens again on the first failure
	// or slow call. Default 3; range [1, 1000].
	Probes int

	// ProbeLease is how long a half-open probe holds its place: a probe
	// that has not returned by then is given up and another is admitted.
	// Default 10 s; range [1 ms, 1 h].
	ProbeLease time.Duration

	// OnStateChange, if set, is called after every state change with the
	// breaker's name and the old and new states. It runs on a goroutine of
	// the breaker's own, started when a change is queued and ending once
	// every queued change is delivered (none lives while the breaker is
	// idle), never on a goroutine calling Allow or Done: a callback that
	// blocks delays later callbacks only, never a call. It runs outside the
	// breaker's locks, so it may call any method of the Breaker or of the
	// Gate around it; by then the breaker may have moved on (State says
	// where it is now). Calls are in order and never concurrent. A panic in
	// the callback is recovered and its value discarded; it changes nothing
	// in the breaker, later changes are still delivered, and
	// [Breaker.CallbackPanics] counts it. If 1,024 changes are already
	// waiting for the callback, a new one is not delivered;
	// [Breaker.DroppedStateChanges] counts them.
	OnStateChange func(name string, from, to State)
}

// Defaults of [Config].
const (
	DefaultWindow       = 10 * time.Second
	DefaultBuckets      = 10
	DefaultMinCalls     = 20
	DefaultFailureRatio = 0.5
	DefaultSlowCall     = time.Second
	DefaultSlowRatio    = 0.8
	DefaultOpenFor      = 250 * time.Millisecond
	DefaultMaxOpenFor   = 2 * time.Second
	DefaultProbes       = 3
	DefaultProbeLease   = 10 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Buckets == 0 {
		c.Buckets = DefaultBuckets
	}
	if c.MinCalls == 0 {
		c.MinCalls = DefaultMinCalls
	}
	if c.FailureRatio == 0 {
		c.FailureRatio = DefaultFailureRatio
	}
	if c.SlowCall == 0 {
		c.SlowCall = DefaultSlowCall
	}
	if c.SlowRatio == 0 {
		c.SlowRatio = DefaultSlowRatio
	}
	openFor := "OpenFor=" // names the OpenFor of MaxOpenFor's range
	if c.OpenFor == 0 {
		openFor = "OpenFor's default "
	}
	if c.MaxOpenFor == 0 {
		c.MaxOpenFor = c.OpenFor
		if c.OpenFor == 0 {
			c.MaxOpenFor = DefaultMaxOpenFor
		}
	}
	if c.OpenFor == 0 {
		c.OpenFor = DefaultOpenFor
	}
	if c.Probes == 0 {
		c.Probes = DefaultProbes
	}
	if c.ProbeLease == 0 {
		c.ProbeLease = DefaultProbeLease
	}
	switch {
	case c.Window < 100*time.Millisecond || c.Window > time.Hour:
		return c, fmt.Errorf("breaker: Window must be in [100ms, 1h], got %v", c.Window)
	case c.Buckets < 1 || c.Buckets > 100:
		return c, fmt.Errorf("breaker: Buckets must be in [1, 100], got %d", c.Buckets)
	case c.Window/time.Duration(c.Buckets) < 10*time.Millisecond:
		return c, fmt.Errorf("breaker: Window/Buckets must be at least 10ms, got %v/%d", c.Window, c.Buckets)
	case c.MinCalls < 1 || c.MinCalls > 1e6:
		return c, fmt.Errorf("breaker: MinCalls must be in [1, 1000000], got %d", c.MinCalls)
	case !(c.FailureRatio >= 0.001 && c.FailureRatio <= 1):
		return c, fmt.Errorf("breaker: FailureRatio must be in [0.001, 1], got %v", c.FailureRatio)
	case c.SlowCall < time.Millisecond || c.SlowCall > time.Hour:
		return c, fmt.Errorf("breaker: SlowCall must be in [1ms, 1h], got %v", c.SlowCall)
	case !(c.SlowRatio >= 0.001 && c.SlowRatio <= 1):
		return c, fmt.Errorf("breaker: SlowRatio must be in [0.001, 1], got %v", c.SlowRatio)
	case c.OpenFor < time.Millisecond || c.OpenFor > time.Hour:
		return c, fmt.Errorf("breaker: OpenFor must be in [1ms, 1h], got %v", c.OpenFor)
	case c.MaxOpenFor < c.OpenFor || c.MaxOpenFor > time.Hour:
		return c, fmt.Errorf("breaker: MaxOpenFor must be in [%s%v, 1h], got %v", openFor, c.OpenFor, c.MaxOpenFor)
	case c.Probes < 1 || c.Probes > 1000:
		return c, fmt.Errorf("breaker: Probes must be in [1, 1000], got %d", c.Probes)
	case c.ProbeLease < time.Millisecond || c.ProbeLease > time.Hour:
		return c, fmt.Errorf("breaker: ProbeLease must be in [1ms, 1h], got %v", c.ProbeLease)
	}
	return c, nil
}
