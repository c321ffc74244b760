package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Scenario 5: backoff for attempt numbers 0..10,000 stays in
// [0, min(cap, base·2^n)], is never negative, reaches that bound, and still
// spreads at high attempt numbers.
func TestBackoffEveryAttempt(t *testing.T) {
	for _, tc := range []struct {
		base, cap time.Duration
		attempts  int
	}{
		{100 * time.Millisecond, 10 * time.Second, 10_000},
		{time.Nanosecond, time.Duration(1<<63 - 1), 10_000},
		{time.Second, time.Second, 10_000},
	} {
		t.Run(fmt.Sprint(tc.base, "/", tc.cap), func(t *testing.T) {
			highs := map[time.Duration]bool{}
			for n := 0; n <= tc.attempts; n++ {
				d := Backoff(n, tc.base, tc.cap, nil)
				if bound := largest(wantBound(n, tc.base, tc.cap)); d < 0 || d > bound {
					t.Fatalf("Backoff(%d) = %v, want in [0, %v]", n, d, bound)
				}
				if n >= tc.attempts-100 {
					highs[d] = true
				}
				// The upper end: rnd returning its largest value gives the bound itself.
				top := Backoff(n, tc.base, tc.cap, func(k int64) int64 { return k - 1 })
				if want := largest(wantBound(n, tc.base, tc.cap)); top != want {
					t.Fatalf("largest Backoff(%d) = %v, want %v", n, top, want)
				}
			}
			if got := Backoff(3, tc.base, tc.cap, func(k int64) int64 { return k + 100 }); got < 0 || got > tc.cap {
				t.Errorf("a Rand above its range gave %v, want it clamped into [0, %v]", got, tc.cap)
			}
			if got := Backoff(3, tc.base, tc.cap, func(int64) int64 { return -5 }); got != 0 {
				t.Errorf("a negative Rand gave %v, want 0", got)
			}
			if len(highs) < 90 {
				t.Errorf("only %d distinct delays among the last 100 attempts; want them spread", len(highs))
			}
		})
	}
}

