// Package breaker is a circuit breaker that trips on failures and on slow
// calls, built on the two-step state machine of github.com/sony/gobreaker/v2.
//
// # Model
//
// Closed, calls pass and their outcomes are counted in a rolling window
// (Window long, rolled by Buckets). Once the window holds MinCalls calls,
// the breaker opens when failed calls reach FailureRatio of them, or when
// slow calls (those lasting SlowCall or more, failed or not) reach SlowRatio:
// a downstream that got slow without failing trips it too. Ignored calls
// (the caller cancelled, the limiter shed the call) do not count; a
// permanent error such as a 404 is reported as a success (the downstream
// answered).
//
// Open, [Breaker.Allow] refuses every call at once with [ErrOpen] for
// OpenFor after a trip from closed, and for twice its last open time (at
// most MaxOpenFor) after failed probes; [Breaker.RetryIn] says how long is
// left. Then the breaker is half-open: it admits Probes calls. It closes
// after Probes consecutive successes that are not slow, and opens again on
// the first failure or slow call. A probe that has not reported back within ProbeLease is given up, so
// a probe that hangs cannot keep the breaker half-open for ever.
//
// Cost on the closed path: two atomic loads to admit a call (the hold, then
// the state) and atomic adds to the window to count it; no lock, no clock
// read, no allocation. The state is mirrored from gobreaker in an atomic
// (updated under gobreaker's mutex at each transition), and while it reads
// closed, calls are admitted from the mirror and counted in the window
// without entering gobreaker; a failed or slow call that brings the window
// to a trip is then passed to gobreaker, whose ReadyToTrip reads the same
// window and opens it. An open call is refused at one clock read until the
// open time ends (gobreaker's own timer is OpenFor, the shortest; a
// report that arrives while open is stale and is not handed to it, which
// would run that timer); the first call after it and half-open calls go
// through gobreaker's two-step Allow and done (its mutex, two clock reads
// and a 48 B closure), which owns the move to half-open and the probe
// count.
//
// # Held open from outside
//
// [Breaker.Hold] holds the breaker open for a while whatever its own state
// (package fleet does, while the fleet's breaker is open): Allow refuses
// every call with ErrOpen, but for an allowance of probe calls, which go on
// to the breaker's own state machine. The state machine is not changed by a
// hold: State, Counts and OnStateChange report the breaker's own decisions.
//
// State changes reach OnStateChange from a goroutine of the breaker's own,
// never from a caller of Allow or Done: a callback that blocks or panics
// delays or costs no call (see [Config.OnStateChange]).
package breaker

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is returned by [Breaker.Allow] while the breaker is open, or
// half-open with all its probes out.
var ErrOpen = errors.New("floodgate: circuit breaker open")

// State is the breaker's state.
type State uint32

// The breaker's states.
const (
	Closed State = iota
	HalfOpen
	Open
)

// String returns "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half-open"
	case Open:
		return "open"
	}
	return "unknown"
}

// Outcome is how an admitted call ended, as reported to [Breaker.Done].
type Outcome uint8

const (
	// Success: the downstream answered (a permanent error such as 404 is a
	// success here: the downstream is healthy).
	Success Outcome = iota
	// Failure: a timeout, an overload answer or a transient error.
	Failure
	// Ignore: not the downstream's doing (the caller cancelled, the limiter
	// shed the call); neither counted nor used as a probe result.
	Ignore
)

// Outcome values handed to gobreaker; Settings.IsExcluded and IsSuccessful
// recognise them.
var (
	errFailed = errors.New("failed")
	errSlow   = errors.New("slow")
	errIgnore = errors.New("ignored")
)

