package adaptive

import (
	"fmt"
	"math"
	"time"
)

// HybridConfig configures [Hybrid]. Zero fields select the defaults.
type HybridConfig struct {
	// Tolerance: a window of up to 10 samples whose mean RTT exceeds
	// Tolerance × baseline is congested; for S > 10 samples the margin
	// Tolerance − 1 shrinks by √(10/S), to a quarter of it at most.
	// Default 2; range [1, 100].
	Tolerance float64
	// Backoff is the smallest factor one window may multiply the limit by.
	// Default 0.5; range [0.1, 1).
	Backoff float64
	// Growth multiplies the limit after a healthy window in which the limit
	// was binding (peak in-flight reached it), below the slow-start
	// threshold (see [Hybrid]). Default 1.5; range (1, 10].
	Growth float64
	// BaselineRise is the time constant with which the RTT baseline rises
	// towards a higher RTT that lasts: after a step of the RTT, the baseline
	// has covered 63% of the step after this much time. Default 30 min;
	// range [1 s, 24 h].
	BaselineRise time.Duration
	// MaxLift bounds the lift (see [Hybrid]): how far a lasting RTT rise
	// that cutting the calls in flight did not relieve may raise the
	// baseline, as a factor of the baseline before the rise (ratio). 1
	// turns the lift off. Default 4, so that a 2× to 3× slowdown of a
	// downstream with capacity to spare is served while a 20× one stays
	// congested; a slowdown near MaxLift is not served (half the windows'
	// RTTs are over it), so set it well above the slowdowns to serve.
	// Range [1, 100].
	MaxLift float64
	// DropTolerance is the share of drops (ratio 0..1) a downstream may
	// answer whatever the load without the limit being cut for them. A
	// window with drops is congested by them when it holds no success, or
	// when its drops exceed DropTolerance × its samples by more than two
	// standard deviations of that count, or when its share exceeds
	// DropTolerance and recent windows pooled (about 5 / DropTolerance
	// samples) pass that test; its cut then takes only the share above
	// DropTolerance. With no tolerance each window holding a drop cuts the
	// limit and the limit falls below the demand: 1% of drops at 1,000
	// calls/s shed 30% of the calls in the third minute. The 2% is BBRv2's
	// loss threshold (BBRLossThresh, Cardwell et al.,
	// draft-cardwell-iccrg-bbr-congestion-control-02). Default 0.02; range
	// (0, 0.1], or negative for none: every drop congests the window and
	// cuts by the whole share, as in AIMD.
	DropTolerance float64
}

