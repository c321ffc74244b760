package floodgate

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// WithLogger logs a breaker trip at Warn and a falling limit at Info, with
// the documented attributes, and still runs the user's own callbacks.
func TestLoggerEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		var userBreaker, userLimit int
		g := mustGate(t, WithLogger(logger),
			WithBreaker(breaker.Config{MinCalls: 5, OnStateChange: func(string, breaker.State, breaker.State) { userBreaker++ }}),
			WithLimiter(adaptive.Config{MinSamples: 5, OnLimitChange: func(int, int, adaptive.Window) { userLimit++ }}),
			WithRetry(retry.Config{MaxAttempts: 1}))
		ctx := context.Background()
		for range 5 { // 5 timeouts: drops for the limiter, failures for the breaker
			_ = g.Guard(ctx, func(context.Context) error {
				time.Sleep(100 * time.Millisecond)
				return context.DeadlineExceeded
			})
		}
		synctest.Wait() // the breaker's callback runs on its own goroutine
		recs := buf.records(t)
		var sawTrip, sawFall bool
		for _, r := range recs {
			switch r["msg"] {
			case "floodgate: breaker state changed":
				if r["level"] == "WARN" && r["gate"] == "test" && r["from"] == "closed" && r["to"] == "open" {
					sawTrip = true
				}
			case "floodgate: limit changed":
				from, to := r["from"].(float64), r["to"].(float64)
				if r["level"] == "INFO" && r["gate"] == "test" && to < from && r["drops"].(float64) == 5 && r["overloads"] == 0.0 {
					sawFall = true
				}
			}
		}
		if !sawTrip || !sawFall {
			t.Errorf("trip logged %v, limit fall logged %v; records: %v", sawTrip, sawFall, recs)
		}
		if userBreaker != 1 || userLimit != 1 {
			t.Errorf("user callbacks: breaker %d, limit %d; want 1 and 1", userBreaker, userLimit)
		}
	})
}

func TestOutcomeString(t *testing.T) {
	want := []string{"success", "failure", "shed", "open", "budget_exhausted", "deadline", "canceled"}
	for i, o := range Outcomes {
		if o.String() != want[i] {
			t.Errorf("Outcomes[%d] = %q, want %q", i, o, want[i])
		}
	}
	if Outcome(200).String() != "unknown" {
		t.Error("an out-of-range Outcome should print unknown")
	}
}

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu       sync.Mutex
	calls    []Outcome
	attempts []bool
	durs     []time.Duration
}

func (r *recorder) Attach(*Gate) error { return nil }
func (r *recorder) Attempt(retry bool, _ time.Duration) {
	r.mu.Lock()
	r.attempts = append(r.attempts, retry)
	r.mu.Unlock()
}
func (r *recorder) Call(o Outcome, _ int, d time.Duration) {
	r.mu.Lock()
	r.calls, r.durs = append(r.calls, o), append(r.durs, d)
	r.mu.Unlock()
}
func (r *recorder) StateChange(_, _ breaker.State) {}

// The observer sees each call's outcome and duration: a retried call's
// duration includes the backoff; a budget-exhausted one is reported as such.
func TestObserverCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		budget, err := retry.NewBudget(retry.BudgetConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			budget.Withdraw()
		}
		g := mustGate(t, WithObserver(rec), WithRetry(retry.Config{BaseDelay: time.Second, MaxDelay: time.Second,
			Rand: func(k int64) int64 { return k - 1 }}))
		g2 := mustGate(t, WithObserver(&recorder{}), WithRetry(retry.Config{Budget: budget}))
		ctx := context.Background()
		n := 0
		_ = g.Guard(ctx, func(context.Context) error {
			time.Sleep(100 * time.Millisecond)
			if n++; n == 1 {
				return retry.Transient(errUpstream)
			}
			return nil
		})
		if len(rec.calls) != 1 || rec.calls[0] != OutcomeSuccess || rec.durs[0] != 1200*time.Millisecond ||
			len(rec.attempts) != 2 || rec.attempts[0] || !rec.attempts[1] {
			t.Errorf("retried success: calls %v, durations %v, attempts (retry?) %v; want success in 1.2s, [false true]",
				rec.calls, rec.durs, rec.attempts)
		}
		err = g2.Guard(ctx, func(context.Context) error { return retry.Transient(errUpstream) })
		rec2 := g2.obs.(*recorder)
		if len(rec2.calls) != 1 || rec2.calls[0] != OutcomeBudgetExhausted {
			t.Errorf("empty budget: observed %v (err %v), want budget_exhausted", rec2.calls, err)
		}
	})
}