// Breaker is a circuit breaker. Create one with [New]; it is safe for
// concurrent use.
type Breaker struct {
	name string
	cb   *gobreaker.TwoStepCircuitBreaker[struct{}]
	cfg  Config // as given to New, defaults filled

	// hold is the end of a hold (ns since base; 0: none), holdProbes the
	// calls it still lets through; see Hold
	hold       atomic.Int64
	holdProbes atomic.Int64

	// mirror is gobreaker's state and a generation bumped on every state
	// change, in one word (generation<<2 | State) so that a reader never
	// pairs one transition's state with another's generation
	mirror    atomic.Uint64
	openUntil atomic.Int64 // ns since base, while open
	base      time.Time
	win       *rolling

	slow                 time.Duration
	minCalls             int64
	failRatio, slowRatio float64
	openFor, maxOpenFor  time.Duration
	lease                time.Duration
	opened               time.Duration // the last open time; under gobreaker's mutex
	probesMu             sync.Mutex
	probes               []*probe // half-open probes of generation probesGen
	probesGen            uint64
	onChange             func(name string, from, to State)
	events               chan transition // queued for onChange; nil without one
	pending              atomic.Int32    // changes queued or being delivered
	droppedEvents        atomic.Int64
	callbackPanics       atomic.Int64
}

type transition struct{ from, to State }

// probe is a half-open call's lease; claimed ensures its gobreaker done
// func runs once, whether the probe reports back or its lease is reclaimed.
type probe struct {
	done    func(error)
	expires int64 // ns since base
	claimed atomic.Bool
}

// Permit is a call's admission, returned by [Breaker.Allow] and handed back,
// once, to [Breaker.Done].
type Permit struct {
	done   func(error) // gobreaker's, for open and half-open admissions
	probe  *probe
	gen    uint64
	closed bool // admitted from the closed mirror, without gobreaker
}

// New returns a Breaker named name configured by cfg, or an error naming the
// first field of cfg that is out of range.
func New(name string, cfg Config) (*Breaker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Breaker{
		name:       name,
		cfg:        cfg,
		base:       time.Now(),
		win:        newRolling(cfg.Buckets, int64(cfg.Window)/int64(cfg.Buckets)),
		slow:       cfg.SlowCall,
		minCalls:   int64(cfg.MinCalls),
		failRatio:  cfg.FailureRatio,
		slowRatio:  cfg.SlowRatio,
		openFor:    cfg.OpenFor,
		maxOpenFor: cfg.MaxOpenFor,
		lease:      cfg.ProbeLease,
		onChange:   cfg.OnStateChange,
	}
	if b.onChange != nil {
		b.events = make(chan transition, queuedChanges)
	}
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:          name,
		MaxRequests:   uint32(cfg.Probes),
		Timeout:       cfg.OpenFor, // the shortest open; allow and State hold a longer one
		ReadyToTrip:   b.readyToTrip,
		OnStateChange: b.changed,
		IsSuccessful:  func(err error) bool { return err == nil },
		IsExcluded:    func(err error) bool { return err == errIgnore },
	})
	return b, nil
}

// snapshot returns the mirrored state and its generation, read together.
func (b *Breaker) snapshot() (State, uint64) {
	m := b.mirror.Load()
	return State(m & 3), m >> 2
}

// gen returns the current generation.
func (b *Breaker) gen() uint64 { return b.mirror.Load() >> 2 }

// state returns the mirrored state.
func (b *Breaker) state() State { return State(b.mirror.Load() & 3) }

// Allow asks to let a call through. It returns a Permit to hand to
// [Breaker.Done] when the call ends, or [ErrOpen] at once if the breaker is
// open, or half-open with every probe out and none past its lease, or held
// open ([Breaker.Hold]) with its probe allowance spent.
func (b *Breaker) Allow() (Permit, error) {
	if h := b.hold.Load(); h != 0 {
		return b.allowHeld(h)
	}
	return b.allow()
}

// allowHeld is Allow under a hold ending at h: a call past its end, or one
// of its probe allowance, goes on to allow; a probe that allow refuses
// gives its place back.
func (b *Breaker) allowHeld(h int64) (Permit, error) {
	if int64(time.Since(b.base)) >= h {
		b.hold.CompareAndSwap(h, 0)
		return b.allow()
	}
	for { // take one of the allowance, never below 0
		n := b.holdProbes.Load()
		if n <= 0 {
			return Permit{}, ErrOpen
		}
		if b.holdProbes.CompareAndSwap(n, n-1) {
			break
		}
	}
	p, err := b.allow()
	if err != nil {
		b.holdProbes.Add(1)
	}
	return p, err
}