// Hybrid is floodgate's default algorithm: a gradient on RTT against a
// baseline that is quick to fall and slow to rise, AIMD's multiplicative
// decrease scaled by the share of drops, and multiplicative recovery. For a
// window with S samples, D drops, mean RTT r and peak in-flight p:
//
//	baseline b: the first window's r; then b += (r − b) × 0.2 when r < b,
//	            and b += (r − b) × min(1, window duration / BaselineRise) when r > b
//	            and the window is not dropped
//	T' = T for S ≤ 10, else 1 + (T − 1) × max(1/4, √(10/S))   (noise of the mean)
//	dropped: D > 0 and (D = S, or D > d S + 2 √(d S), or D > d S and the
//	         same test holds for the drops and samples of recent windows,
//	         each sample weighted by exp(−age in samples × d/5)); d the
//	         DropTolerance (0.02): more drops than a background share d and
//	         its noise; suspect: that pooled test holds but D ≤ d S
//	lift: with P and R the highest peak in-flight and r of the congestion
//	      episode so far and f = 1 − p/P the share of our calls in flight its
//	      cuts took away: a stretch of congested windows (not dropped,
//	      r > T' × b) after the episode's first, each with f ≥ 0.15, P − p ≥ 2 and
//	      r ≥ (1 − 0.4 f) × R, that lasts at least one r and two windows,
//	      holds (2/f)² successes and whose mean r is ≥ (1 − 0.4 f) × R (f the
//	      stretch's smallest) says the RTT is not a queue of ours, which would
//	      shrink with our calls in flight: b is lifted to r, at most MaxLift ×
//	      the anchor, and the episode's cuts are undone (limit and ssthresh
//	      back to their values before its first decrease); the anchor is the
//	      b from before the RTT rose: it follows b down at once, and up only
//	      after 30 s of windows within T' of it; the lifted b then moves 0.2
//	      of the way to each r, never above where the lift put it, and ends
//	      when it reaches b; two windows in a row over the lifted threshold
//	      revoke the lift; whatever the lifts, a window whose r exceeds both
//	      MaxLift × the anchor and T' × b is congested
//	if dropped:         limit × max(Backoff, 1 − D/S + d)     (drop: congestion)
//	else if r > T' × b: limit × max(Backoff, T' × b / r)      (RTT gradient; b lifted, capped)
//	else if p ≥ limit:                                         (binding, healthy)
//	    previous window congested and limit < ssthresh: ssthresh   (fast recovery)
//	    D ≤ d S, not suspect, and (limit < ssthresh or no ssthresh yet):
//	                         min(ssthresh, max(limit + 1, limit × Growth))  (slow start)
//	    the same, limit ≥ 2 × ssthresh and ≥ the limit before the last
//	    episode's first decrease: max(limit + 1, limit × Growth)   (ssthresh is stale)
//	    else:                                limit + 1              (congestion avoidance)
//	else if 2p ≥ limit: limit + 1
//	else:               unchanged                              (caller not using it)
//
// ssthresh (RFC 5681's slow-start threshold) is set by the first congested
// window after a healthy one (later congested windows of the same episode
// leave it, as repeated timeouts do in RFC 5681 §3.1): the limit after that
// window's decrease, at most its peak in-flight (FlightSize, not cwnd); once
// the limit is past twice it and past the limit the episode began at, with
// no congestion since, it no longer holds slow start back: it remembers
// the demand of that moment, not a capacity. A
// window congested by drops alone whose drops are within 3 standard
// deviations of d (in the window and in the pool) is cut but opens no
// episode and sets no ssthresh: at a share of drops right at d, one window
// in 30 passes the 2σ test by chance.
//
// It is built from the gradient of Netflix concurrency-limits' GradientLimit
// and Gradient2Limit and the decrease of AIMD (RFC 5681), and fixes their
// known weaknesses:
//   - drops lower the limit whatever their RTT, so a downstream failing fast
//     with 503 is backed off from (Gradient2 ignores drops);
//   - but a background share of drops, which a healthy downstream has
//     whatever the load (timeouts in the tail, a stray 503), does not:
//     AIMD and a drop rule without tolerance cut on every window that holds
//     one, so 1% of drops at 1,000 calls/s shed 30% of the calls in the
//     third minute and 2% shed 48%; with DropTolerance 0.02 (BBRv2's loss
//     threshold) neither sheds a call, nor does 3% at 50 calls in flight
//     with evenly spaced arrivals (with Poisson arrivals or 200–500 in
//     flight it sheds up to 55%), and 4% sheds 42% instead of 65%; small windows are pooled, so that a window of 10 samples does
//     not get a free drop; a window whose share of drops exceeds d, or that
//     the pool suspects, grows the limit by +1 at most, never by slow
//     start, so the first window of a storm of timeouts, which mixes a few
//     of them with the successes of earlier calls, cannot raise it by half;
//   - a window of nothing but drops still closes and lowers the limit
//     (Netflix's windows need a success to close);
//   - a lasting slowdown is not forgotten: the baseline rises with a 30 min
//     time constant instead of Gradient2's 600-window average with its
//     catch-up decay, so a 20× step stays "congested" for about an hour
//     at 160 samples per window or more (margin 1.25), 19 min at 10 or
//     fewer (margin 2);
//     and windows congested by drops never move it up;
//   - yet a lasting slowdown that is not congestion is served: when cutting
//     the calls in flight leaves the RTT where it was, the baseline is
//     lifted, up to MaxLift (4) times itself, so a downstream that became
//     2× to 3× slower with capacity to spare is not shed from
//     (GradientLimit and Vegas would hold the limit down as long as the
//     baseline remembers the old RTT);
//   - recovery is fast: the first healthy, binding window after a
//     congestion episode goes back to ssthresh at once (TCP fast recovery),
//     and growth below ssthresh is multiplicative, like TCP slow start:
//     from 1 to 22 in 7 binding windows (2, 3, 4, 6, 10, 15, 22) instead of
//     AIMD's 19 to 20; above ssthresh it is +1 per window, so a limit that
//     found the capacity once probes past it slowly instead of by ×Growth.
type Hybrid struct {
	owner                      owner // claimed by the Limiter that runs it
	tolerance, backoff, growth float64
	maxLift                    float64
	dropTol                    float64 // 0: none
	rise                       float64 // ns
	baseline                   float64 // ns; 0 until the first success
	est                        estimate
	// poolD and poolS are the drops and samples of recent windows, each
	// sample weighted by exp(−age × DropTolerance/5) with age counted in
	// samples, so that poolS tends to 5/DropTolerance (see dropped).
	poolD, poolS float64
	// ssthresh is RFC 5681's slow-start threshold: the limit after the
	// first decrease of the last congestion episode, at most that window's
	// peak in-flight; 0 before the first one.
	ssthresh  float64
	congested bool // the previous window lowered the limit
	// lifted is the lifted baseline (ns), 0 when there is no lift; it was
	// anchor is the baseline from before the RTT last rose (ns): it follows
	// the baseline while windows are within the margin of it, and stays
	// where it was while they are not; lifts are capped at MaxLift × anchor,
	// so a late lift cannot take its cap from a baseline that has risen.
	lifted, anchor float64
	liftTop        float64 // where the last lift put the baseline (ns)
	// calm is how long (ns) windows have been within the margin of the
	// anchor, in a row; over counts the windows in a row over the lifted
	// baseline.
	calm float64
	over int
	// epPeak and epRTT are the highest peak in-flight and mean RTT (ns)
	// of the congestion episode so far; epLimit and epSsthresh are the
	// limit and ssthresh before its first decrease.
	epPeak                     int
	epRTT, epLimit, epSsthresh float64
	// streak is how long (ns) the windows before this one have said in a
	// row that the episode's RTT is not a queue of ours, and streakF the
	// smallest share of the calls in flight the cuts had taken away then.
	streak, streakF float64
	// streakRTT and streakN sum the stretch's RTTs (ns × calls) and
	// successes (calls), including this window.
	streakRTT, streakN float64
}

