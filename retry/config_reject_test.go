package retry

import (
	"context"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// rejectRow is a configuration New or NewBudget must reject: the error
// must name field (as a word) and state rng, the valid range.
type rejectRow struct {
	name       string
	new        func() error
	field, rng string
}

func policyRow(name string, cfg Config, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := New(cfg); return err }, field, rng}
}

func budgetRow(name string, cfg BudgetConfig, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := NewBudget(cfg); return err }, field, rng}
}

// checkRejected runs the rows; shared shape with the other packages'
// config_reject_test.go.
func checkRejected(t *testing.T, rows []rejectRow) {
	t.Helper()
	for _, r := range rows {
		err := r.new()
		if err == nil {
			t.Errorf("%s: accepted, want an error naming %s %s", r.name, r.field, r.rng)
			continue
		}
		word := regexp.MustCompile(`(^|[^\w/])` + regexp.QuoteMeta(r.field) + `($|[^\w/])`)
		if !word.MatchString(err.Error()) || !strings.Contains(err.Error(), r.rng) {
			t.Errorf("%s: %q, want it to name %s and state %s", r.name, err, r.field, r.rng)
		}
	}
}

const (
	maxDur = time.Duration(math.MaxInt64)
	minDur = time.Duration(math.MinInt64)
)

