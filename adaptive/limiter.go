package adaptive

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// ErrShed is the error a caller reports when [Limiter.Acquire] refuses a
// slot: the limit of calls in flight was reached and the call was shed at
// once, without reaching the downstream.
var ErrShed = errors.New("floodgate: shed: concurrency limit reached")

// Outcome is how a call ended, as reported to [Limiter.Release].
type Outcome uint8

const (
	// Success: the downstream answered; the RTT is a latency sample.
	Success Outcome = iota
	// Drop: the call timed out: it held its slot until its deadline, so
	// its RTT is not a latency sample but a congestion signal.
	Drop
	// Ignore: the call says nothing about the downstream's load (the caller
	// cancelled; a permanent, transient or unknown error, whose RTT is not a
	// latency sample); only the slot is given back.
	Ignore
	// Overload: the downstream answered with an overload answer (HTTP 503
	// or 429, gRPC RESOURCE_EXHAUSTED) before the call's deadline. It counts
	// in [Window.Drops] and in [Window.Overloads], so that an algorithm can
	// tell the server's own load shedding from a timeout: [AIMD], [Vegas]
	// and [Gradient2] treat it as any drop; [Gradient], the default, ignores
	// it (a server that sheds is already doing the limiter's job, and a
	// share of 503s that our concurrency does not cause must not cut it).
	Overload
)

// Limiter caps the calls in flight at a limit that an [Algorithm] moves once
// per window. Create one with [New]; it is safe for concurrent use.
type Limiter struct {
	inFlight atomic.Int64
	_        [56]byte // keep the hot counter off the limit's cache line
	limit    atomic.Int64
	peak     atomic.Int64 // highest in-flight since the last TakePeakInFlight
	_        [48]byte

	win window

	base                 time.Time // monotonic origin of window times
	winMin, winMax       int64     // ns
	minSamples           int64
	minLimit, maxLimit   int64
	mu                   sync.Mutex       // guards alg; taken once per window by its closer
	events               chan limitChange // queued OnLimitChange calls; nil without one
	pending              atomic.Int64     // changes queued or being delivered
	dropped, panics      atomic.Int64
	alg                  Algorithm
	onChange             func(from, to int, w Window)
	lastMean, lastMinRTT atomic.Int64 // ns, from the last window with successes
	baseline             atomic.Int64 // ns, the algorithm's, if it is a Baseliner
	// ceiling is how far Acquire may raise the limit on demand (calls): the
	// algorithm's Ceiling if it is a Grower, else 0 (never).
	ceiling atomic.Int64
	// capLimit is the runtime cap of SetCap (calls), 0 for none. Only the
	// shed path and closing windows read it.
	capLimit atomic.Int64
}

// New returns a Limiter configured by cfg, or an error: naming the first
// field of cfg that is out of range; when cfg.Algorithm is a nil pointer,
// a type of yours around a nil algorithm of this package, or a zero value
// of one (&AIMD{}: make each with its constructor); or when it is a
// [Gradient], [Gradient2] or [Vegas] that another Limiter
// already runs (a successful New claims it for good, even if the Limiter
// is later dropped).
func New(cfg Config) (*Limiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	alg := cfg.Algorithm
	if alg == nil {
		alg, _ = NewGradient(GradientConfig{})
	}
	if v := reflect.ValueOf(alg); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("adaptive: Config.Algorithm is a nil %T", alg)
	}
	if c, ok := alg.(claimer); ok {
		if err := c.claim(); err != nil {
			return nil, fmt.Errorf("adaptive: Config.Algorithm (%T) %w", alg, err)
		}
	}
	l := &Limiter{
		base:       time.Now(),
		winMin:     int64(cfg.WindowMin),
		winMax:     int64(cfg.WindowMax),
		minSamples: int64(cfg.MinSamples),
		minLimit:   int64(cfg.MinLimit),
		maxLimit:   int64(cfg.MaxLimit),
		alg:        alg,
		onChange:   cfg.OnLimitChange,
	}
	if l.onChange != nil {
		l.events = make(chan limitChange, 64)
	}
	l.limit.Store(int64(cfg.InitialLimit))
	l.publishCeiling()
	l.win.reset(0)
	return l, nil
}

// Acquire asks for a slot. It returns true and counts the call in flight if
// fewer than Limit calls are in flight; otherwise, if the algorithm is a
// [Grower] whose ceiling is above the limit, it doubles the limit (at most
// to the ceiling) and admits the call; otherwise it returns false at once
// (the call is shed; report [ErrShed]). It never blocks and never queues.
// Every true must be paired with exactly one [Limiter.Release]; an unpaired
// Release would let one call more than the limit in (it is not detected).
func (l *Limiter) Acquire() bool {
	for {
		n := l.inFlight.Load()
		if lim := l.limit.Load(); n >= lim {
			// The shed path: only here are the ceiling and the cap read.
			c := l.ceiling.Load()
			if cp := l.capLimit.Load(); cp > 0 {
				c = min(c, cp)
			}
			if n >= c {
				return false
			}
			if l.limit.CompareAndSwap(lim, min(c, max(2*lim, n+1))) {
				l.clampToCap() // a SetCap may have lowered the cap since it was read
			}
			continue
		}
		if l.inFlight.CompareAndSwap(n, n+1) {
			raise(&l.win.maxInFlight, n+1)
			raise(&l.peak, n+1)
			return true
		}
	}
}

