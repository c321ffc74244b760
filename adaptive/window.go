package adaptive

import (
	"math"
	"sync/atomic"
	"time"
)

// Window summarises the samples of one closed window; it is what an
// [Algorithm] sees.
type Window struct {
	// Duration is how long the window lasted.
	Duration time.Duration
	// Samples counts calls released as Success or Drop in the window (calls).
	Samples int
	// Drops counts calls released as Drop (calls), 0..Samples.
	Drops int
	// MeanRTT is the mean RTT of the window's successes; 0 when it had none.
	MeanRTT time.Duration
	// MinRTT is the smallest RTT of the window's successes; 0 when it had none.
	MinRTT time.Duration
	// MaxInFlight is the peak in-flight count seen by Acquire in the window
	// (calls), counting the acquiring call.
	MaxInFlight int
}

// window accumulates samples with atomic counters; no lock is taken per call.
// The goroutine that wins the compare-and-swap on start closes the window.
type window struct {
	// read by every call, written rarely (once per window, or when the
	// in-flight peak or the min RTT moves)
	start       atomic.Int64 // ns since Limiter.base
	minRTT      atomic.Int64 // ns, successes only; math.MaxInt64 when none
	maxInFlight atomic.Int64
	_           [40]byte
	// written by every Release
	samples atomic.Int64
	drops   atomic.Int64
	sumRTT  atomic.Int64 // ns, successes only
	_       [40]byte
}

func (w *window) reset(now int64) {
	w.start.Store(now)
	w.minRTT.Store(math.MaxInt64)
}

// add records one sample and returns the window's sample count after it.
func (w *window) add(rtt int64, drop bool) int64 {
	if drop {
		w.drops.Add(1)
	} else {
		w.sumRTT.Add(rtt)
		for {
			m := w.minRTT.Load()
			if rtt >= m || w.minRTT.CompareAndSwap(m, rtt) {
				break
			}
		}
	}
	return w.samples.Add(1)
}

// drain empties the counters into a Window. Samples that land while it
// drains are counted in this window or the next, never lost; the counts are
// clamped so that 0 <= Drops <= Samples. A sample's RTT and its count may
// land in different windows, so a window's MeanRTT may be off by the RTTs
// of the samples released at the very instant it closes: negligible in a
// window of many samples, up to 2× in one of a single sample (seen in a
// test whose 8 calls all ended at one synctest instant).
func (w *window) drain(d time.Duration, inFlight int64) Window {
	samples := w.samples.Swap(0)
	drops := min(w.drops.Swap(0), samples)
	sum := w.sumRTT.Swap(0)
	minRTT := w.minRTT.Swap(math.MaxInt64)
	peak := max(w.maxInFlight.Swap(inFlight), inFlight)
	out := Window{Duration: d, Samples: int(samples), Drops: int(drops), MaxInFlight: int(peak)}
	if ok := samples - drops; ok > 0 && minRTT != math.MaxInt64 {
		out.MeanRTT = time.Duration(sum / ok)
		out.MinRTT = time.Duration(minRTT)
	}
	return out
}
