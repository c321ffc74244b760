package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Issue 13, defect 8: a zero Budget was accepted and never granted a retry
// (0 of 21 withdrawals, 0 tokens after 1,000 deposits). It is the default
// budget: Ratio 0.1, Max 20, full at the start.
func TestZeroBudget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		withdrawals int     // from the start
		deposits    int     // after them
		wantGranted int     // of the withdrawals
		wantTokens  float64 // at the end
	}{
		{"starts full: 20 of 21 retries granted", 21, 0, 20, 0},
		{"earns 0.1 token per call", 21, 15, 20, 1.5},
		{"holds at most 20 tokens", 21, 1000, 20, 20},
		{"untouched", 0, 0, 0, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Budget
			granted := 0
			for range tc.withdrawals {
				if b.Withdraw() {
					granted++
				}
			}
			for range tc.deposits {
				b.Deposit()
			}
			if granted != tc.wantGranted || b.Tokens() != tc.wantTokens {
				t.Errorf("%d of %d retries granted, %v tokens after %d calls; want %d granted, %v tokens",
					granted, tc.withdrawals, b.Tokens(), tc.deposits, tc.wantGranted, tc.wantTokens)
			}
		})
	}
	var b Budget
	for range 3 {
		b.Withdraw()
	}
	b.Refund()
	if got := b.Tokens(); got != 18 {
		t.Errorf("zero Budget after 3 retries and a refund: %v tokens, want 18", got)
	}
}

// A Policy given &Budget{} pays its retries from it as from the default
// budget: 20 retries granted, then ErrBudgetExhausted.
func TestPolicyWithZeroBudget(t *testing.T) {
	budget := &Budget{}
	p := mustPolicy(t, Config{Budget: budget, Rand: func(int64) int64 { return 0 }})
	if p.Budget() != budget {
		t.Fatal("Policy does not use the budget it was given")
	}
	err := Transient(errors.New("reset"))
	var granted int
	var stop error
	for range 21 {
		d := p.Decide(context.Background(), 0, err, p.Classify(err), time.Now(), time.Time{}, false, nil)
		if !d.Retry {
			stop = d.Stop
			break
		}
		granted++
	}
	if granted != 20 || !errors.Is(stop, ErrBudgetExhausted) {
		t.Errorf("%d retries granted, then %v; want 20, then ErrBudgetExhausted", granted, stop)
	}
}

// Issue 13, defect 9: Ratio was rounded to 0.001 token: 0.0015 earned 33%
// more than asked (0.002 per call) and 0.0014 29% less (0.001). Now a
// Ratio or Max that is not a multiple of 0.001 is an error, and an
// accepted one earns exactly what it asks.
func TestBudgetRatioNotRounded(t *testing.T) {
	for _, tc := range []struct {
		ratio, max float64
		calls      int
		wantErr    string  // "" if accepted
		wantTokens float64 // after calls, from empty
	}{
		{ratio: 0.0015, wantErr: "Ratio must be a multiple of 0.001 in [0.001, 1], got 0.0015"},
		{ratio: 0.0014, wantErr: "Ratio must be a multiple of 0.001 in [0.001, 1], got 0.0014"},
		{ratio: 0.1, max: 20.0005, wantErr: "Max must be a multiple of 0.001 in [1, 1000000], got 20.0005"},
		{ratio: 0.001, calls: 1000, wantTokens: 1},
		{ratio: 0.123, max: 1000, calls: 1000, wantTokens: 123},
		{ratio: 0.1 + 0.2, max: 1000, calls: 100, wantTokens: 30}, // 0.30000000000000004: float64 rounding of 0.3
		{ratio: 1, calls: 1, wantTokens: 1},
		{ratio: 1, max: 16384.1, calls: 20000, wantTokens: 16384.1}, // was refused: 1e-9 credit of tolerance is under one float64 step there
		{ratio: 1, max: 999999.999, wantTokens: 0.999},              // what Withdraw leaves of a full bucket
		{ratio: 0.1, max: 16384.0005, wantErr: "Max must be a multiple of 0.001 in [1, 1000000], got 16384.0005"},
	} {
		b, err := NewBudget(BudgetConfig{Ratio: tc.ratio, Max: tc.max})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewBudget(Ratio %v, Max %v) = %v, want error containing %q", tc.ratio, tc.max, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewBudget(Ratio %v, Max %v): %v", tc.ratio, tc.max, err)
			continue
		}
		for b.Withdraw() {
		}
		for range tc.calls {
			b.Deposit()
		}
		if got := b.Tokens(); got != tc.wantTokens {
			t.Errorf("Ratio %v: %v tokens after %d calls from empty, want %v", tc.ratio, got, tc.calls, tc.wantTokens)
		}
	}
}