func newBudget(t *testing.T, tokens float64) *Budget {
	t.Helper()
	b, err := NewBudget(BudgetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for b.Tokens() > tokens {
		if !b.Withdraw() {
			t.Fatal("cannot drain")
		}
	}
	return b
}

// Scenario 10: a drained budget of 20 tokens refills by 0.1 token per
// original call and stops at 20.
func TestBudgetRefillsToCap(t *testing.T) {
	for _, tc := range []struct {
		calls int
		want  float64
	}{
		{calls: 0, want: 0},
		{calls: 10, want: 1},
		{calls: 150, want: 15},
		{calls: 1000, want: 20},
	} {
		b := newBudget(t, 0)
		if b.Withdraw() {
			t.Fatal("withdrew from an empty budget")
		}
		for range tc.calls {
			b.Deposit()
		}
		if got := b.Tokens(); got != tc.want {
			t.Errorf("after %d calls: %v tokens, want %v", tc.calls, got, tc.want)
		}
	}
}

// Scenario 11: 64 goroutines each try one retry at once against a budget
// holding 5 tokens: exactly 5 retries are granted.
func TestBudgetConcurrentWithdraw(t *testing.T) {
	for _, tc := range []struct {
		goroutines int
		tokens     float64
		want       int64
	}{
		{64, 5, 5},
		{64, 0.9, 0},
		{8, 20, 8},
	} {
		b := newBudget(t, tc.tokens)
		var granted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range tc.goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if b.Withdraw() {
					granted.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := granted.Load(); got != tc.want {
			t.Errorf("%d goroutines, %v tokens: %d retries granted, want %d", tc.goroutines, tc.tokens, got, tc.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestClassify(t *testing.T) {
	base := errors.New("boom")
	for _, tc := range []struct {
		err  error
		want Class
	}{
		{nil, ClassSuccess},
		{base, ClassFailure},
		{Permanent(base), ClassPermanent},
		{fmt.Errorf("wrapped: %w", Transient(base)), ClassTransient},
		{Overload(base, time.Second), ClassOverload},
		{context.Canceled, ClassCanceled},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), ClassOverload},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, ClassOverload},
		{Permanent(context.DeadlineExceeded), ClassPermanent},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, ClassTransient},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), ClassTransient},
		{io.ErrUnexpectedEOF, ClassTransient},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if Permanent(nil) != nil || Transient(nil) != nil || Overload(nil, time.Second) != nil {
		t.Error("marking nil must give nil")
	}
	if d, ok := Hint(fmt.Errorf("x: %w", errors.Join(base, Overload(base, 3*time.Second)))); !ok || d != 3*time.Second {
		t.Errorf("Hint through a join = %v %v, want 3s", d, ok)
	}
}

func mustPolicy(t *testing.T, cfg Config) *Policy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each rule of Decide, in order, with the scenario's numbers.
func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	maxRand := func(k int64) int64 { return k - 1 }
	blocked := errors.New("breaker open")
	for _, tc := range []struct {
		name      string
		cfg       Config
		ctx       context.Context
		attempt   int
		err       error
		end       time.Duration // after t0
		deadline  time.Duration // after t0; 0 = none
		blocked   error
		tokens    float64
		wantRetry bool
		wantWait  time.Duration
		wantStop  error
		wantHint  time.Duration
	}{
		{name: "transient retried after full backoff", err: Transient(errors.New("reset")), tokens: 20,
			wantRetry: true, wantWait: 100 * time.Millisecond},
		{name: "second retry doubles the bound", attempt: 1, err: Transient(errors.New("reset")), tokens: 20,
			wantRetry: true, wantWait: 200 * time.Millisecond},
		{name: "permanent not retried", err: Permanent(errors.New("404")), tokens: 20},
		{name: "unknown error not retried", err: errors.New("?"), tokens: 20},
		{name: "attempts used up", attempt: 2, err: Transient(errors.New("reset")), tokens: 20, wantStop: ErrAttemptsExhausted},
		// Issue 13: with Stop nil, a floodgate Gate returned the transient error bare and an outer Gate retried it.
		{name: "retries off", cfg: Config{MaxAttempts: 1}, err: Transient(errors.New("reset")), tokens: 20, wantStop: ErrAttemptsExhausted},
		{name: "non-idempotent not retried", ctx: NonIdempotent(context.Background()),
			err: Transient(errors.New("reset")), tokens: 20, wantStop: ErrNotIdempotent},
		{name: "non-idempotent with key retried", ctx: WithIdempotencyKey(NonIdempotent(context.Background()), "k1"),
			err: Transient(errors.New("reset")), tokens: 20, wantRetry: true, wantWait: 100 * time.Millisecond},
		{name: "breaker open", err: Transient(errors.New("reset")), blocked: blocked, tokens: 20, wantStop: blocked},
		// Scenario 6: the server says retry after 8 s; the deadline is 5 s away.
		{name: "hint past deadline", err: Overload(errors.New("503"), 8*time.Second), end: 100 * time.Millisecond,
			deadline: 5 * time.Second, tokens: 20, wantStop: ErrDeadline, wantHint: 8 * time.Second},
		// Issue 13: a hint of 3600 s (> MaxDelay 10 s) was ErrDeadline with a 5 s deadline and ErrWaitTooLong without one.
		{name: "hint longer than MaxDelay, deadline 5 s", err: Overload(errors.New("503"), time.Hour), end: 100 * time.Millisecond,
			deadline: 5 * time.Second, tokens: 20, wantStop: ErrWaitTooLong, wantHint: time.Hour},
		// Scenario 7: deadline 5 s, first attempt fails at 100 ms, next backoff would be 10 s.
		{name: "backoff past deadline", cfg: Config{BaseDelay: 10 * time.Second}, err: Transient(errors.New("reset")),
			end: 100 * time.Millisecond, deadline: 5 * time.Second, tokens: 20, wantStop: ErrDeadline},
		{name: "hint within deadline is waited", err: Overload(errors.New("429"), 2*time.Second), end: 100 * time.Millisecond,
			deadline: 5 * time.Second, tokens: 20, wantRetry: true, wantWait: 2 * time.Second, wantHint: 2 * time.Second},
		{name: "hint longer than MaxDelay, no deadline", err: Overload(errors.New("429"), time.Duration(1<<63-1)),
			tokens: 20, wantStop: ErrWaitTooLong, wantHint: time.Duration(1<<63 - 1)},
		{name: "budget exhausted", err: Transient(errors.New("reset")), tokens: 0.9, wantStop: ErrBudgetExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Rand = maxRand
			cfg.Budget = newBudget(t, tc.tokens)
			p := mustPolicy(t, cfg)
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			before := p.Budget().Tokens()
			d := p.Decide(ctx, tc.attempt, tc.err, p.Classify(tc.err), t0.Add(tc.end), t0.Add(tc.deadline), tc.deadline > 0, tc.blocked)
			if d.Retry != tc.wantRetry || d.Wait != tc.wantWait || d.Stop != tc.wantStop || d.Hint != tc.wantHint {
				t.Errorf("Decide = %+v, want retry=%v wait=%v stop=%v hint=%v", d, tc.wantRetry, tc.wantWait, tc.wantStop, tc.wantHint)
			}
			spent := before - p.Budget().Tokens()
			if want := map[bool]float64{true: 1, false: 0}[tc.wantRetry]; spent != want {
				t.Errorf("budget spent %v tokens, want %v", spent, want)
			}
		})
	}
}