// NewHybrid returns a Hybrid algorithm, or an error naming the field of cfg
// that is out of range.
func NewHybrid(cfg HybridConfig) (*Hybrid, error) {
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 2
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 0.5
	}
	if cfg.Growth == 0 {
		cfg.Growth = 1.5
	}
	if cfg.BaselineRise == 0 {
		cfg.BaselineRise = 30 * time.Minute
	}
	if cfg.MaxLift == 0 {
		cfg.MaxLift = 4
	}
	if cfg.DropTolerance == 0 {
		cfg.DropTolerance = 0.02
	}
	switch {
	case !ratioIn(cfg.Tolerance, 1, 100):
		return nil, fmt.Errorf("adaptive: Hybrid Tolerance must be in [1, 100], got %v", cfg.Tolerance)
	case !(cfg.Backoff >= 0.1 && cfg.Backoff < 1):
		return nil, fmt.Errorf("adaptive: Hybrid Backoff must be in [0.1, 1), got %v", cfg.Backoff)
	case !(cfg.Growth > 1 && cfg.Growth <= 10):
		return nil, fmt.Errorf("adaptive: Hybrid Growth must be in (1, 10], got %v", cfg.Growth)
	case cfg.BaselineRise < time.Second || cfg.BaselineRise > 24*time.Hour:
		return nil, fmt.Errorf("adaptive: Hybrid BaselineRise must be in [1s, 24h], got %v", cfg.BaselineRise)
	case !ratioIn(cfg.MaxLift, 1, 100):
		return nil, fmt.Errorf("adaptive: Hybrid MaxLift must be in [1, 100], got %v", cfg.MaxLift)
	case !(cfg.DropTolerance < 0 || cfg.DropTolerance <= 0.1):
		return nil, fmt.Errorf("adaptive: Hybrid DropTolerance must be in (0, 0.1], or negative for none, got %v", cfg.DropTolerance)
	}
	return &Hybrid{tolerance: cfg.Tolerance, backoff: cfg.Backoff, growth: cfg.Growth,
		rise: float64(cfg.BaselineRise), maxLift: cfg.MaxLift, dropTol: max(cfg.DropTolerance, 0)}, nil
}

