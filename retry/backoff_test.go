package retry

import (
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"
)

const maxDuration = time.Duration(math.MaxInt64)

// wantBound is Backoff's documented bound, min(ceiling, base·2^n) (n < 0
// counts as 0; 0 if base or ceiling is not positive), computed in big
// integers so that it cannot overflow.
func wantBound(n int, base, ceiling time.Duration) time.Duration {
	if base <= 0 || ceiling <= 0 {
		return 0
	}
	v := new(big.Int).Lsh(big.NewInt(int64(base)), uint(min(max(n, 0), 64))) // past 64, base·2^n > ceiling anyway
	if v.Cmp(big.NewInt(int64(ceiling))) > 0 {
		return ceiling
	}
	return time.Duration(v.Int64())
}

// largest is the largest wait Backoff may return for a bound: the bound
// itself, but for math.MaxInt64 ns, which is excluded.
func largest(bound time.Duration) time.Duration {
	if bound == maxDuration {
		return bound - 1
	}
	return bound
}

// Issue 13, defect 10: found by fuzzing, Backoff(62, 1ns, math.MaxInt64 ns)
// could wait up to 9223372036854775806 ns, twice its bound
// min(cap, base·2^62) = 4611686018427387904 ns (the guard read n < 62). The
// bound holds at every edge of n, base and cap.
func TestBackoffEdges(t *testing.T) {
	for _, tc := range []struct {
		n             int
		base, ceiling time.Duration
		want          time.Duration // the bound
	}{
		{0, 100 * time.Millisecond, 10 * time.Second, 100 * time.Millisecond},
		{61, 1, maxDuration, 1 << 61},
		{62, 1, maxDuration, 1 << 62}, // issue 13: was maxDuration-1
		{62, 1, 1 << 62, 1 << 62},
		{62, 1, 1<<62 - 1, 1<<62 - 1},
		{62, 2, maxDuration, maxDuration},
		{63, 1, maxDuration, maxDuration},
		{64, 1, maxDuration, maxDuration},
		{1000, time.Millisecond, time.Hour, time.Hour},
		{math.MaxInt, 1, maxDuration, maxDuration},
		{-1, time.Second, time.Hour, time.Second},
		{math.MinInt, time.Second, time.Hour, time.Second},
		{0, maxDuration, maxDuration, maxDuration}, // huge base
		{1, maxDuration, maxDuration, maxDuration},
		{1, 1 << 62, maxDuration, maxDuration},                           // base·2 overflows int64
		{0, time.Second, 100 * time.Millisecond, 100 * time.Millisecond}, // cap < base
		{5, time.Second, 100 * time.Millisecond, 100 * time.Millisecond},
		{3, time.Second, 0, 0}, // cap 0
		{3, 0, time.Second, 0}, // base 0
		{3, time.Second, -time.Second, 0},
		{3, -time.Second, time.Second, 0},
	} {
		t.Run(fmt.Sprintf("n=%d base=%d cap=%d", tc.n, tc.base, tc.ceiling), func(t *testing.T) {
			if got := wantBound(tc.n, tc.base, tc.ceiling); got != tc.want {
				t.Fatalf("the table's bound %v disagrees with wantBound's %v", tc.want, got)
			}
			if got := Backoff(tc.n, tc.base, tc.ceiling, func(k int64) int64 { return k - 1 }); got != largest(tc.want) {
				t.Errorf("largest wait %d ns, want %d ns", got, largest(tc.want))
			}
			if got := Backoff(tc.n, tc.base, tc.ceiling, func(int64) int64 { return 0 }); got != 0 {
				t.Errorf("smallest wait %d ns, want 0", got)
			}
			for range 100 {
				if got := Backoff(tc.n, tc.base, tc.ceiling, nil); got < 0 || got > largest(tc.want) {
					t.Fatalf("wait %d ns, want in [0, %d]", got, largest(tc.want))
				}
			}
		})
	}
}
