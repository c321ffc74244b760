package retry

import (
	"sync"
	"testing"
)

// Trim and Add move credits out of and into a budget (package fleet's
// syncer): Trim takes what is above keep and reports what is left, Add
// gives up to Max.
func TestBudgetTrimAdd(t *testing.T) {
	for _, tc := range []struct {
		name        string
		withdrawals int   // from a full default budget (20 tokens)
		keep        int64 // credits
		add         int64 // credits, after the trim
		wantTaken   int64
		wantHeld    int64
		wantTokens  float64 // after the add
	}{
		{"full, keep 2 tokens", 0, 2000, 0, 18000, 2000, 2},
		{"below keep: nothing taken", 19, 2000, 0, 0, 1000, 1},
		{"keep 0 takes everything", 5, 0, 0, 15000, 0, 0},
		{"negative keep takes everything", 0, -5, 0, 20000, 0, 0},
		{"add after trim", 0, 2000, 3500, 18000, 2000, 5.5},
		{"add stops at Max", 0, 19000, 5000, 1000, 19000, 20},
		{"negative add does nothing", 0, 2000, -1000, 18000, 2000, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Budget
			for range tc.withdrawals {
				b.Withdraw()
			}
			taken, held := b.Trim(tc.keep)
			b.Add(tc.add)
			if taken != tc.wantTaken || held != tc.wantHeld || b.Tokens() != tc.wantTokens {
				t.Errorf("Trim(%d) = %d, %d; then %v tokens; want %d, %d; %v tokens",
					tc.keep, taken, held, b.Tokens(), tc.wantTaken, tc.wantHeld, tc.wantTokens)
			}
		})
	}
}

// Trim concurrent with deposits loses none: every credit is either taken
// or still held.
func TestBudgetTrimConcurrent(t *testing.T) {
	b, err := NewBudget(BudgetConfig{Max: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	b.Trim(0)
	const deposits = 20000 // 0.1 token each: 2,000,000 credits
	var wg sync.WaitGroup
	wg.Go(func() {
		for range deposits {
			b.Deposit()
		}
	})
	var taken int64
	for range 1000 {
		c, _ := b.Trim(0)
		taken += c
	}
	wg.Wait()
	c, _ := b.Trim(0)
	taken += c
	if taken != deposits*100 {
		t.Errorf("taken %d credits of %d deposited", taken, deposits*100)
	}
}