func TestDeadlines(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := mustPolicy(t, Config{Timeout: 5 * time.Second, AttemptTimeout: 2 * time.Second})
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(3*time.Second))
	defer cancel()
	d, ok := p.Deadline(ctx, t0)
	if !ok || !d.Equal(t0.Add(3*time.Second)) {
		t.Errorf("Deadline = %v, want the context's earlier one", d)
	}
	d, _ = p.Deadline(context.Background(), t0)
	if !d.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("Deadline = %v, want first+Timeout", d)
	}
	// Attempt 2 starting at 4 s gets the 1 s left, not a fresh 2 s.
	a, ok := p.AttemptDeadline(t0.Add(4*time.Second), d, true)
	if !ok || !a.Equal(d) {
		t.Errorf("AttemptDeadline = %v, want %v (what is left)", a, d)
	}
	a, _ = p.AttemptDeadline(t0, d, true)
	if !a.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("AttemptDeadline = %v, want start+AttemptTimeout", a)
	}
	if _, ok := mustPolicy(t, Config{}).AttemptDeadline(t0, time.Time{}, false); ok {
		t.Error("an attempt got a deadline with no timeout configured")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxAttempts: -1}, "MaxAttempts must be in [1, 100]"},
		{Config{MaxAttempts: 101}, "MaxAttempts must be in [1, 100]"},
		{Config{BaseDelay: time.Microsecond}, "BaseDelay must be in [1ms, 1h], got 1µs"},
		{Config{BaseDelay: 2 * time.Hour}, "BaseDelay must be in [1ms, 1h], got 2h0m0s"},
		{Config{BaseDelay: time.Second, MaxDelay: 100 * time.Millisecond}, "BaseDelay must be at most MaxDelay=100ms, got 1s"},
		{Config{MaxDelay: -1}, "MaxDelay must be in [1ms, 1h], got -1ns"},
		{Config{MaxDelay: 2 * time.Hour}, "MaxDelay must be in [1ms, 1h], got 2h0m0s"},
		{Config{MaxDelay: 500 * time.Microsecond}, "MaxDelay must be in [1ms, 1h], got 500µs"},
		{Config{AttemptTimeout: -time.Second}, "AttemptTimeout must be 0 or in [1ms, 1h]"},
		{Config{Timeout: 25 * time.Hour}, "Timeout must be 0 or in [1ms, 24h]"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
	for _, tc := range []struct {
		cfg  BudgetConfig
		want string
	}{
		{BudgetConfig{Ratio: 2}, "Ratio must be a multiple of 0.001 in [0.001, 1], got 2"},
		{BudgetConfig{Ratio: -0.1}, "Ratio must be a multiple of 0.001 in [0.001, 1], got -0.1"},
		{BudgetConfig{Ratio: 0.0005}, "Ratio must be a multiple of 0.001 in [0.001, 1], got 0.0005"},
		{BudgetConfig{Ratio: math.NaN()}, "Ratio must be a multiple of 0.001 in [0.001, 1], got NaN"},
		{BudgetConfig{Ratio: math.Inf(1)}, "Ratio must be a multiple of 0.001 in [0.001, 1], got +Inf"},
		{BudgetConfig{Max: 0.5}, "Max must be a multiple of 0.001 in [1, 1000000], got 0.5"},
		{BudgetConfig{Max: -1}, "Max must be a multiple of 0.001 in [1, 1000000], got -1"},
		{BudgetConfig{Max: 1e6 + 1}, "Max must be a multiple of 0.001 in [1, 1000000], got 1.000001e+06"},
		{BudgetConfig{Max: math.NaN()}, "Max must be a multiple of 0.001 in [1, 1000000], got NaN"},
	} {
		if _, err := NewBudget(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewBudget(%+v) = %v, want error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// Refund gives back one token, never past Max.
func TestBudgetRefund(t *testing.T) {
	b := newBudget(t, 0) // empty
	b.Refund()
	if got := b.Tokens(); got != 1 {
		t.Errorf("empty budget after a refund: %v tokens, want 1", got)
	}
	full, err := NewBudget(BudgetConfig{Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	full.Refund()
	if got := full.Tokens(); got != 2 {
		t.Errorf("full budget after a refund: %v tokens, want 2 (Max)", got)
	}
}
