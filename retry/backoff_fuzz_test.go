package retry

import (
	"math"
	"testing"
	"time"
)

// FuzzBackoff checks Backoff's bound for any attempt number, base, cap and
// Rand result: the wait is in [0, min(cap, base·2^n)] (math.MaxInt64 ns
// excluded), Rand is asked for a range in [1, math.MaxInt64], and Rand's
// largest answer gives the bound itself.
func FuzzBackoff(f *testing.F) {
	for _, s := range []struct {
		n             int
		base, ceiling int64
		r             int64
	}{
		{0, int64(100 * time.Millisecond), int64(10 * time.Second), 12345},
		{61, 1, math.MaxInt64, math.MaxInt64},
		{62, 1, math.MaxInt64, math.MaxInt64}, // issue 13
		{63, 1, math.MaxInt64, -1},
		{64, 3, math.MaxInt64, 0},
		{1000, int64(time.Millisecond), int64(time.Hour), 1 << 40},
		{-5, math.MaxInt64, math.MaxInt64, math.MinInt64},
		{1, 1 << 62, math.MaxInt64, 7},
		{2, int64(time.Second), int64(100 * time.Millisecond), 99},
		{2, int64(time.Second), 0, 1},
	} {
		f.Add(s.n, s.base, s.ceiling, s.r)
	}
	f.Fuzz(func(t *testing.T, n int, base, ceiling, r int64) {
		b, c := time.Duration(base), time.Duration(ceiling)
		bound := wantBound(n, b, c)
		got := Backoff(n, b, c, func(k int64) int64 {
			if k < 1 {
				t.Fatalf("Rand asked for [0, %d)", k)
			}
			return r
		})
		if got < 0 || got > largest(bound) {
			t.Fatalf("Backoff(%d, %d, %d) with Rand %d = %d ns, want in [0, %d]", n, base, ceiling, r, got, largest(bound))
		}
		if top := Backoff(n, b, c, func(k int64) int64 { return k - 1 }); top != largest(bound) {
			t.Fatalf("Backoff(%d, %d, %d) largest = %d ns, want %d", n, base, ceiling, top, largest(bound))
		}
	})
}
