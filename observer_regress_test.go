package floodgate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// callRecorder is an Observer that keeps every Call it is told about.
type callRecorder struct {
	mu    sync.Mutex
	calls []observedCall
}

type observedCall struct {
	o        Outcome
	attempts int
	d        time.Duration
}

func (r *callRecorder) Attach(*Gate) error             { return nil }
func (r *callRecorder) Attempt(bool, time.Duration)    {}
func (r *callRecorder) StateChange(_, _ breaker.State) {}
func (r *callRecorder) Call(o Outcome, attempts int, d time.Duration) {
	r.mu.Lock()
	r.calls = append(r.calls, observedCall{o, attempts, d})
	r.mu.Unlock()
}

// Every way Guard returns is reported to the observer once, with the
// outcome the docs give it (Observer.Call, Outcome*), the attempts that
// reached the downstream, and a duration that is 0 for calls refused
// before any attempt and includes the backoff otherwise.
func TestOutcomeOfEveryReturnPath(t *testing.T) {
	maxWait := func(k int64) int64 { return k - 1 } // the backoff's full wait: BaseDelay·2ⁿ
	for _, tc := range []struct {
		name string
		opts []Option
		// run makes one Guard call on g; it may start goroutines (in the
		// bubble) to act on the gate while the call is in its backoff.
		run          func(t *testing.T, g *Gate) error
		want         Outcome
		wantAttempts int
		wantDur      time.Duration
	}{
		{
			name: "success",
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error { time.Sleep(10 * time.Millisecond); return nil })
			},
			want: OutcomeSuccess, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "permanent error",
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Permanent(errUpstream)
				})
			},
			want: OutcomeFailure, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "caller cancels during the first attempt",
			run: func(t *testing.T, g *Gate) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				time.AfterFunc(10*time.Millisecond, cancel)
				return g.Guard(ctx, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			},
			want: OutcomeCanceled, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			// First attempt: transient error at 10 ms, backoff 100 ms; the
			// caller cancels 10 ms into the retry.
			name: "caller cancels during a retry",
			opts: []Option{WithRetry(retry.Config{Rand: maxWait})},
			run: func(t *testing.T, g *Gate) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				n := 0
				return g.Guard(ctx, func(ctx context.Context) error {
					if n++; n == 1 {
						time.Sleep(10 * time.Millisecond)
						return retry.Transient(errUpstream)
					}
					time.AfterFunc(10*time.Millisecond, cancel)
					<-ctx.Done()
					return ctx.Err()
				})
			},
			want: OutcomeCanceled, wantAttempts: 2, wantDur: 120 * time.Millisecond,
		},
		{
			name: "caller cancels during the backoff",
			opts: []Option{WithRetry(retry.Config{Rand: maxWait})},
			run: func(t *testing.T, g *Gate) error {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				time.AfterFunc(50*time.Millisecond, cancel)
				return g.Guard(ctx, func(ctx context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Transient(errUpstream)
				})
			},
			want: OutcomeCanceled, wantAttempts: 1, wantDur: 50 * time.Millisecond,
		},
		{
			name: "deadline already passed",
			run: func(t *testing.T, g *Gate) error {
				ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
				defer cancel()
				return g.Guard(ctx, func(context.Context) error { t.Error("fn called"); return nil })
			},
			want: OutcomeDeadline, wantAttempts: 0, wantDur: 0,
		},
		{
			name: "context cancelled before the call",
			run: func(t *testing.T, g *Gate) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return g.Guard(ctx, func(context.Context) error { t.Error("fn called"); return nil })
			},
			want: OutcomeCanceled, wantAttempts: 0, wantDur: 0,
		},
		{
			name: "non-idempotent call runs into the caller's deadline",
			run: func(t *testing.T, g *Gate) error {
				ctx, cancel := context.WithTimeout(retry.NonIdempotent(context.Background()), 10*time.Millisecond)
				defer cancel()
				return g.Guard(ctx, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
			},
			want: OutcomeDeadline, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "next wait would outlast the deadline",
			opts: []Option{WithRetry(retry.Config{Rand: maxWait, Timeout: 50 * time.Millisecond})},
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Transient(errUpstream)
				})
			},
			want: OutcomeDeadline, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "shed on the first attempt",
			opts: []Option{WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1})},
			run: func(t *testing.T, g *Gate) error {
				g.Limiter().Acquire()
				defer g.Limiter().Release(time.Now(), 0, adaptive.Ignore)
				return g.Guard(context.Background(), ok)
			},
			want: OutcomeShed, wantAttempts: 0, wantDur: 0,
		},
		{
			// The only slot is taken by someone else during the backoff.
			name: "shed on a retry",
			opts: []Option{WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}),
				WithRetry(retry.Config{Rand: maxWait})},
			run: func(t *testing.T, g *Gate) error {
				time.AfterFunc(50*time.Millisecond, func() { g.Limiter().Acquire() })
				defer func() { g.Limiter().Release(time.Now(), 0, adaptive.Ignore) }()
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Transient(errUpstream)
				})
			},
			want: OutcomeShed, wantAttempts: 1, wantDur: 110 * time.Millisecond,
		},
		{
			name: "breaker opens on the first attempt's failure",
			opts: []Option{WithBreaker(breaker.Config{MinCalls: 1})},
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Transient(errUpstream)
				})
			},
			want: OutcomeOpen, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "budget exhausted",
			opts: []Option{WithRetry(retry.Config{Budget: emptyBudget()})},
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Transient(errUpstream)
				})
			},
			want: OutcomeBudgetExhausted, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "server's hint longer than MaxDelay",
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Overload(errUpstream, time.Hour)
				})
			},
			want: OutcomeFailure, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
		{
			name: "attempts used up",
			opts: []Option{WithRetry(retry.Config{Rand: func(int64) int64 { return 0 }})},
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return retry.Transient(errUpstream)
				})
			},
			want: OutcomeFailure, wantAttempts: 3, wantDur: 30 * time.Millisecond,
		},
		{
			name: "custom classifier's unknown class",
			opts: []Option{WithRetry(retry.Config{Classify: func(error) retry.Class { return 200 }})},
			run: func(t *testing.T, g *Gate) error {
				return g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return errUpstream
				})
			},
			want: OutcomeFailure, wantAttempts: 1, wantDur: 10 * time.Millisecond,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &callRecorder{}
				g := mustGate(t, append(tc.opts, WithObserver(rec))...)
				err := tc.run(t, g)
				if len(rec.calls) != 1 {
					t.Fatalf("observer told of %d calls %+v (err %v), want 1", len(rec.calls), rec.calls, err)
				}
				got := rec.calls[0]
				if got.o != tc.want || got.attempts != tc.wantAttempts || got.d != tc.wantDur {
					t.Errorf("observed outcome %v, %d attempts, %v; want %v, %d attempts, %v (Guard returned %v)",
						got.o, got.attempts, got.d, tc.want, tc.wantAttempts, tc.wantDur, err)
				}
			})
		})
	}
}

