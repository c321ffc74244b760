package retry

import (
	"fmt"
	"math"
	"sync/atomic"
)

// BudgetConfig configures a [Budget]. Zero fields select the defaults.
type BudgetConfig struct {
	// Ratio is the tokens each original call deposits; a retry costs one
	// token, so Ratio is the share of extra load retries may add in the long
	// run. 0 selects the default, 0.1. Range [0.001, 1], and a multiple of
	// 0.001 (within float64 rounding): the budget counts thousandths of a
	// token and does not round, so 0.0015 is an error.
	Ratio float64
	// Max is the most tokens the budget holds (and holds at the start), so
	// the largest burst of retries. 0 selects the default, 20. Range
	// [1, 1e6], and a multiple of 0.001 (within float64 rounding).
	Max float64
}

// Defaults of [BudgetConfig].
const (
	DefaultBudgetRatio = 0.1
	DefaultBudgetMax   = 20
)

// credit is the integer unit the budget counts in: 1 token = 1000 credits.
const credit = 1000

// Budget is a retry budget shared by every call of one or more gates: a
// token bucket filled by original calls and drained by retries, after
// Finagle's RetryBudget and the "retry budget" of Google's SRE book
// (chapter "Handling Overload"). It counts integer credits in one atomic:
// no lock and no floating point per call. Create one with [NewBudget], or
// use the zero Budget: it has the defaults of [BudgetConfig] (Ratio 0.1,
// Max 20) and starts full. It is safe for concurrent use; do not copy it
// once used.
type Budget struct {
	spent   atomic.Int64 // credits below max: 0 is full, so the zero Budget starts full
	deposit int64        // credits per original call; 0 in the zero Budget
	max     int64        // credits; 0 in the zero Budget
}

// NewBudget returns a full Budget, or an error naming the field of cfg that
// is out of range or not a multiple of 0.001.
func NewBudget(cfg BudgetConfig) (*Budget, error) {
	if cfg.Ratio == 0 {
		cfg.Ratio = DefaultBudgetRatio
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultBudgetMax
	}
	deposit, ok := credits(cfg.Ratio, 0.001, 1)
	if !ok {
		return nil, fmt.Errorf("retry: budget Ratio must be a multiple of 0.001 in [0.001, 1], got %v", cfg.Ratio)
	}
	m, ok := credits(cfg.Max, 1, 1e6)
	if !ok {
		return nil, fmt.Errorf("retry: budget Max must be a multiple of 0.001 in [1, 1000000], got %v", cfg.Max)
	}
	return &Budget{deposit: deposit, max: m}, nil
}

// credits returns tokens in credits, and whether tokens is in [lo, hi] and
// a whole number of credits to within 1e-9 credit (float64 rounding: 0.3
// and 0.1+0.2 are both 300 credits).
func credits(tokens, lo, hi float64) (int64, bool) {
	if !(tokens >= lo && tokens <= hi) {
		return 0, false
	}
	c := math.Round(tokens * credit)
	return int64(c), math.Abs(tokens*credit-c) <= max(1e-9, 1e-12*c) // float64 error grows with c
}

// limits returns the credits per original call and the most credits held:
// the configured ones, or the defaults' in the zero Budget.
func (b *Budget) limits() (deposit, max int64) {
	if b.max == 0 {
		return DefaultBudgetRatio * credit, DefaultBudgetMax * credit
	}
	return b.deposit, b.max
}

// Deposit credits one original call (Ratio tokens), up to Max. When the
// budget is full it only reads the atomic.
func (b *Budget) Deposit() {
	deposit, _ := b.limits()
	b.give(deposit)
}

// Withdraw takes one token for a retry. It returns false, taking nothing,
// when less than one token is left.
func (b *Budget) Withdraw() bool {
	_, m := b.limits()
	for {
		s := b.spent.Load()
		if m-s < credit {
			return false
		}
		if b.spent.CompareAndSwap(s, s+credit) {
			return true
		}
	}
}

// Refund gives back the token of a retry that never reached the
// downstream (it was shed, refused by an open breaker or an inner gate, or
// its context ended during the backoff), up to Max.
func (b *Budget) Refund() { b.give(credit) }

// give adds c credits, up to Max.
func (b *Budget) give(c int64) {
	for {
		s := b.spent.Load()
		if s <= 0 || b.spent.CompareAndSwap(s, max(s-c, 0)) {
			return
		}
	}
}

// Tokens returns the tokens in the budget now, in [0, Max].
func (b *Budget) Tokens() float64 {
	_, m := b.limits()
	return float64(m-b.spent.Load()) / credit
}

// CreditsPerToken is the unit of [Budget.Trim] and [Budget.Add]: the
// budget counts thousandths of a token, and a retry costs one token.
const CreditsPerToken = credit

// Trim takes every credit above keep out of the budget, in one atomic
// step, and returns the credits taken and the credits left (at most keep).
// It is for a syncer that moves tokens between this budget and a shared
// one (package fleet): Deposit, Withdraw and Refund do not use it and cost
// the same with or without it. A keep ≤ 0 takes everything.
func (b *Budget) Trim(keep int64) (taken, held int64) {
	_, m := b.limits()
	keep = max(keep, 0)
	for {
		s := b.spent.Load()
		held = m - s
		if held <= keep {
			return 0, held
		}
		if b.spent.CompareAndSwap(s, m-keep) {
			return held - keep, keep
		}
	}
}

// Add puts c credits into the budget, up to Max (what is above it is
// lost), for a syncer as [Budget.Trim]. A c ≤ 0 does nothing.
func (b *Budget) Add(c int64) {
	if c > 0 {
		b.give(c)
	}
}