// Update applies the Hybrid rule to one window.
func (h *Hybrid) Update(limit int, w Window) int {
	est := h.est.sync(limit)
	if w.Samples <= 0 {
		return limit
	}
	w.Drops = min(max(w.Drops, 0), w.Samples)
	r := float64(w.MeanRTT)
	dropped, strong, suspect := h.dropped(w)
	if r > 0 {
		switch {
		case h.baseline == 0:
			h.baseline = r
		case r < h.baseline:
			h.baseline += (r - h.baseline) * 0.2
		case !dropped:
			h.baseline += (r - h.baseline) * min(1, float64(max(w.Duration, 0))/h.rise)
		}
	}
	// The mean of S samples is √(S/10) times less noisy than that of 10:
	// its margin above the baseline shrinks alike, to a quarter at S ≥ 160.
	tol := h.tolerance
	if w.Samples > 10 {
		tol = 1 + (tol-1)*max(0.25, math.Sqrt(10/float64(w.Samples)))
	}
	thr, lifted := h.lift(r, tol, w, dropped)
	congested := dropped || r > thr
	// A conviction by drops alone that is within 3 standard deviations of
	// the tolerance cuts, but opens no episode: at a background share right
	// at the tolerance one window in 30 passes the 2σ test by chance, and
	// the ssthresh it would set (its peak in-flight, the demand of the
	// moment) would cap slow start long after.
	opens := congested && !h.congested && (strong || r > thr)
	switch {
	case lifted && !congested:
		// The episode's cuts were not for a queue of ours: undo them.
		est = max(est, h.epLimit)
		h.ssthresh = h.epSsthresh
	case opens:
		h.epPeak, h.epRTT = w.MaxInFlight, r
		h.epLimit, h.epSsthresh = est, h.ssthresh
	case congested && h.congested:
		h.epPeak = max(h.epPeak, w.MaxInFlight)
		h.epRTT = max(h.epRTT, r)
	}
	switch {
	case lifted && !congested:
	case dropped:
		// Cut by the share of drops above the tolerance (all of it
		// without one).
		est *= max(h.backoff, 1-float64(w.Drops)/float64(w.Samples)+h.dropTol)
	case r > thr:
		est *= max(h.backoff, thr/r)
	case w.MaxInFlight >= limit:
		switch {
		case h.congested && est < h.ssthresh:
			est = h.ssthresh // fast recovery: back to the threshold
		case !suspect && float64(w.Drops) <= h.dropTol*float64(w.Samples) && (h.ssthresh == 0 || est < h.ssthresh || est >= max(2*h.ssthresh, h.epLimit)):
			// slow start; also once the limit is past both twice ssthresh
			// and the limit the last episode began at, without congestion:
			// ssthresh then remembers a demand, not a capacity
			if est < h.ssthresh {
				est = min(max(est+1, est*h.growth), h.ssthresh)
			} else {
				est = max(est+1, est*h.growth)
			}
		default:
			est++ // congestion avoidance
		}
	case 2*w.MaxInFlight >= limit:
		est++
	}
	if opens {
		h.ssthresh = max(1, min(est, float64(w.MaxInFlight)))
	}
	h.congested = opens || h.congested && congested
	return h.est.set(est)
}

// lift updates the lift for a window with mean RTT r (ns) and margin tol,
// congested by its drops if dropped, and returns the RTT above which the
// window is congested (ns) and whether this window lifted the baseline.
func (h *Hybrid) lift(r, tol float64, w Window, dropped bool) (float64, bool) {
	// The anchor follows the baseline down at once, and up only after
	// 30 s of windows within the margin of it: a short return of the RTT
	// in a long slowdown must not move it up to a baseline that has risen.
	switch {
	case h.anchor == 0 || h.baseline < h.anchor:
		h.anchor, h.calm = h.baseline, 0
	case !dropped && r > 0 && r <= tol*h.anchor:
		if h.calm += float64(max(w.Duration, 0)); h.calm >= float64(30*time.Second) {
			h.anchor = h.baseline
		}
	default:
		h.calm = 0
	}
	over := h.lifted > 0 && !dropped && r > h.threshold(tol)
	if over {
		h.over++
	} else {
		h.over = 0
	}
	switch {
	case h.over >= 2:
		// Two windows in a row over the lifted baseline (one may be noise):
		// the lift was wrong (a queue shared with other clients, which grew
		// back when the cuts were undone) or the downstream slowed down
		// again. Judge the window against the baseline; a new lift needs
		// new evidence.
		h.lifted, h.over = 0, 0
	case over:
	case h.lifted > 0 && !dropped && r > 0:
		// Follow the mean RTT, down when the slowdown ends, but never above
		// where the lift put it: a queue of ours that builds under the lift
		// must show as congestion.
		h.lifted = min(h.liftTop, h.lifted+(r-h.lifted)*0.2)
	}
	if h.lifted <= h.baseline {
		h.lifted = 0
	}
	thr := h.threshold(tol)
	// A queue of ours shrinks with our calls in flight: if the episode's
	// cuts took a share f of them away (at least 15% and 2 calls, so that
	// a stretch does not start on the noise of a window's peak) and the
	// RTT fell by less than 0.4 f, the RTT is not a queue of ours. The
	// calls that complete in a window left up to one RTT earlier, with the
	// delay they queued for, so the test must hold for one RTT after the
	// calls in flight fell, over at least two windows, with the smallest f
	// of that stretch; and over (2/f)² successes, so that the stretch's
	// mean RTT is within 0.6 f of its expectation at 2 standard errors if
	// the RTTs vary by up to 50%.
	f := 1 - float64(w.MaxInFlight)/float64(max(1, h.epPeak))
	if !(!dropped && r > thr && h.congested && f >= 0.15 && h.epPeak-w.MaxInFlight >= 2) {
		h.streak = 0
		return thr, false
	}
	if h.streak == 0 {
		h.streakF, h.streakRTT, h.streakN = f, 0, 0
	}
	h.streakF = min(h.streakF, f)
	n := float64(w.Samples - w.Drops)
	h.streakRTT += r * n
	h.streakN += n
	if r < (1-0.4*h.streakF)*h.epRTT {
		h.streak = 0
		return thr, false
	}
	if h.streak == 0 || h.streak < r || h.streakN < (2/h.streakF)*(2/h.streakF) {
		h.streak += float64(max(w.Duration, 0))
		return thr, false
	}
	h.streak = 0
	if h.streakRTT/h.streakN < (1-0.4*h.streakF)*h.epRTT {
		return thr, false // over the stretch, the RTT did come down
	}
	h.lifted = min(r, h.maxLift*h.anchor)
	h.liftTop = h.lifted
	return h.threshold(tol), true
}

