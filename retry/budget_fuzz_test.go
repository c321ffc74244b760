package retry

import (
	"math"
	"testing"
)

// FuzzBudget drives a Budget with a random sequence of Deposit, Withdraw
// and Refund and checks it against an exact integer model after every
// operation: the budget counts credits (credit per token; the package's
// unit), starts full at round(Max × credit), a deposit adds
// round(Ratio × credit) and a refund one token, both capped at the full
// amount, and a withdrawal takes one token when at least one is left and
// nothing otherwise. Tokens() must equal the model's credits / credit, and
// stay in [0, Max].
//
// ratio and max are the BudgetConfig (0 selects the defaults, 0.1 and 20;
// a config NewBudget rejects must be outside the documented ranges).
// Each byte of ops is one operation: its low two bits pick Deposit (0),
// Withdraw (1), Refund (2) or a burst (3) of deposits, and the rest a
// repeat count, so that short inputs still reach the cap and the floor.
func FuzzBudget(f *testing.F) {
	f.Add(0.0, 0.0, []byte{1, 1, 1, 0, 2})
	f.Add(0.1, 20.0, []byte{1, 0, 2}) // a refund 0.9 token below Max: capped
	f.Add(0.1, 20.0, []byte{0xfd, 0xfd, 0xfd, 1, 2, 2, 2})
	f.Add(0.001, 1.0, []byte{1, 2, 0, 0xff, 1, 1, 1, 5, 6})
	f.Add(1.0, 1e6, []byte{0xfd, 0xfd, 1, 0xf1, 2, 0xf2})
	f.Add(0.0015, 1.5, []byte{1, 1, 3, 3, 3, 1, 0xf0})
	f.Add(0.0014, 3.0, []byte{0xfd, 0xfd, 1})   // not whole credits: rejected (defect 9 of issue 13)
	f.Add(0.333, 2.0005, []byte{5, 5, 9, 0xfe}) // Max not a whole number of credits
	f.Add(math.NaN(), 20.0, []byte{0})
	f.Add(0.5, math.Inf(1), []byte{0})
	f.Fuzz(func(t *testing.T, ratio, maxTokens float64, ops []byte) {
		ops = ops[:min(len(ops), 4096)]
		b, err := NewBudget(BudgetConfig{Ratio: ratio, Max: maxTokens})
		r, m := ratio, maxTokens
		if r == 0 {
			r = 0.1
		}
		if m == 0 {
			m = 20
		}
		// Accepted exactly when both are in range and whole numbers of
		// credits (to float64 rounding): no silent rounding (defect 9).
		whole := func(x float64) bool {
			return math.Abs(x*credit-math.Round(x*credit)) <= max(1e-9, 1e-12*math.Round(x*credit))
		}
		valid := r >= 0.001 && r <= 1 && m >= 1 && m <= 1e6 && whole(r) && whole(m)
		if err != nil {
			if valid {
				t.Fatalf("NewBudget(Ratio %v, Max %v) = %v, want it accepted (in range, whole credits)", ratio, maxTokens, err)
			}
			return
		}
		if !valid {
			t.Fatalf("NewBudget(Ratio %v, Max %v) accepted; the ranges are [0.001, 1] and [1, 1e6], in whole thousandths", ratio, maxTokens)
		}
		full := int64(math.Round(m * credit)) // whole credits, as NewBudget takes them
		deposit := int64(math.Round(r * credit))
		credits := full // a new budget is full
		check := func(step int, op string) {
			t.Helper()
			got := b.Tokens()
			if want := float64(credits) / credit; got != want {
				t.Fatalf("op %d (%s): Tokens() = %v, want %v (model: %d credits; Ratio %v, Max %v)",
					step, op, got, want, credits, ratio, maxTokens)
			}
			if got < 0 || got > float64(full)/credit {
				t.Fatalf("op %d (%s): Tokens() = %v, outside [0, Max=%v]", step, op, got, float64(full)/credit)
			}
		}
		check(-1, "new")
		for i, op := range ops {
			n := int(op>>2)%8 + 1
			for range n {
				switch op & 3 {
				case 0:
					b.Deposit()
					credits = min(credits+deposit, full)
					check(i, "Deposit")
				case 1:
					want := credits >= credit
					if got := b.Withdraw(); got != want {
						t.Fatalf("op %d: Withdraw() = %v with %d credits, want %v", i, got, credits, want)
					}
					if want {
						credits -= credit
					}
					check(i, "Withdraw")
				case 2:
					b.Refund()
					credits = min(credits+credit, full)
					check(i, "Refund")
				case 3:
					for range 16 {
						b.Deposit()
						credits = min(credits+deposit, full)
					}
					check(i, "16 deposits")
				}
			}
		}
	})
}