// Every row is a Config or BudgetConfig outside its documented range
// (retry.Config's and BudgetConfig's docs): negatives, just past each
// end, the extremes of the type, NaN and infinities.
func TestConfigRejected(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	rows := []rejectRow{
		// MaxAttempts: [1, 100]
		policyRow("MaxAttempts -1", Config{MaxAttempts: -1}, "MaxAttempts", "[1, 100]"),
		policyRow("MaxAttempts 101", Config{MaxAttempts: 101}, "MaxAttempts", "[1, 100]"),
		policyRow("MaxAttempts MinInt", Config{MaxAttempts: math.MinInt}, "MaxAttempts", "[1, 100]"),
		policyRow("MaxAttempts MaxInt", Config{MaxAttempts: math.MaxInt}, "MaxAttempts", "[1, 100]"),
		// BaseDelay: [1 ms, 1 h], at most MaxDelay
		policyRow("BaseDelay -1ns", Config{BaseDelay: -1}, "BaseDelay", "[1ms, 1h]"),
		policyRow("BaseDelay 999µs", Config{BaseDelay: 999 * time.Microsecond}, "BaseDelay", "[1ms, 1h]"),
		policyRow("BaseDelay 1h+1ns", Config{BaseDelay: time.Hour + 1}, "BaseDelay", "[1ms, 1h]"),
		policyRow("BaseDelay MinInt64", Config{BaseDelay: minDur}, "BaseDelay", "[1ms, 1h]"),
		policyRow("BaseDelay MaxInt64", Config{BaseDelay: maxDur}, "BaseDelay", "[1ms, 1h]"),
		policyRow("BaseDelay over MaxDelay", Config{BaseDelay: 2 * time.Second, MaxDelay: time.Second}, "BaseDelay", "at most MaxDelay=1s"),
		// MaxDelay: [1 ms, 1 h]
		policyRow("MaxDelay -1ns", Config{MaxDelay: -1}, "MaxDelay", "[1ms, 1h]"),
		policyRow("MaxDelay 999µs", Config{MaxDelay: 999 * time.Microsecond}, "MaxDelay", "[1ms, 1h]"),
		policyRow("MaxDelay 1h+1ns", Config{MaxDelay: time.Hour + 1}, "MaxDelay", "[1ms, 1h]"),
		policyRow("MaxDelay MinInt64", Config{MaxDelay: minDur}, "MaxDelay", "[1ms, 1h]"),
		policyRow("MaxDelay MaxInt64", Config{MaxDelay: maxDur}, "MaxDelay", "[1ms, 1h]"),
		// AttemptTimeout: 0 or [1 ms, 1 h]
		policyRow("AttemptTimeout -1ns", Config{AttemptTimeout: -1}, "AttemptTimeout", "0 or in [1ms, 1h]"),
		policyRow("AttemptTimeout 999µs", Config{AttemptTimeout: 999 * time.Microsecond}, "AttemptTimeout", "0 or in [1ms, 1h]"),
		policyRow("AttemptTimeout 1h+1ns", Config{AttemptTimeout: time.Hour + 1}, "AttemptTimeout", "0 or in [1ms, 1h]"),
		policyRow("AttemptTimeout MinInt64", Config{AttemptTimeout: minDur}, "AttemptTimeout", "0 or in [1ms, 1h]"),
		policyRow("AttemptTimeout MaxInt64", Config{AttemptTimeout: maxDur}, "AttemptTimeout", "0 or in [1ms, 1h]"),
		// Timeout: 0 or [1 ms, 24 h]
		policyRow("Timeout -1ns", Config{Timeout: -1}, "Timeout", "0 or in [1ms, 24h]"),
		policyRow("Timeout 999µs", Config{Timeout: 999 * time.Microsecond}, "Timeout", "0 or in [1ms, 24h]"),
		policyRow("Timeout 24h+1ns", Config{Timeout: 24*time.Hour + 1}, "Timeout", "0 or in [1ms, 24h]"),
		policyRow("Timeout MinInt64", Config{Timeout: minDur}, "Timeout", "0 or in [1ms, 24h]"),
		policyRow("Timeout MaxInt64", Config{Timeout: maxDur}, "Timeout", "0 or in [1ms, 24h]"),
		// BudgetConfig.Ratio: [0.001, 1]
		budgetRow("Ratio -0.1", BudgetConfig{Ratio: -0.1}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio 0.0009", BudgetConfig{Ratio: 0.0009}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio 5e-324", BudgetConfig{Ratio: math.SmallestNonzeroFloat64}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio 1.0001", BudgetConfig{Ratio: 1.0001}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio MaxFloat64", BudgetConfig{Ratio: math.MaxFloat64}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio NaN", BudgetConfig{Ratio: nan}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio +Inf", BudgetConfig{Ratio: inf}, "Ratio", "[0.001, 1]"),
		budgetRow("Ratio -Inf", BudgetConfig{Ratio: -inf}, "Ratio", "[0.001, 1]"),
		// BudgetConfig.Max: [1, 1e6]
		budgetRow("Max -1", BudgetConfig{Max: -1}, "Max", "[1, 1000000]"),
		budgetRow("Max 0.999", BudgetConfig{Max: 0.999}, "Max", "[1, 1000000]"),
		budgetRow("Max 5e-324", BudgetConfig{Max: math.SmallestNonzeroFloat64}, "Max", "[1, 1000000]"),
		budgetRow("Max 1e6+1", BudgetConfig{Max: 1e6 + 1}, "Max", "[1, 1000000]"),
		budgetRow("Max MaxFloat64", BudgetConfig{Max: math.MaxFloat64}, "Max", "[1, 1000000]"),
		budgetRow("Max NaN", BudgetConfig{Max: nan}, "Max", "[1, 1000000]"),
		budgetRow("Max +Inf", BudgetConfig{Max: inf}, "Max", "[1, 1000000]"),
		budgetRow("Max -Inf", BudgetConfig{Max: -inf}, "Max", "[1, 1000000]"),
	}
	checkRejected(t, rows)
}

// A zero-value &Budget{} (not from NewBudget) handed to New: either New
// rejects it, naming Budget, or it pays for retries (after 20 calls'
// deposits, in case it starts empty). Today it is
// accepted and never grants one: defect 8 of issue 13, fixed on another
// branch; this test fails until that fix lands.
func TestConfigZeroBudget(t *testing.T) {
	p, err := New(Config{Budget: &Budget{}})
	if err != nil {
		if !strings.Contains(err.Error(), "Budget") {
			t.Errorf("New with a zero-value Budget: %q, want it to name Budget", err)
		}
		return
	}
	for range 20 {
		p.Budget().Deposit()
	}
	d := p.Decide(context.Background(), 0, errors.New("reset"), ClassTransient, time.Now(), time.Time{}, false, nil)
	if !d.Retry {
		t.Errorf("a zero-value Budget accepted by New: a retryable first failure got %+v, want a retry (defect 8 of issue 13)", d)
	}
}