// dropped reports whether window w is congested by its drops, and
// whether it is suspect (no slow start). With no tolerance, a window is
// congested when it holds a drop. With tolerance d, a window with drops is
// congested when it holds no success, or when its drops exceed d × its
// samples by more than two standard deviations of that count (Poisson),
// or when the drops of recent windows pooled exceed the same bound and
// its own share exceeds d; when the pool exceeds it but the window's own
// share does not, the window is suspect. The pool weighs each sample by
// exp(−age/K), with age in samples and K = 5/d (250 samples at 2%), so
// that its test rests on about 5 expected background drops: a window of
// 10 samples alone would have to let 1 drop in (10%) to keep its false
// alarms as rare as a window of 250 letting 9 in (3.6%). The window's own
// test catches a sudden rise the pool would dilute with the past (in bench
// S5 the first window of 429s, 6 of 71). A window without drops is never
// congested or suspect, whatever the pool holds.
func (h *Hybrid) dropped(w Window) (dropped, strong, suspect bool) {
	if h.dropTol == 0 {
		return w.Drops > 0, true, false
	}
	k := 5 / h.dropTol
	decay := math.Exp(-float64(w.Samples) / k)
	h.poolD = h.poolD*decay + float64(w.Drops)
	h.poolS = h.poolS*decay + float64(w.Samples)
	m, pm := h.dropTol*float64(w.Samples), h.dropTol*h.poolS
	strong = w.Drops == w.Samples || exceeds(float64(w.Drops), m, 3) || exceeds(h.poolD, pm, 3)
	switch {
	case w.Drops == 0:
		return false, false, false
	case w.Drops == w.Samples || exceeds(float64(w.Drops), m, 2):
		return true, strong, false
	case !exceeds(h.poolD, pm, 2):
		return false, false, false
	}
	// The pool says the drops exceed the tolerance: the window is cut by
	// its own share above the tolerance, or if it has none, it may grow
	// the limit by +1 but not by slow start (the pool may remember an
	// episode that has ended, or an overload may be building up).
	return float64(w.Drops) > m, strong, float64(w.Drops) <= m
}

// exceeds reports whether a count of drops is above m, the count a
// background share would give, by more than z standard deviations
// (Poisson: √m).
func exceeds(drops, m, z float64) bool { return drops > m+z*math.Sqrt(m) }

// threshold returns the RTT above which a window with margin tol is
// congested (ns): tol × the baseline, or during a lift tol × the lifted
// baseline, but never above MaxLift × the anchor (unless the baseline
// alone allows more).
func (h *Hybrid) threshold(tol float64) float64 {
	if h.lifted <= h.baseline {
		return tol * h.baseline
	}
	return min(tol*h.lifted, max(tol*h.baseline, h.maxLift*h.anchor))
}

// Baseline returns the RTT baseline (see the rule above): during a lift,
// the lifted one, at most MaxLift × the anchor; 0 before
// the first success.
func (h *Hybrid) Baseline() time.Duration {
	if h.lifted <= h.baseline {
		return time.Duration(h.baseline)
	}
	return time.Duration(min(h.lifted, h.maxLift*h.anchor))
}