// Release gives back the slot of a call that started at start and took rtt,
// and records its outcome as a sample. start must come from [time.Now] (it
// carries the monotonic clock, so that Release reads no clock itself). If
// the sample closes the current window, Release runs the Algorithm and sets
// the new limit before it returns. A start before the Limiter was made
// (the zero time.Time included) or a negative rtt is no sample: the slot
// is given back and nothing else is recorded. An rtt above 2³² − 1 µs
// (about 71.6 minutes) is taken as that; a start in the future, or a long
// rtt, still delays the next window's close by as much (the rtt by at most
// 71.6 minutes).
func (l *Limiter) Release(start time.Time, rtt time.Duration, o Outcome) {
	inFlight := l.inFlight.Add(-1)
	began := int64(start.Sub(l.base))
	if began < 0 || rtt < 0 {
		return
	}
	if began < l.win.cutAt.Load() {
		l.win.old.Add(-1)
	}
	rtt = min(rtt, time.Duration(maxRTT))
	if began >= l.win.grewAt.Load() {
		l.win.back.Add(1)
	}
	if o == Ignore || o > Overload {
		l.win.ignored.Add(1)
		l.win.otherRTT.Add(int64(rtt))
		return
	}
	now := began + int64(rtt)
	n := l.win.add(int64(rtt), o)
	ws := l.win.start.Load()
	// A window needs MinSamples samples, or as many as the limit lets in:
	// at a limit of 1 and an RTT of 100 ms, 10 samples would take 1 s.
	if age := now - ws; age >= l.winMin && (n >= min(l.minSamples, l.limit.Load()) || age >= l.winMax) {
		l.closeWindow(ws, now, inFlight)
	}
}

func (l *Limiter) closeWindow(ws, now, inFlight int64) {
	if !l.win.start.CompareAndSwap(ws, now) {
		return // another goroutine closed it
	}
	l.update(time.Duration(now-ws), now, inFlight)
}

// update runs the algorithm on the window that just closed at now (ns
// since base) and queues a limit change for OnLimitChange.
func (l *Limiter) update(d time.Duration, now, inFlight int64) {
	l.mu.Lock()
	defer l.mu.Unlock() // also if a custom Algorithm panics
	w := l.win.drain(d, inFlight)
	if w.Samples == 0 {
		return
	}
	if w.MeanRTT > 0 {
		l.lastMean.Store(int64(w.MeanRTT))
		l.lastMinRTT.Store(int64(w.MinRTT))
	}
	cur := l.limit.Load()
	next := min(max(int64(l.alg.Update(int(cur), w)), l.minLimit), l.maxLimit)
	if cp := l.capLimit.Load(); cp > 0 {
		next = min(next, cp)
	}
	if _, ok := l.alg.(Grower); ok {
		// No growth between the new limit and its ceiling: an Acquire in
		// that gap would pair a cut with the old ceiling and undo it.
		l.ceiling.Store(0)
	}
	if next > cur {
		// Count the calls of the new limit that come back from now on.
		l.win.grewAt.Store(now)
		l.win.back.Store(0)
	} else if next < cur {
		// Count the calls admitted under the old limit until they are back.
		l.win.cutAt.Store(now)
		l.win.old.Store(l.inFlight.Load())
	}
	l.limit.Store(next)
	l.clampToCap() // a SetCap may have lowered the cap since it was read
	if b, ok := l.alg.(Baseliner); ok {
		l.baseline.Store(int64(b.Baseline()))
	}
	l.publishCeiling()
	if l.events != nil && next != cur {
		select {
		case l.events <- limitChange{int(cur), int(next), w}:
			if l.pending.Add(1) == 1 {
				go l.deliver()
			}
		default:
			l.dropped.Add(1)
		}
	}
}

