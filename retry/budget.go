package retry

import (
	"fmt"
	"sync/atomic"
)

// BudgetConfig configures a [Budget]. Zero fields select the defaults.
type BudgetConfig struct {
	// Ratio is the tokens each original call deposits; a retry costs one
	// token, so Ratio is the share of extra load retries may add in the long
	// run. Default 0.1; range [0.001, 1].
	Ratio float64
	// Max is the most tokens the budget holds (and holds at the start), so
	// the largest burst of retries. Default 20; range [1, 1e6].
	Max float64
}

// credit is the integer unit the budget counts in: 1 token = 1000 credits.
const credit = 1000

// Budget is a retry budget shared by every call of one or more gates: a
// token bucket filled by original calls and drained by retries, after
// Finagle's RetryBudget and the "retry budget" of Google's SRE book
// (chapter "Handling Overload"). It counts integer credits in one atomic:
// no lock and no floating point per call. Create one with [NewBudget]; it
// is safe for concurrent use.
type Budget struct {
	credits atomic.Int64
	deposit int64
	max     int64
}

// NewBudget returns a full Budget, or an error naming the field of cfg that
// is out of range.
func NewBudget(cfg BudgetConfig) (*Budget, error) {
	if cfg.Ratio == 0 {
		cfg.Ratio = 0.1
	}
	if cfg.Max == 0 {
		cfg.Max = 20
	}
	if !(cfg.Ratio >= 0.001 && cfg.Ratio <= 1) {
		return nil, fmt.Errorf("retry: budget Ratio must be in [0.001, 1], got %v", cfg.Ratio)
	}
	if !(cfg.Max >= 1 && cfg.Max <= 1e6) {
		return nil, fmt.Errorf("retry: budget Max must be in [1, 1000000], got %v", cfg.Max)
	}
	b := &Budget{deposit: int64(cfg.Ratio*credit + 0.5), max: int64(cfg.Max * credit)}
	b.credits.Store(b.max)
	return b, nil
}

// Deposit credits one original call (Ratio tokens), up to Max. When the
// budget is full it only reads the atomic.
func (b *Budget) Deposit() {
	for {
		c := b.credits.Load()
		if c >= b.max {
			return
		}
		if b.credits.CompareAndSwap(c, min(c+b.deposit, b.max)) {
			return
		}
	}
}

// Withdraw takes one token for a retry. It returns false, taking nothing,
// when less than one token is left.
func (b *Budget) Withdraw() bool {
	for {
		c := b.credits.Load()
		if c < credit {
			return false
		}
		if b.credits.CompareAndSwap(c, c-credit) {
			return true
		}
	}
}

// Refund gives back the token of a retry that never reached the
// downstream (it was shed, or refused by an open breaker), up to Max.
func (b *Budget) Refund() {
	for {
		c := b.credits.Load()
		if c >= b.max || b.credits.CompareAndSwap(c, min(c+credit, b.max)) {
			return
		}
	}
}

// Tokens returns the tokens in the budget now, in [0, Max].
func (b *Budget) Tokens() float64 { return float64(b.credits.Load()) / credit }