// A Ratio in range that is not a whole number of thousandths is kept, not
// rounded to one: 10,000 calls at Ratio 0.0014 earn 14 tokens. Today each
// deposit is rounded to 0.001 token and they earn 10: defect 9 of issue
// 13, fixed on another branch; this test fails until that fix lands.
// Rejecting such a Ratio, naming it, is a fix too.
func TestConfigRatioNotRounded(t *testing.T) {
	b, err := NewBudget(BudgetConfig{Ratio: 0.0014, Max: 100})
	if err != nil {
		if !strings.Contains(err.Error(), "Ratio") {
			t.Errorf("NewBudget(Ratio 0.0014): %q, want it to name Ratio", err)
		}
		return
	}
	for b.Withdraw() {
	}
	for range 10_000 {
		b.Deposit()
	}
	if got := b.Tokens(); math.Abs(got-14) > 0.01 {
		t.Errorf("10000 deposits at Ratio 0.0014: %v tokens, want 14 (defect 9 of issue 13)", got)
	}
}

// The accepted-with-meaning cases of retry.Config and BudgetConfig: each
// is accepted and does what its doc says.
func TestConfigAcceptedWithMeaning(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now()
	overload := func(hint time.Duration) error { return Overload(errors.New("503"), hint) }

	// BaseDelay over a zero MaxDelay: MaxDelay = max(10 s, BaseDelay), so
	// the loop sleeps up to BaseDelay and a server's hint up to it is
	// waited for, not ErrWaitTooLong.
	p := mustPolicy(t, Config{BaseDelay: 20 * time.Second})
	if d := p.Decide(ctx, 0, overload(15*time.Second), ClassOverload, t0, time.Time{}, false, nil); !d.Retry || d.Wait < 15*time.Second || d.Wait > 20*time.Second {
		t.Errorf("BaseDelay 20s, MaxDelay 0: a 15 s hint gave %+v, want a retry after 15–20 s (MaxDelay 20 s)", d)
	}
	if d := p.Decide(ctx, 0, overload(21*time.Second), ClassOverload, t0, time.Time{}, false, nil); d.Stop != ErrWaitTooLong {
		t.Errorf("BaseDelay 20s, MaxDelay 0: a 21 s hint gave %+v, want ErrWaitTooLong (MaxDelay 20 s)", d)
	}

	// AttemptTimeout over Timeout: accepted; an attempt gets the time
	// left before the call's deadline, Timeout after the first attempt.
	p = mustPolicy(t, Config{AttemptTimeout: 5 * time.Second, Timeout: time.Second})
	deadline, ok := p.Deadline(ctx, t0)
	if !ok || !deadline.Equal(t0.Add(time.Second)) {
		t.Errorf("Timeout 1s: deadline %v (%v), want first attempt + 1s", deadline.Sub(t0), ok)
	}
	if ad, ok := p.AttemptDeadline(t0, deadline, true); !ok || !ad.Equal(deadline) {
		t.Errorf("AttemptTimeout 5s over Timeout 1s: attempt deadline %v, want the call's, 1s", ad.Sub(t0))
	}

	// Budget Ratio 0 (and Max 0): the defaults, 0.1 token per call and 20
	// tokens, full at the start.
	b, err := NewBudget(BudgetConfig{})
	if err != nil {
		t.Fatalf("NewBudget(zero config): %v", err)
	}
	if got := b.Tokens(); got != 20 {
		t.Errorf("zero BudgetConfig: starts with %v tokens, want 20", got)
	}
	for b.Withdraw() {
	}
	for range 10 {
		b.Deposit()
	}
	if got := b.Tokens(); got != 1 {
		t.Errorf("Ratio 0: 10 calls earned %v tokens, want 1 (Ratio 0.1)", got)
	}
}
