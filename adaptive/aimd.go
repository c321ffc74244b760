package adaptive

import (
	"fmt"
	"time"
)

// AIMDConfig configures [AIMD]. Zero fields select the defaults, which are
// those of Netflix concurrency-limits' AIMDLimit except DropTolerance.
type AIMDConfig struct {
	// BackoffRatio multiplies the limit after a window whose share of drops
	// exceeds DropTolerance. Default 0.9; range [0.5, 1).
	BackoffRatio float64
	// Timeout: a window whose mean RTT exceeds it is cut as if its drops
	// exceeded DropTolerance. Default 5 s; range [1 ms, 1 h].
	Timeout time.Duration
	// DropTolerance is the share of a window's samples (ratio) that may be
	// drops without a cut: a healthy downstream answers a few percent of
	// calls with a timeout or a 503 whatever the load. Default 0.1, so that
	// a window of MinSamples' default of 10 samples may hold one drop
	// (with 3% of drops, 3.5% of such windows hold two); range (0, 0.2],
	// well below the 30% of drops of an overloaded downstream, or negative
	// for none: every window with a drop is cut, as in Netflix's AIMDLimit.
	DropTolerance float64
}

// AIMD is additive-increase / multiplicative-decrease, the TCP Reno
// congestion-avoidance rule (RFC 5681) as Netflix concurrency-limits'
// AIMDLimit applies it to concurrency: the limit creeps up by one call per
// window while the caller uses it, and is cut by a constant factor when
// the downstream signals overload with more than a background share of
// drops. For a window with S samples, D drops, mean RTT r and peak
// in-flight p:
//
//	if D > DropTolerance × S or r > Timeout: limit = limit × BackoffRatio
//	else, if p ≥ limit/2:                    limit = limit + 1
//	else:                                    limit unchanged
//
// Netflix's AIMDLimit applies its rule to each sample: every drop
// multiplies the limit by BackoffRatio, every success with in-flight ≥
// limit/2 adds 1, so the two net out and a share q of drops holds a
// binding limit near (1 − q) / (q (1 − BackoffRatio)) (323 at 3%). Here the rule runs once per
// window, so that it reacts at the same pace whatever the call rate, and a
// window's successes add 1, not one each: had any drop cut the window,
// as in Netflix's own windowed use (WindowedLimit), a background share
// would cut nearly every window of many samples and hold the limit below
// the demand (3% of timeouts shed 51% of the calls at 300 calls/s and 82%
// at 1,000; Helidon issue #9542 reports 68% with 3% of slow calls). So a
// window is cut only when its share of drops exceeds DropTolerance, which
// a downstream answering 30% of calls with drops, or timing out every call,
// exceeds in nearly every window (BBRv2 also takes only a loss rate above
// a threshold, BBRLossThresh 2% per round trip, for congestion;
// draft-cardwell-iccrg-bbr-congestion-control-02). Its weakness is recovery:
// +1 per window, so from 1 to 20 takes 19 windows.
type AIMD struct {
	backoff float64
	timeout time.Duration
	dropTol float64 // 0: every drop cuts
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
	if cfg.DropTolerance == 0 {
		cfg.DropTolerance = 0.1
	}
	switch {
	case !(cfg.BackoffRatio >= 0.5 && cfg.BackoffRatio < 1):
		return nil, fmt.Errorf("adaptive: AIMD BackoffRatio must be in [0.5, 1), got %v", cfg.BackoffRatio)
	case cfg.Timeout < time.Millisecond || cfg.Timeout > time.Hour:
		return nil, fmt.Errorf("adaptive: AIMD Timeout must be in [1ms, 1h], got %v", cfg.Timeout)
	case !(cfg.DropTolerance < 0 || cfg.DropTolerance <= 0.2):
		return nil, fmt.Errorf("adaptive: AIMD DropTolerance must be in (0, 0.2], or negative for none, got %v", cfg.DropTolerance)
	}
	return &AIMD{backoff: cfg.BackoffRatio, timeout: cfg.Timeout, dropTol: max(cfg.DropTolerance, 0)}, nil
}

// Update applies the AIMD rule to one window, on the integer limit as
// Netflix does (so every decrease lowers a limit above 1 by at least 1).
func (a *AIMD) Update(limit int, w Window) int {
	switch {
	case float64(w.Drops) > a.dropTol*float64(w.Samples) || w.MeanRTT > a.timeout:
		return int(float64(limit) * a.backoff)
	case 2*w.MaxInFlight >= limit:
		return limit + 1
	}
	return limit
}
