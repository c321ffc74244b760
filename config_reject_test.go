package floodgate

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// New's options carry each layer's Config: one bad field per row of each
// layer (the sub-packages' config_reject_test.go hold the full tables),
// plus New's own arguments. The error must name the gate, the field (as a
// word) and the range; a layer's error comes through New unchanged.
func TestNewRejected(t *testing.T) {
	nan := math.NaN()
	claimed, err := adaptive.NewGradient(adaptive.GradientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New("owner", WithLimiter(adaptive.Config{Algorithm: claimed})); err != nil {
		t.Fatal(err)
	}
	var nilGradient *adaptive.Gradient
	var typedNilObserver *countingObserver
	for _, tc := range []struct {
		name       string
		gate       string
		opts       []Option
		field, rng string
	}{
		{"empty name", "", nil, "name", ""},
		{"nil option", "g", []Option{WithBreaker(breaker.Config{}), nil}, "option 1", ""},
		// limiter
		{"MinLimit -1", "g", []Option{WithLimiter(adaptive.Config{MinLimit: -1})}, "MinLimit", "[1, 1048576]"},
		{"MaxLimit MaxInt", "g", []Option{WithLimiter(adaptive.Config{MaxLimit: math.MaxInt})}, "MaxLimit", "[MinLimit=1, 1048576]"},
		{"InitialLimit 1001", "g", []Option{WithLimiter(adaptive.Config{InitialLimit: 1001})}, "InitialLimit", "[MinLimit=1, MaxLimit=1000]"},
		{"WindowMin -1ns", "g", []Option{WithLimiter(adaptive.Config{WindowMin: -1})}, "WindowMin", "[1ms, 1m]"},
		{"WindowMax 1m+1ns", "g", []Option{WithLimiter(adaptive.Config{WindowMax: time.Minute + 1})}, "WindowMax", "[WindowMin=250ms, 1m]"},
		{"MinSamples 1e6+1", "g", []Option{WithLimiter(adaptive.Config{MinSamples: 1e6 + 1})}, "MinSamples", "[1, 1000000]"},
		{"nil *Hybrid", "g", []Option{WithLimiter(adaptive.Config{Algorithm: nilGradient})}, "Algorithm", ""},
		{"a Hybrid another gate runs", "g", []Option{WithLimiter(adaptive.Config{Algorithm: claimed})}, "Algorithm", ""},
		// breaker
		{"Window 99ms", "g", []Option{WithBreaker(breaker.Config{Window: 99 * time.Millisecond})}, "Window", "[100ms, 1h]"},
		{"Buckets -1", "g", []Option{WithBreaker(breaker.Config{Buckets: -1})}, "Buckets", "[1, 100]"},
		{"Window/Buckets 100ms/11", "g", []Option{WithBreaker(breaker.Config{Window: 100 * time.Millisecond, Buckets: 11})}, "Window/Buckets", "at least 10ms"},
		{"MinCalls MinInt", "g", []Option{WithBreaker(breaker.Config{MinCalls: math.MinInt})}, "MinCalls", "[1, 1000000]"},
		{"FailureRatio NaN", "g", []Option{WithBreaker(breaker.Config{FailureRatio: nan})}, "FailureRatio", "[0.001, 1]"},
		{"SlowCall MaxInt64", "g", []Option{WithBreaker(breaker.Config{SlowCall: math.MaxInt64})}, "SlowCall", "[1ms, 1h]"},
		{"SlowRatio +Inf", "g", []Option{WithBreaker(breaker.Config{SlowRatio: math.Inf(1)})}, "SlowRatio", "[0.001, 1]"},
		{"OpenFor -1ns", "g", []Option{WithBreaker(breaker.Config{OpenFor: -1})}, "OpenFor", "[1ms, 1h]"},
		{"Probes 1001", "g", []Option{WithBreaker(breaker.Config{Probes: 1001})}, "Probes", "[1, 1000]"},
		{"ProbeLease 999µs", "g", []Option{WithBreaker(breaker.Config{ProbeLease: 999 * time.Microsecond})}, "ProbeLease", "[1ms, 1h]"},
		// retry
		{"MaxAttempts 101", "g", []Option{WithRetry(retry.Config{MaxAttempts: 101})}, "MaxAttempts", "[1, 100]"},
		{"BaseDelay MinInt64", "g", []Option{WithRetry(retry.Config{BaseDelay: math.MinInt64})}, "BaseDelay", "[1ms, 1h]"},
		{"MaxDelay 1h+1ns", "g", []Option{WithRetry(retry.Config{MaxDelay: time.Hour + 1})}, "MaxDelay", "[1ms, 1h]"},
		{"BaseDelay over MaxDelay", "g", []Option{WithRetry(retry.Config{BaseDelay: time.Second, MaxDelay: time.Millisecond})}, "BaseDelay", "at most MaxDelay=1ms"},
		{"AttemptTimeout -1ns", "g", []Option{WithRetry(retry.Config{AttemptTimeout: -1})}, "AttemptTimeout", "0 or in [1ms, 1h]"},
		{"Timeout 24h+1ns", "g", []Option{WithRetry(retry.Config{Timeout: 24*time.Hour + 1})}, "Timeout", "0 or in [1ms, 24h]"},
		// observer: unknown defect (reported): a typed nil Observer is
		// accepted (New rejects a nil *Hybrid the same way) and the first
		// Guard panics in the observer's methods
		{"typed nil Observer", "g", []Option{WithObserver(typedNilObserver)}, "Observer", ""},
	} {
		_, err := New(tc.gate, tc.opts...)
		if err == nil {
			t.Errorf("%s: accepted, want an error naming %s %s", tc.name, tc.field, tc.rng)
			continue
		}
		word := regexp.MustCompile(`(^|[^\w/])` + regexp.QuoteMeta(tc.field) + `($|[^\w/])`)
		msg := err.Error()
		if !word.MatchString(msg) || !strings.Contains(msg, tc.rng) || tc.gate != "" && !strings.Contains(msg, `gate "g"`) {
			t.Errorf("%s: %q, want it to name gate %q, %s and %s", tc.name, msg, tc.gate, tc.field, tc.rng)
		}
	}
}

// The accepted-with-meaning cases, through New: each is accepted and the
// gate does what the field's doc says.
func TestNewAcceptedWithMeaning(t *testing.T) {
	// MinLimit over a zero MaxLimit: MaxLimit = max(1000, MinLimit); the
	// limit starts at MinLimit.
	g := mustGate(t, WithLimiter(adaptive.Config{MinLimit: 2000}))
	if got := g.Stats().Limit; got != 2000 {
		t.Errorf("MinLimit 2000, MaxLimit 0: limit %d, want 2000", got)
	}

	// A negative-infinite TimeoutTolerance: accepted (no tolerance).
	h, err := adaptive.NewGradient(adaptive.GradientConfig{TimeoutTolerance: math.Inf(-1)})
	if err != nil {
		t.Errorf("TimeoutTolerance -Inf: %v, want accepted", err)
	} else {
		mustGate(t, WithLimiter(adaptive.Config{Algorithm: h}))
	}

	// BaseDelay over a zero MaxDelay: MaxDelay = BaseDelay, so a server's
	// 15 s hint under a 20 s BaseDelay is waited for and the retry made,
	// not ErrWaitTooLong (the default MaxDelay is 10 s).
	synctest.Test(t, func(t *testing.T) {
		g := mustGate(t, WithRetry(retry.Config{BaseDelay: 20 * time.Second}))
		attempts := 0
		start := time.Now()
		err := g.Guard(context.Background(), func(context.Context) error {
			if attempts++; attempts == 1 {
				return retry.Overload(errUpstream, 15*time.Second)
			}
			return nil
		})
		if waited := time.Since(start); err != nil || attempts != 2 || waited < 15*time.Second || waited > 20*time.Second {
			t.Errorf("BaseDelay 20s, MaxDelay 0, a 15 s hint: %v after %d attempts and %v, want success at the 2nd after 15–20 s", err, attempts, waited)
		}
	})

	// AttemptTimeout over Timeout: accepted; the attempt gets the time
	// left before Timeout, not AttemptTimeout.
	g = mustGate(t, WithRetry(retry.Config{AttemptTimeout: time.Hour, Timeout: time.Second}))
	var left time.Duration
	_ = g.Guard(context.Background(), func(ctx context.Context) error {
		d, _ := ctx.Deadline()
		left = time.Until(d)
		return nil
	})
	if left <= 0 || left > time.Second {
		t.Errorf("AttemptTimeout 1h over Timeout 1s: the attempt had %v, want at most 1s", left)
	}

	// Budget Ratio 0: the default 0.1, so 10 calls earn one retry.
	b, err := retry.NewBudget(retry.BudgetConfig{Ratio: 0})
	if err != nil {
		t.Fatalf("Ratio 0: %v, want accepted", err)
	}
	for b.Withdraw() {
	}
	g = mustGate(t, WithRetry(retry.Config{Budget: b, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
	for range 10 {
		_ = g.Guard(context.Background(), func(context.Context) error { return nil })
	}
	if got := g.Budget().Tokens(); got != 1 {
		t.Errorf("Ratio 0: 10 calls earned %v tokens, want 1 (Ratio 0.1)", got)
	}
}
