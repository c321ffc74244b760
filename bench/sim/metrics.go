package sim

import (
	"math"
	"slices"
	"time"
)

// Never marks a time metric whose event did not happen in the run.
const Never = time.Duration(-1)

// Bin is one second of a run, by arrival time.
type Bin struct {
	// T is the start of the second, since the start of the run.
	T time.Duration
	// Offered counts the calls that arrived in the second.
	Offered int
	// Good counts those that succeeded within the scenario's SLO.
	Good int
	// P99 is the 99th percentile latency of those that succeeded; 0 if none.
	P99 time.Duration
}

// Result is one contender's run of one scenario, reduced to its metrics.
type Result struct {
	// Scenario and Contender name the run.
	Scenario, Contender string
	// Calls counts user calls (calls).
	Calls int
	// Failed counts user calls that returned an error (calls).
	Failed int
	// Offered is the mean arrival rate (calls per second).
	Offered float64
	// Goodput is the mean rate of successes within the scenario's SLO
	// (calls per second), over the arrival period.
	Goodput float64
	// P50 and P99 are percentiles of the successes' latency.
	P50, P99 time.Duration
	// Amplification is downstream attempts per user call.
	Amplification float64
	// PeakInFlight is the most requests the downstream held at once (calls).
	PeakInFlight int
	// P99Error is the 99th percentile of the time from a call's start to
	// the error it returned (shed, breaker open, timeout, retries used up),
	// over the calls that failed; 0 if none failed.
	P99Error time.Duration
	// P99Shed is the 99th percentile of the time from a call's start to
	// the error it returned, over the calls the contender refused itself
	// (its limiter shed the call or its breaker was open, at the first
	// attempt or a retry; Caller.Shed); 0 if none.
	P99Shed time.Duration
	// Shed counts the calls the contender refused itself (calls).
	Shed int
	// UnderCapacity is the time from the onset of trouble until the
	// downstream's in-flight count is back under its worker count for good
	// (until recovery, or the end); 0 if it never went over, Never if it was
	// still over at recovery or the end, and 0 in a scenario with neither
	// onset nor recovery.
	UnderCapacity time.Duration
	// Recovered is the time from recovery until goodput is back to 95% of
	// the offered load (three one-second arrival bins in a row with at
	// least 95% of their calls good); Never if it did not happen before the
	// end, and 0 without a recovery.
	Recovered time.Duration
	// LimitSettled is the time from the onset until the limit stays within
	// ±20% of the downstream's worker count to the end of the run; Never
	// if it never does, 0 in a scenario with neither onset nor recovery.
	LimitSettled time.Duration
	// LimitLow and LimitHigh are the smallest and largest limit sampled
	// from onset + 10 s to the end (calls; from 10 s without an onset; in a
	// fleet, of the sum of the gates' limits).
	LimitLow, LimitHigh int
	// HealthyLost counts the calls that arrived while the downstream was
	// healthy and under capacity (from 2 s to 2 s before the onset, from
	// recovery + 5 s to the end, and, in a scenario with capacity to spare,
	// from onset + 5 s to the end; none in a saturated one) and did not
	// succeed within the SLO (calls).
	HealthyLost int
	// HealthyShed counts those of them that the contender refused itself
	// (calls; see Shed).
	HealthyShed int
	// LimitInBand is the share of the limit samples from onset + 10 s to
	// the end that are within ±20% of the worker count (ratio 0..1).
	LimitInBand float64
	// EarlyAttempts counts attempts started before the Retry-After hint of
	// the same call's previous answer had expired.
	EarlyAttempts int
	// Samples is the time series, every SampleEvery.
	Samples []Sample
	// Bins is the per-second series, by arrival time.
	Bins []Bin
}

// percentile returns the q-quantile (0 < q ≤ 1) of sorted d by the
// nearest-rank method; 0 for no values.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(d)))) - 1
	return d[max(0, i)]
}

