package adaptive

import (
	"math"
	"sync/atomic"
	"time"
)

// Window summarises the samples of one closed window; it is what an
// [Algorithm] sees. Every RTT it sums is taken at most as 2³² − 1 µs
// (about 71.6 minutes).
type Window struct {
	// Duration is how long the window lasted.
	Duration time.Duration
	// Samples counts calls released as Success or Drop in the window (calls).
	Samples int
	// Drops counts calls released as Drop or Overload (calls), 0..Samples.
	Drops int
	// Overloads counts calls released as Overload (calls), 0..Drops: the
	// drops that were the server's overload answers, not timeouts.
	Overloads int
	// MeanRTT is the mean RTT of the window's successes; 0 when it had none.
	MeanRTT time.Duration
	// MinRTT is the smallest RTT of the window's successes; 0 when it had none.
	MinRTT time.Duration
	// StdDevRTT is the standard deviation of the RTTs of the window's
	// successes (sample standard deviation, to the microsecond); 0 when
	// it had fewer than two.
	StdDevRTT time.Duration
	// MaxInFlight is the peak in-flight count seen by Acquire in the window
	// (calls), counting the acquiring call.
	MaxInFlight int
	// Released counts calls released in the window with any outcome,
	// Ignore included (calls), >= Samples.
	Released int
	// ReleasedRTT is the sum of the RTTs of the Released calls (>= 0):
	// divided by Duration, it is their mean count in flight (Little's law).
	ReleasedRTT time.Duration
	// BackSinceGrowth counts calls (>= 0) released with any outcome, in
	// this window or earlier ones, that started at or after the close of
	// the last window that raised the limit (every call, before the first
	// such window): how much of the limit has come back since it grew.
	BackSinceGrowth int
	// CutDrained is true when every call that was in flight at the last
	// window close that lowered the limit has been released (true when no
	// close has lowered it): from then on the calls in flight are ones the
	// lowered limit admitted. A call counts as one from before that close
	// by the start Release gets, so it is right for starts taken when the
	// call was admitted; a call released without a sample (a zero start)
	// never counts as back, and keeps it false until the next such close.
	// A call released at the very instant of that close may be counted on
	// either side of it.
	CutDrained bool
}

// window accumulates samples with atomic counters; no lock is taken per call.
// The goroutine that wins the compare-and-swap on start closes the window.
type window struct {
	// read by every call, written rarely (once per window, or when the
	// in-flight peak or the min RTT moves)
	start       atomic.Int64 // ns since Limiter.base
	minRTT      atomic.Int64 // ns, successes only; math.MaxInt64 when none
	maxInFlight atomic.Int64
	grewAt      atomic.Int64 // ns since Limiter.base: the last window close that raised the limit
	cutAt       atomic.Int64 // ns since Limiter.base: the last window close that lowered the limit
	_           [24]byte
	// written by every Release
	samples   atomic.Int64
	drops     atomic.Int64
	overloads atomic.Int64
	sumRTT    atomic.Int64  // ns, successes only
	sumSq     atomic.Uint64 // µs², successes only; modulo 2⁶⁴
	sumSqWrap atomic.Uint64 // how many times sumSq wrapped: the sum is sumSqWrap·2⁶⁴ + sumSq
	back      atomic.Int64  // released, started at or after grewAt; not drained
	// written by the Releases of calls that did not succeed
	ignored  atomic.Int64 // Ignore
	otherRTT atomic.Int64 // ns, every outcome but Success
	// written by the Releases of calls that started before cutAt
	old atomic.Int64 // calls in flight that started before cutAt
}

func (w *window) reset(now int64) {
	w.start.Store(now)
	w.cutAt.Store(math.MinInt64) // no call started before a cut
	w.minRTT.Store(math.MaxInt64)
}

// maxRTT caps every RTT a window takes (ns): 2³² − 1 µs, so that its
// square in µs² fits a uint64 and two million of them fit the int64 sums.
// The sum of squares counts its wraps (sumSqWrap), so no number of samples
// overflows it.
const maxRTT = int64(1<<32-1) * int64(time.Microsecond)

// add records one sample (o is Success, Drop or Overload; 0 <= rtt <=
// maxRTT, as Release passes it) and returns the window's sample count
// after it.
func (w *window) add(rtt int64, o Outcome) int64 {
	if o != Success {
		w.drops.Add(1)
		if o == Overload {
			w.overloads.Add(1)
		}
		w.otherRTT.Add(rtt)
	} else {
		w.sumRTT.Add(rtt)
		us := uint64((rtt + 500) / 1000) // rounded: truncated, it biased the variance low by about the mean
		if sq := us * us; w.sumSq.Add(sq) < sq {
			w.sumSqWrap.Add(1) // the add wrapped past 2⁶⁴
		}
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
// test whose 8 calls all ended at one synctest instant), and its StdDevRTT
// by about one RTT/√n. A sum of squares that wraps past 2⁶⁴ µs² at that
// instant (only past 180,000 successes of 10 s in a window, or with RTTs
// of an hour) can count its wrap in the next window, whose StdDevRTT is
// then too high by up to 71.6 min/√n.
func (w *window) drain(d time.Duration, inFlight int64) Window {
	ignored := w.ignored.Swap(0)
	otherRTT := w.otherRTT.Swap(0)
	samples := w.samples.Swap(0)
	drops := min(w.drops.Swap(0), samples)
	overloads := min(w.overloads.Swap(0), drops)
	sum := w.sumRTT.Swap(0)
	sq := float64(w.sumSq.Swap(0))
	sq += float64(w.sumSqWrap.Swap(0)) * 0x1p64 // after sumSq, which the adds after its Swap restart from 0
	minRTT := w.minRTT.Swap(math.MaxInt64)
	peak := max(w.maxInFlight.Swap(inFlight), inFlight)
	out := Window{Duration: d, Samples: int(samples), Drops: int(drops), Overloads: int(overloads), MaxInFlight: int(peak),
		Released: int(samples + ignored), ReleasedRTT: time.Duration(sum + otherRTT), BackSinceGrowth: int(w.back.Load()),
		CutDrained: w.old.Load() <= 0}
	if ok := samples - drops; ok > 0 && minRTT != math.MaxInt64 {
		out.MeanRTT = time.Duration(sum / ok)
		out.MinRTT = time.Duration(minRTT)
		if ok > 1 {
			// In µs: Σx² − n·mean², over n − 1; a race between the sums
			// (see above) can make it negative, which reads as 0.
			m := float64(sum/ok) / 1000
			v := (sq - float64(ok)*m*m) / float64(ok-1)
			out.StdDevRTT = time.Duration(math.Sqrt(max(v, 0)) * 1000)
		}
	}
	return out
}
