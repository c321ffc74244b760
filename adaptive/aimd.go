package adaptive

import (
	"fmt"
	"time"
)

// AIMDConfig configures [AIMD]. Zero fields select the defaults, which are
// those of Netflix concurrency-limits' AIMDLimit.
type AIMDConfig struct {
	// BackoffRatio multiplies the limit after a window with any drop.
	// Default 0.9; range [0.5, 1).
	BackoffRatio float64
	// Timeout: a window whose mean RTT exceeds it counts as a drop.
	// Default 5 s; range [1 ms, 1 h].
	Timeout time.Duration
}

// AIMD is additive-increase / multiplicative-decrease, the TCP Reno
// congestion-avoidance rule (RFC 5681) as Netflix concurrency-limits'
// AIMDLimit applies it to concurrency:
//
//	after a window with a drop (or mean RTT > Timeout): limit = limit × BackoffRatio
//	else, if peak in-flight ≥ limit/2:                   limit = limit + 1
//	else:                                                 limit unchanged
//
// Netflix applies the rule per sample; here it runs once per window, so
// that it reacts at the same pace whatever the call rate. Its weakness is
// recovery: +1 per window, so from 1 to 20 takes 19 windows.
type AIMD struct {
	backoff float64
	timeout time.Duration
}

// NewAIMD returns an AIMD algorithm, or an error naming the field of cfg
// that is out of range.
func NewAIMD(cfg AIMDConfig) (*AIMD, error) {
	if cfg.BackoffRatio == 0 {
		cfg.BackoffRatio = 0.9
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if !(cfg.BackoffRatio >= 0.5 && cfg.BackoffRatio < 1) {
		return nil, fmt.Errorf("adaptive: AIMD BackoffRatio must be in [0.5, 1), got %v", cfg.BackoffRatio)
	}
	if cfg.Timeout < time.Millisecond || cfg.Timeout > time.Hour {
		return nil, fmt.Errorf("adaptive: AIMD Timeout must be in [1ms, 1h], got %v", cfg.Timeout)
	}
	return &AIMD{backoff: cfg.BackoffRatio, timeout: cfg.Timeout}, nil
}

// Update applies the AIMD rule to one window, on the integer limit as
// Netflix does (so every decrease lowers a limit above 1 by at least 1).
func (a *AIMD) Update(limit int, w Window) int {
	switch {
	case w.Drops > 0 || w.MeanRTT > a.timeout:
		return int(float64(limit) * a.backoff)
	case 2*w.MaxInFlight >= limit:
		return limit + 1
	}
	return limit
}