// allow is Allow without the hold.
func (b *Breaker) allow() (Permit, error) {
	// a permit taken as the breaker leaves closed carries the closed
	// generation, and Done then does not count it
	st, gen := b.snapshot()
	if st == Closed {
		return Permit{gen: gen, closed: true}, nil
	}
	if st == Open && int64(time.Since(b.base)) <= b.openUntil.Load() {
		return Permit{}, ErrOpen // gobreaker's timer (OpenFor) may be shorter
	}
	done, err := b.cb.Allow()
	if err != nil && errors.Is(err, gobreaker.ErrTooManyRequests) && b.reclaimProbe() {
		done, err = b.cb.Allow()
	}
	var p Permit
	if err == nil {
		st, gen := b.snapshot()
		p = Permit{done: done, gen: gen}
		if st == HalfOpen {
			p.probe = b.leaseProbe(done, p.gen)
		}
	}
	if err != nil {
		return Permit{}, ErrOpen
	}
	return p, nil
}

// Done reports how the call admitted by p ended: its outcome and its
// duration rtt, which ended at end (a time from [time.Now], so that Done
// reads no clock; an end before the breaker was created, such as a zero
// time.Time, is not counted). A call lasting SlowCall or more counts as
// slow. Done must be called once per Permit; a zero Permit is ignored.
func (b *Breaker) Done(p Permit, o Outcome, rtt time.Duration, end time.Time) {
	if p.closed {
		b.doneClosed(p, o, rtt, end)
		return
	}
	if p.done == nil {
		return
	}
	if p.probe != nil && !p.probe.claimed.CompareAndSwap(false, true) {
		return // the lease ran out and the probe was given up
	}
	slow := rtt >= b.slow
	var verdict error
	switch {
	case o == Ignore:
		verdict = errIgnore
	case o == Failure:
		verdict = errFailed
	case slow:
		verdict = errSlow
	}
	if o != Ignore && p.gen == b.gen() {
		b.win.add(int64(end.Sub(b.base)), o == Failure, slow)
	}
	if b.state() == Open {
		// No permit of an open generation exists, so this one is stale; and
		// gobreaker, handed it, would run its own timer (OpenFor) first and
		// cut a longer open short.
		return
	}
	p.done(verdict)
}

// doneClosed counts a call admitted while closed, and when a failed or slow
// call brings the window to a trip, hands gobreaker a failure so that it
// opens.
func (b *Breaker) doneClosed(p Permit, o Outcome, rtt time.Duration, end time.Time) {
	if o != Ignore && p.gen == b.gen() {
		slow := rtt >= b.slow
		b.win.add(int64(end.Sub(b.base)), o == Failure, slow)
		if (o == Failure || slow) && b.tripping() {
			b.trip(p.gen)
		}
	}
}

// trip reports one failure to gobreaker, still closed in generation gen, so
// that it asks readyToTrip and opens. If the breaker has left gen (another
// call tripped it), the admission is handed back unused.
func (b *Breaker) trip(gen uint64) {
	if b.state() != Closed {
		return // open already (and gobreaker's Allow would run its timer)
	}
	done, err := b.cb.Allow()
	if err != nil {
		return // open already
	}
	if b.gen() != gen {
		done(errIgnore)
		return
	}
	done(errFailed) // gobreaker ignores it if the generation moved on since
}

// readyToTrip is gobreaker's ReadyToTrip: it runs under gobreaker's mutex
// after a failure or slow call in the closed state, and asks the window.
func (b *Breaker) readyToTrip(gobreaker.Counts) bool { return b.tripping() }

// tripping reports whether the window's counts call for opening. The ratios
// are compared as they are: failed/calls is correctly rounded in float64, so
// 7 failures of 10 calls reach a FailureRatio of 0.7 and 6 do not.
func (b *Breaker) tripping() bool {
	calls, failed, slow := b.win.sum()
	if calls < b.minCalls {
		return false
	}
	c := float64(calls)
	return float64(failed)/c >= b.failRatio || float64(slow)/c >= b.slowRatio
}