func emptyBudget() *retry.Budget {
	b, _ := retry.NewBudget(retry.BudgetConfig{})
	for b.Withdraw() {
	}
	return b
}

// bump is an Algorithm that raises the limit at every window, so that every
// window that closes calls OnLimitChange.
type bump struct{}

func (bump) Update(limit int, _ adaptive.Window) int { return limit + 1 }

// A panic in the limiter's limit-change callback (the user's OnLimitChange,
// or the handler of WithLogger's logger) used to go up through Guard, and
// the attempt's breaker permit had to be handed back regardless: otherwise
// a half-open probe whose release closed a window was never reported, and
// the breaker refused every call until the probe's lease ran out. Now the
// callback runs on the limiter's own goroutine: the panic never reaches
// Guard, is counted, and the log record is still written.
func TestLimitCallbackPanicLeaksBreakerPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		var logged atomic.Int32
		g := mustGate(t,
			WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Second, Probes: 1, ProbeLease: 10 * time.Second}),
			WithLimiter(adaptive.Config{Algorithm: bump{}, MinSamples: 1, WindowMin: time.Millisecond, WindowMax: time.Millisecond,
				OnLimitChange: func(int, int, adaptive.Window) {
					if armed.Load() {
						panic("limit callback")
					}
				}}),
			WithLogger(slog.New(countHandler{&logged})),
			WithRetry(retry.Config{MaxAttempts: 1}))
		ctx := context.Background()
		_ = g.Guard(ctx, func(context.Context) error { return retry.Transient(errUpstream) }) // trips it
		if s := g.Breaker().State(); s != breaker.Open {
			t.Fatalf("breaker %v after a failure with MinCalls 1, want open", s)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		armed.Store(true)
		logged.Store(0)
		if err := g.Guard(ctx, func(context.Context) error { time.Sleep(2 * time.Millisecond); return nil }); err != nil { // the probe
			t.Errorf("the probe: %v, want nil", err)
		}
		synctest.Wait()
		armed.Store(false)
		if n := g.Limiter().CallbackPanics(); n != 1 {
			t.Errorf("CallbackPanics %d, want 1", n)
		}
		if n := logged.Load(); n == 0 {
			t.Error("no log record for the limit change whose callback panicked")
		}
		if n := g.Limiter().InFlight(); n != 0 {
			t.Errorf("%d limiter slots held after the panic", n)
		}
		err := g.Guard(ctx, ok)
		if err != nil {
			t.Errorf("a call right after the successful probe: %v (breaker %v); want it admitted", err, g.Breaker().State())
		}
	})
}