// SetCap sets a runtime cap on the limit (calls in flight): from now on
// neither a closing window nor Acquire's growth on demand sets the limit
// above n, and a limit above n is lowered to n at once (calls in flight
// above it finish; no new call is admitted until fewer than n are in
// flight). The cap wins over MinLimit: under a cap below MinLimit the
// limit is at most n. n == 0 removes the cap; raising or removing it does not raise
// the limit, which grows from there as the algorithm (or Acquire, for a
// [Grower]) moves it. It returns an error if n is not in [0, 1<<20].
//
// SetCap is for a controller dividing a maximum among processes (package
// fleet's fleet-wide cap calls it once per sync); it takes no lock, and
// Acquire's admit path reads nothing more for it. OnLimitChange is not
// called for a limit SetCap lowers (it reports windows). A limit raised by an
// Acquire or a window concurrent with a lowering SetCap is brought under
// the cap by whichever of them ends last, before it returns.
func (l *Limiter) SetCap(n int) error {
	if n < 0 || n > maxLimitCeiling {
		return fmt.Errorf("adaptive: SetCap: cap must be in [0, %d] (0: none), got %d", maxLimitCeiling, n)
	}
	l.capLimit.Store(int64(n))
	l.clampToCap()
	return nil
}

// Cap returns the cap [Limiter.SetCap] set (calls in flight), 0 if none.
func (l *Limiter) Cap() int { return int(l.capLimit.Load()) }

// clampToCap lowers the limit to the cap if it is above it.
func (l *Limiter) clampToCap() {
	for {
		cp := l.capLimit.Load()
		lim := l.limit.Load()
		if cp == 0 || lim <= cp || l.limit.CompareAndSwap(lim, cp) {
			return
		}
	}
}

// publishCeiling stores the algorithm's ceiling, clamped to [0, MaxLimit],
// for Acquire.
func (l *Limiter) publishCeiling() {
	if g, ok := l.alg.(Grower); ok {
		l.ceiling.Store(min(max(int64(g.Ceiling()), 0), l.maxLimit))
	}
}

// limitChange is one queued OnLimitChange call.
type limitChange struct {
	from, to int
	w        Window
}

// deliver hands the queued limit changes to OnLimitChange, in order, on a
// goroutine of its own, and returns once the queue is empty. Only one runs
// at a time: a new one starts only when pending goes from 0 to 1, after
// the last one's final decrement. If the callback ends the goroutine
// (runtime.Goexit), a new deliver takes over the rest of the queue. The
// same design as breaker's OnStateChange delivery.
func (l *Limiter) deliver() {
	returned := false
	defer func() {
		if !returned && l.pending.Add(-1) > 0 { // the callback called runtime.Goexit
			go l.deliver()
		}
	}()
	for {
		l.call(<-l.events)
		if l.pending.Add(-1) == 0 {
			returned = true
			return
		}
	}
}

// call runs OnLimitChange for c, recovering and counting a panic.
func (l *Limiter) call(c limitChange) {
	defer func() {
		if recover() != nil {
			l.panics.Add(1)
		}
	}()
	l.onChange(c.from, c.to, c.w)
}

// CallbackPanics returns how many OnLimitChange calls panicked. Each panic
// was recovered and its value discarded.
func (l *Limiter) CallbackPanics() int64 { return l.panics.Load() }

// DroppedLimitChanges counts the limit changes not delivered to
// OnLimitChange because more than 64 were waiting for a slow callback.
func (l *Limiter) DroppedLimitChanges() int64 { return l.dropped.Load() }

// raise sets v to n if n is larger.
func raise(v *atomic.Int64, n int64) {
	for {
		m := v.Load()
		if n <= m || v.CompareAndSwap(m, n) {
			return
		}
	}
}

// Limit returns the current limit (calls in flight), in [MinLimit, MaxLimit],
// and at most the cap of [Limiter.SetCap] if one is set (even below
// MinLimit).
func (l *Limiter) Limit() int { return int(l.limit.Load()) }

// InFlight returns the number of calls holding a slot now.
func (l *Limiter) InFlight() int { return int(l.inFlight.Load()) }

// TakePeakInFlight returns the highest in-flight count (calls) reached since
// the previous TakePeakInFlight (or since New), and starts the next period
// at the current in-flight count. A metrics exporter calls it once per
// scrape; two readers would split the periods between them.
func (l *Limiter) TakePeakInFlight() int {
	p := l.peak.Swap(0)
	cur := l.inFlight.Load()
	raise(&l.peak, cur)
	return int(max(p, cur, 0))
}

// RecentRTT returns the mean RTT of the successes of the last window that had
// any, and 0 before the first such window.
func (l *Limiter) RecentRTT() time.Duration { return time.Duration(l.lastMean.Load()) }

// BaselineRTT returns the algorithm's RTT baseline (the no-load RTT it
// compares windows against; see [Baseliner]) as of the last window, or 0
// if the algorithm keeps none (AIMD, Fixed) or has seen no success yet.
func (l *Limiter) BaselineRTT() time.Duration { return time.Duration(l.baseline.Load()) }

// MinRTT returns the smallest RTT of a success in the last window that had
// any, and 0 before the first such window.
func (l *Limiter) MinRTT() time.Duration { return time.Duration(l.lastMinRTT.Load()) }