// changed runs under gobreaker's mutex on every state change: it only
// updates atomics and queues the change for the user's callback, starting
// the goroutine that delivers it if the queue was empty.
func (b *Breaker) changed(_ string, from, to gobreaker.State) {
	f, t := fromGobreaker(from), fromGobreaker(to)
	if t == Open {
		// OpenFor after a trip from closed; after failed probes, twice the
		// last open time, at most MaxOpenFor.
		if f == HalfOpen {
			b.opened = min(2*b.opened, b.maxOpenFor)
		} else {
			b.opened = b.openFor
		}
		b.openUntil.Store(int64(time.Since(b.base) + b.opened))
	}
	if t == Closed {
		b.win.reset()
	}
	b.mirror.Store((b.gen()+1)<<2 | uint64(t)) // under gobreaker's mutex: one writer
	if b.events != nil {
		select {
		case b.events <- transition{f, t}:
			if b.pending.Add(1) == 1 {
				go b.deliver()
			}
		default:
			b.droppedEvents.Add(1)
		}
	}
}

// queuedChanges is how many state changes may wait for the callback.
const queuedChanges = 1024

// deliver hands the queued state changes to the user's callback, in order,
// and returns once the queue is empty. Only one deliver runs at a time: a
// new one starts only when pending goes from 0 to 1, after the last one's
// final decrement. If the callback ends the goroutine (runtime.Goexit), a
// new deliver takes over the rest of the queue.
func (b *Breaker) deliver() {
	returned := false
	defer func() {
		if !returned && b.pending.Add(-1) > 0 { // the callback called runtime.Goexit
			go b.deliver()
		}
	}()
	for {
		b.call(<-b.events)
		if b.pending.Add(-1) == 0 {
			returned = true
			return
		}
	}
}

// call runs the callback for ev, recovering and counting a panic.
func (b *Breaker) call(ev transition) {
	defer func() {
		if recover() != nil {
			b.callbackPanics.Add(1)
		}
	}()
	b.onChange(b.name, ev.from, ev.to)
}

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateOpen:
		return Open
	case gobreaker.StateHalfOpen:
		return HalfOpen
	}
	return Closed
}

// leaseProbe records a half-open probe so that its place can be reclaimed
// once its lease ends. Only half-open calls get here.
func (b *Breaker) leaseProbe(done func(error), gen uint64) *probe {
	p := &probe{done: done, expires: int64(time.Since(b.base) + b.lease)}
	b.probesMu.Lock()
	if b.probesGen != gen {
		b.probes, b.probesGen = b.probes[:0], gen
	}
	b.probes = append(b.probes, p)
	b.probesMu.Unlock()
	return p
}

// reclaimProbe gives up the oldest probe of the current half-open period
// whose lease has ended, freeing its place. It reports whether it did.
func (b *Breaker) reclaimProbe() bool {
	now := int64(time.Since(b.base))
	var expired *probe
	b.probesMu.Lock()
	if b.probesGen == b.gen() {
		for i, p := range b.probes {
			if p.expires <= now && p.claimed.CompareAndSwap(false, true) {
				expired = p
				b.probes = append(b.probes[:i], b.probes[i+1:]...)
				break
			}
		}
	}
	b.probesMu.Unlock()
	if expired == nil {
		return false
	}
	expired.done(errIgnore) // outside probesMu: gobreaker may call changed
	return true
}

// State returns the breaker's state now. It is safe to call from the
// OnStateChange callback.
func (b *Breaker) State() State {
	if b.state() == Open && int64(time.Since(b.base)) <= b.openUntil.Load() {
		return Open // gobreaker's timer (OpenFor) may be shorter than this open time
	}
	return fromGobreaker(b.cb.State()) // moves open to half-open once its timer has passed
}

// OpenAt reports whether the breaker is open at t (a time from [time.Now]),
// or held open then with its probe allowance spent, without taking any lock
// or reading the clock: the retry loop asks it before it sleeps.
func (b *Breaker) OpenAt(t time.Time) bool {
	at := int64(t.Sub(b.base))
	if h := b.hold.Load(); h != 0 && at < h && b.holdProbes.Load() <= 0 {
		return true
	}
	return b.state() == Open && at <= b.openUntil.Load()
}

// RetryIn returns how long until the breaker lets a call through again: the
// rest of the open time while open, the shortest probe lease left while half-open
// with every probe out, and 0 otherwise; while held open with its probe
// allowance spent, at least the rest of the hold.
func (b *Breaker) RetryIn() time.Duration {
	now := int64(time.Since(b.base))
	if h := b.hold.Load(); h > now && b.holdProbes.Load() <= 0 {
		return max(time.Duration(h-now), b.retryIn(now))
	}
	return b.retryIn(now)
}