func reduce(sc Scenario, name string, calls []call, samples []Sample, ds *Downstream) *Result {
	r := &Result{Scenario: sc.Name, Contender: name, Calls: len(calls), Samples: samples,
		PeakInFlight: ds.Peak(), LimitLow: math.MaxInt}
	secs := sc.Duration.Seconds()
	r.Offered = float64(len(calls)) / secs
	r.Amplification = float64(ds.Attempts()) / float64(max(1, len(calls)))

	nbins := int(math.Ceil(secs))
	r.Bins = make([]Bin, nbins)
	binLat := make([][]time.Duration, nbins)
	var okLat, errLat, shedLat []time.Duration
	good, slo := 0, sc.slo()
	for _, c := range calls {
		b := min(nbins-1, int(c.at/time.Second))
		if c.shed && healthySecond(sc, time.Duration(b)*time.Second) {
			r.HealthyShed++
		}
		r.Bins[b].Offered++
		r.EarlyAttempts += c.early
		if !c.ok {
			errLat = append(errLat, c.latency)
			if c.shed {
				shedLat = append(shedLat, c.latency)
			}
			continue
		}
		okLat = append(okLat, c.latency)
		binLat[b] = append(binLat[b], c.latency)
		if c.latency <= slo {
			good++
			r.Bins[b].Good++
		}
	}
	for i := range r.Bins {
		r.Bins[i].T = time.Duration(i) * time.Second
		slices.Sort(binLat[i])
		r.Bins[i].P99 = percentile(binLat[i], 0.99)
	}
	r.Goodput = float64(good) / secs
	slices.Sort(okLat)
	slices.Sort(errLat)
	r.P50, r.P99 = percentile(okLat, 0.5), percentile(okLat, 0.99)
	slices.Sort(shedLat)
	r.P99Error = percentile(errLat, 0.99)
	r.Failed = len(errLat)
	r.P99Shed = percentile(shedLat, 0.99)
	r.Shed = len(shedLat)

	end := sc.Duration
	if sc.Recovery > 0 {
		end = sc.Recovery
	}
	if sc.Onset > 0 || sc.Recovery > 0 {
		r.UnderCapacity = underCapacity(samples, sc.Onset, end)
		r.LimitSettled = limitSettled(samples, sc.Onset, sc.Duration)
	}
	var n, in int
	for _, s := range samples {
		if s.T >= sc.Onset+10*time.Second && s.T < sc.Duration && s.Limit > 0 {
			r.LimitLow, r.LimitHigh = min(r.LimitLow, s.Limit), max(r.LimitHigh, s.Limit)
			n++
			if inBand(s.Limit, s.Capacity) {
				in++
			}
		}
	}
	if n > 0 {
		r.LimitInBand = float64(in) / float64(n)
	}
	if r.LimitLow == math.MaxInt {
		r.LimitLow = 0
	}
	if sc.Recovery > 0 {
		r.Recovered = recovered(r.Bins, sc.Recovery)
	}
	for _, b := range r.Bins {
		if healthySecond(sc, b.T) {
			r.HealthyLost += b.Offered - b.Good
		}
	}
	return r
}

// underCapacity: see Result.UnderCapacity.
func underCapacity(samples []Sample, onset, end time.Duration) time.Duration {
	last, over := time.Duration(0), false
	for _, s := range samples {
		if s.T < onset || s.T > end {
			continue
		}
		if s.InFlight > s.Capacity {
			last, over = s.T, true
		}
	}
	switch {
	case !over:
		return 0
	case last+SampleEvery > end:
		return Never
	}
	return last + SampleEvery - onset
}

// limitSettled: see Result.LimitSettled.
func limitSettled(samples []Sample, onset, end time.Duration) time.Duration {
	settled := Never
	for _, s := range samples {
		if s.T < onset || s.T >= end {
			continue
		}
		switch {
		case !inBand(s.Limit, s.Capacity):
			settled = Never
		case settled == Never:
			settled = s.T - onset
		}
	}
	return settled
}

// healthySecond reports whether the arrival second starting at t is one in
// which the downstream was healthy and under capacity: after a 2 s warm-up
// and until 2 s before the onset (S2's offered load reaches the capacity
// at its onset), from 5 s after recovery to the end, and, where the
// trouble leaves capacity to spare (Scenario.Spare), from 5 s after the
// onset to the end; never in a saturated scenario (Scenario.Saturated).
func healthySecond(sc Scenario, t time.Duration) bool {
	switch {
	case sc.Saturated || t < 2*time.Second:
		return false
	case sc.Onset > 0 && t < sc.Onset-2*time.Second:
		return true
	case sc.Recovery > 0 && t >= sc.Recovery+5*time.Second:
		return true
	case sc.Spare && t >= sc.Onset+5*time.Second:
		return true
	}
	return sc.Onset == 0
}

// inBand reports whether limit is within ±20% of capacity.
func inBand(limit, capacity int) bool {
	return math.Abs(float64(limit-capacity)) <= 0.2*float64(capacity)
}

// recovered: see Result.Recovered.
func recovered(bins []Bin, recovery time.Duration) time.Duration {
	const run = 3
	for i, b := range bins {
		if b.T < recovery {
			continue
		}
		ok := i+run <= len(bins)
		for j := i; ok && j < i+run; j++ {
			ok = bins[j].Offered > 0 && float64(bins[j].Good) >= 0.95*float64(bins[j].Offered)
		}
		if ok {
			return b.T - recovery
		}
	}
	return Never
}