// countHandler is a slog.Handler that counts the records it gets.
type countHandler struct{ n *atomic.Int32 }

func (h countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h countHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h countHandler) WithGroup(string) slog.Handler             { return h }

// panicOnHalfOpen is an Observer whose StateChange panics once, on the
// move to half-open.
type panicOnHalfOpen struct {
	callRecorder
	once   bool
	states []breaker.State
}

func (p *panicOnHalfOpen) StateChange(_, to breaker.State) {
	p.states = append(p.states, to)
	if to == breaker.HalfOpen && !p.once {
		p.once = true
		panic("observer")
	}
}

// An observer's StateChange (or the logger's handler, or the user's
// OnStateChange) that panics once must not wedge the gate: after the
// panic, the breaker still moves through half-open to closed, and the
// later state changes still reach the observer.
func TestStateChangePanicWedgesBreaker(t *testing.T) {
	for _, probes := range []int{1, 3} {
		t.Run(fmt.Sprintf("probes=%d", probes), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &panicOnHalfOpen{}
				g := mustGate(t, WithObserver(obs),
					WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Second, Probes: probes, ProbeLease: 10 * time.Second}),
					WithRetry(retry.Config{MaxAttempts: 1}))
				ctx := context.Background()
				_ = g.Guard(ctx, func(context.Context) error { return retry.Transient(errUpstream) }) // trips it
				time.Sleep(time.Second + time.Millisecond)
				func() {
					defer func() { _ = recover() }()
					_ = g.Guard(ctx, ok) // half-open: the observer panics
				}()
				// Long after every lease and open period, healthy calls must get through.
				time.Sleep(time.Minute)
				var err error
				for range probes + 1 {
					if err = g.Guard(ctx, ok); err != nil {
						break
					}
				}
				if err != nil || g.Breaker().State() != breaker.Closed {
					t.Errorf("a minute after one observer panic: Guard = %v, breaker %v, observer saw %v; want nil, closed",
						err, g.Breaker().State(), obs.states)
				}
			})
		})
	}
}

// errors.Is must keep working on what Guard returns for a cancellation
// during a retry (guards the outcome fix above from changing the error).
func TestCanceledRetryError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t, WithRetry(retry.Config{Rand: func(k int64) int64 { return k - 1 }}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		err := g.Guard(ctx, func(ctx context.Context) error {
			if n++; n == 1 {
				return retry.Transient(errUpstream)
			}
			cancel()
			return ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled in its chain", err)
		}
	})
}

// refusing is an Observer whose Attach fails.
type refusing struct{ callRecorder }

var errRefused = errors.New("observer refuses the gate")

func (*refusing) Attach(*Gate) error { return errRefused }

// Option misuse: nil observer and logger options, and an observer that
// refuses the gate (New fails with its error; nothing is left running, as
// goleak checks in TestMain).
func TestObserverAndLoggerOptions(t *testing.T) {
	rec := &callRecorder{}
	for _, tc := range []struct {
		name    string
		opts    []Option
		wantErr error
	}{
		{"WithObserver(nil)", []Option{WithObserver(nil)}, nil},
		{"WithObserver(nil) after an observer removes it", []Option{WithObserver(rec), WithObserver(nil)}, nil},
		{"WithLogger(nil)", []Option{WithLogger(nil), WithBreaker(breaker.Config{MinCalls: 1})}, nil},
		{"Attach fails", []Option{WithObserver(&refusing{})}, errRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := New("test", tc.opts...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if g != nil {
					t.Error("New returned a gate with its error")
				}
				return
			}
			_ = g.Guard(context.Background(), func(context.Context) error { return retry.Transient(errUpstream) })
			_ = g.Guard(context.Background(), ok)
		})
	}
	if len(rec.calls) != 0 {
		t.Errorf("a removed observer was told of %d calls", len(rec.calls))
	}
}

