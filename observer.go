package floodgate

import (
	"context"
	"log/slog"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
)

// Outcome is how a user call through [Gate.Guard] ended, as reported to an
// [Observer]. Its String is the label value the metrics package exports.
type Outcome uint8

const (
	// OutcomeSuccess: an attempt succeeded.
	OutcomeSuccess Outcome = iota
	// OutcomeFailure: fn's error was returned (not retried, or the
	// attempts were used up, or the server's hint exceeded MaxDelay), fn
	// panicked or called runtime.Goexit, or an argument was nil.
	OutcomeFailure
	// OutcomeShed: an attempt was shed by the concurrency limiter ([ErrShed]).
	OutcomeShed
	// OutcomeOpen: the circuit breaker refused an attempt ([ErrOpen]).
	OutcomeOpen
	// OutcomeBudgetExhausted: a retry was due but the budget was empty
	// ([ErrBudgetExhausted]).
	OutcomeBudgetExhausted
	// OutcomeDeadline: the call's deadline (the retry policy's Timeout or
	// the caller's) ended it: it passed before an attempt, the last attempt
	// ran into it, or the next wait would have outlasted it ([ErrDeadline]).
	OutcomeDeadline
	// OutcomeCanceled: the caller cancelled its context.
	OutcomeCanceled

	numOutcomes = iota
)

// Outcomes lists every Outcome, in order, for exporters that pre-create a
// series per outcome.
var Outcomes = [numOutcomes]Outcome{OutcomeSuccess, OutcomeFailure, OutcomeShed,
	OutcomeOpen, OutcomeBudgetExhausted, OutcomeDeadline, OutcomeCanceled}

var outcomeNames = [numOutcomes]string{"success", "failure", "shed", "open",
	"budget_exhausted", "deadline", "canceled"}

// String returns the outcome in snake case ("success", "budget_exhausted",
// ...), or "unknown".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// outcomeOf maps the reason Guard gives for ending a call to its Outcome.
func outcomeOf(reason error) Outcome {
	switch reason {
	case ErrShed:
		return OutcomeShed
	case ErrOpen:
		return OutcomeOpen
	case ErrBudgetExhausted:
		return OutcomeBudgetExhausted
	case ErrDeadline, context.DeadlineExceeded:
		return OutcomeDeadline
	case context.Canceled:
		return OutcomeCanceled
	}
	return OutcomeFailure
}

// Observer receives a gate's events, for metrics. Install one with
// [WithObserver]; the metrics package provides a Prometheus one.
//
// Attempt and Call run on the calling goroutine, on every call, from many
// goroutines at once: they must be safe for concurrent use, must not block,
// and should not allocate. StateChange runs as the breaker's OnStateChange
// does (outside its locks, in order, never concurrently).
type Observer interface {
	// Attach is called once by [New], with the new gate, before New
	// returns it. An error fails New (for example, an exporter that
	// already has a gate of that name).
	Attach(g *Gate) error
	// Attempt is called after each attempt that reached the downstream
	// (fn was called): retry is false for a call's first attempt; rtt is
	// the attempt's duration.
	Attempt(retry bool, rtt time.Duration)
	// Call is called exactly once per Guard call, as it returns: its
	// outcome, the attempts that reached the downstream (0 when the first
	// one was shed or refused), and d, from the start of the first attempt
	// to the return (0 when attempts is 0). A call that does not return
	// (fn, a classifier or a callback panicked, or fn called
	// runtime.Goexit) is reported as it unwinds, as OutcomeFailure.
	Call(o Outcome, attempts int, d time.Duration)
	// StateChange is called after the breaker moves from one state to
	// another.
	StateChange(from, to breaker.State)
}

// WithObserver installs o to receive the gate's events (one Observer per
// gate: o's Attach may refuse a second gate). nil removes it. Without an
// observer Guard makes no observer calls and reads no extra clock.
func WithObserver(o Observer) Option { return func(c *config) { c.observer = o } }

// WithLogger makes the gate log its state changes to l, off the per-call
// path (nil, the default, logs nothing). Every record has the attribute
// gate (the gate's name). Events:
//   - "floodgate: breaker state changed", attributes from and to (closed,
//     half-open, open): level Warn when to is open, Info otherwise. Logged
//     from the breaker's state-change dispatch (see breaker.Config.OnStateChange).
//   - "floodgate: limit changed", attributes from and to (calls), rtt_mean
//     and rtt_min (durations of the window's successes), samples, drops
//     and overloads (calls in the window; overloads are the drops that were
//     503/429-like answers): level Info when the limit fell, Debug when it
//     rose. Logged at most once per limiter window (adaptive.Config
//     WindowMin apart at the closest), from the limiter's change delivery
//     (see adaptive.Config.OnLimitChange).
//
// User callbacks set in breaker.Config.OnStateChange and
// adaptive.Config.OnLimitChange still run, before the log record; the
// record is written also when the callback panics.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// hooks chains the breaker and limiter callbacks of cfg with the observer's
// and the logger's, for the gate named name.
func (cfg *config) hooks(name string) {
	obs, logger := cfg.observer, cfg.logger
	if obs != nil || logger != nil {
		user := cfg.breaker.OnStateChange
		cfg.breaker.OnStateChange = func(n string, from, to breaker.State) {
			defer func() { // also if the user's callback panics
				if obs != nil {
					obs.StateChange(from, to)
				}
				if logger != nil {
					level := slog.LevelInfo
					if to == breaker.Open {
						level = slog.LevelWarn
					}
					logger.LogAttrs(context.Background(), level, "floodgate: breaker state changed",
						slog.String("gate", name), slog.String("from", from.String()), slog.String("to", to.String()))
				}
			}()
			if user != nil {
				user(n, from, to)
			}
		}
	}
	if logger != nil {
		user := cfg.limiter.OnLimitChange
		cfg.limiter.OnLimitChange = func(from, to int, w adaptive.Window) {
			defer func() { // also if the user's callback panics
				level := slog.LevelDebug
				if to < from {
					level = slog.LevelInfo
				}
				logger.LogAttrs(context.Background(), level, "floodgate: limit changed",
					slog.String("gate", name), slog.Int("from", from), slog.Int("to", to),
					slog.Duration("rtt_mean", w.MeanRTT), slog.Duration("rtt_min", w.MinRTT),
					slog.Int("samples", w.Samples), slog.Int("drops", w.Drops), slog.Int("overloads", w.Overloads))
			}()
			if user != nil {
				user(from, to, w)
			}
		}
	}
}