// retryIn is RetryIn without the hold.
func (b *Breaker) retryIn(now int64) time.Duration {
	switch b.state() {
	case Open:
		return time.Duration(max(b.openUntil.Load()-now, 0))
	case HalfOpen:
		// The probes of this half-open period that have not reported: with
		// fewer than Probes out, a call is let through now.
		b.probesMu.Lock()
		defer b.probesMu.Unlock()
		if b.probesGen != b.gen() {
			return 0 // none leased yet in this period
		}
		out, left := 0, int64(-1)
		for _, p := range b.probes {
			if p.claimed.Load() {
				continue
			}
			out++
			if d := p.expires - now; left < 0 || d < left {
				left = d
			}
		}
		if out < b.cfg.Probes {
			return 0
		}
		return time.Duration(max(left, 0))
	}
	return 0
}

// Counts are the calls in the breaker's rolling window.
type Counts struct {
	Calls, Failures, Slow int64 // calls; Failures and Slow may overlap
}

// Counts returns the calls in the rolling window now (zero right after the
// breaker closes). It takes no lock.
func (b *Breaker) Counts() Counts {
	c, f, s := b.win.sum()
	return Counts{Calls: c, Failures: f, Slow: s}
}

// ResetCounts forgets the calls in the rolling window, as the breaker does
// when it closes; its state is unchanged (a window that filled up again
// trips it as before). Package fleet calls it when the fleet's breaker
// closes or goes half-open, so that the counts it publishes start afresh.
// It takes no lock.
func (b *Breaker) ResetCounts() { b.win.reset() }

// Config returns the breaker's configuration as [New] took it, its
// defaults filled in.
func (b *Breaker) Config() Config { return b.cfg }

// MaxHold is the longest hold [Breaker.Hold] sets.
const MaxHold = time.Hour

// Hold holds the breaker open for d from now, whatever its own state:
// [Breaker.Allow] refuses every call at once with [ErrOpen], except the
// first probes calls of the hold, which go on to the breaker as if it were
// not held (one that the breaker's own state refuses gives its place back,
// so the allowance goes to calls that reach the downstream). [Breaker.OpenAt]
// and [Breaker.RetryIn] count the hold once its probes are spent. The
// breaker's own state machine goes on unchanged: State, Counts and
// OnStateChange do not see the hold.
//
// A call to Hold replaces the hold before it (its end and its allowance).
// d is capped at [MaxHold]; d ≤ 0 ends a hold, as [Breaker.Release] does;
// probes < 0 counts as 0. The hold ends by itself after d (the first Allow
// after that sees it gone), so a holder that stops renewing it cannot keep
// the breaker open. Cost: nothing on the closed path but one atomic load
// while no hold is set; while one is, Allow reads the clock.
func (b *Breaker) Hold(d time.Duration, probes int) {
	if d <= 0 {
		b.Release()
		return
	}
	d = min(d, MaxHold)
	b.holdProbes.Store(int64(max(probes, 0)))
	b.hold.Store(int64(time.Since(b.base) + d)) // ≥ 1: d > 0, and time.Since(base) ≥ 0
}

// Release ends a hold at once; it does nothing without one.
func (b *Breaker) Release() {
	b.hold.Store(0)
	b.holdProbes.Store(0)
}

// Held reports whether a hold set by [Breaker.Hold] is in force now (its
// probe allowance spent or not).
func (b *Breaker) Held() bool {
	h := b.hold.Load()
	return h != 0 && int64(time.Since(b.base)) < h
}

// DroppedStateChanges returns how many state changes were not delivered to
// OnStateChange because 1,024 changes were already waiting for it.
func (b *Breaker) DroppedStateChanges() int64 { return b.droppedEvents.Load() }

// CallbackPanics returns how many OnStateChange calls panicked. Each panic
// is recovered and its value discarded; the breaker and the delivery of
// later changes go on.
func (b *Breaker) CallbackPanics() int64 { return b.callbackPanics.Load() }

// Name returns the name given to [New].
func (b *Breaker) Name() string { return b.name }