// The breaker's OnStateChange may call back into the gate (Stats, Guard),
// and so may OnLimitChange (Stats): with the observer and the logger
// chained after them, neither deadlocks, and each callback still runs.
func TestCallbacksReenterWithLoggerAndObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g *Gate
		var states, limits int
		var buf syncBuffer
		g = mustGate(t, WithObserver(&callRecorder{}),
			WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))),
			WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Second, Probes: 1,
				OnStateChange: func(string, breaker.State, breaker.State) {
					states++
					_ = g.Stats()
					_ = g.Guard(context.Background(), ok)
				}}),
			WithLimiter(adaptive.Config{Algorithm: bump{}, MinSamples: 1, WindowMin: time.Millisecond, WindowMax: time.Millisecond,
				OnLimitChange: func(int, int, adaptive.Window) { limits++; _ = g.Stats() }}),
			WithRetry(retry.Config{MaxAttempts: 1}))
		ctx := context.Background()
		_ = g.Guard(ctx, func(context.Context) error { return retry.Transient(errUpstream) })
		time.Sleep(time.Second + time.Millisecond)
		_ = g.Guard(ctx, func(context.Context) error { time.Sleep(2 * time.Millisecond); return nil })
		synctest.Wait() // the breaker's callback runs on its own goroutine
		if states != 3 || limits == 0 {
			t.Errorf("OnStateChange ran %d times (want 3), OnLimitChange %d (want > 0)", states, limits)
		}
		if n := len(buf.records(t)); n < 4 {
			t.Errorf("%d log records, want the 3 transitions and the limit change", n)
		}
	})
}

// Issue 13, defect 7: a call whose fn panicked or called runtime.Goexit
// was never reported to Observer.Call, so floodgate_calls_total
// undercounted (the trial: 3,776 of 500,000 calls missing). Every Guard
// call is reported exactly once: one that does not return is a failure,
// with the attempts that reached the downstream and its duration so far.
func TestObserverCallOnEveryUnwind(t *testing.T) {
	maxWait := func(k int64) int64 { return k - 1 } // the first retry waits the full 100 ms
	for _, tc := range []struct {
		name         string
		opts         []Option
		fn           func(n int) error // n: the attempt, from 1
		wantAttempts int
		wantDur      time.Duration
	}{
		{name: "fn panics", fn: func(int) error { time.Sleep(10 * time.Millisecond); panic("boom") },
			wantAttempts: 1, wantDur: 10 * time.Millisecond},
		{name: "fn panics on the retry", opts: []Option{WithRetry(retry.Config{Rand: maxWait})},
			fn: func(n int) error {
				time.Sleep(10 * time.Millisecond)
				if n == 1 {
					return retry.Transient(errUpstream)
				}
				panic("boom")
			},
			wantAttempts: 2, wantDur: 120 * time.Millisecond},
		{name: "fn calls runtime.Goexit", fn: func(int) error { time.Sleep(10 * time.Millisecond); runtime.Goexit(); return nil },
			wantAttempts: 1, wantDur: 10 * time.Millisecond},
		{name: "the classifier panics", opts: []Option{WithRetry(retry.Config{Classify: func(error) retry.Class { panic("boom") }})},
			fn: func(int) error { time.Sleep(10 * time.Millisecond); return errUpstream }, wantAttempts: 1, wantDur: 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &callRecorder{}
				g := mustGate(t, append(tc.opts, WithObserver(rec))...)
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer func() { _ = recover() }()
					n := 0
					_ = g.Guard(context.Background(), func(context.Context) error { n++; return tc.fn(n) })
				}()
				<-done
				want := observedCall{OutcomeFailure, tc.wantAttempts, tc.wantDur}
				if len(rec.calls) != 1 || rec.calls[0] != want {
					t.Errorf("observer told of %+v, want exactly [%+v] (before the fix: nothing)", rec.calls, want)
				}
				if n := g.Limiter().InFlight(); n != 0 {
					t.Errorf("%d slots held", n)
				}
			})
		})
	}
}
