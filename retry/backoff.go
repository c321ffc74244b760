package retry

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the full-jitter exponential wait before retry n (n = 0 is
// the wait after the first attempt): a uniform random duration in
// [0, min(max, base·2^n)], both ends included (but for a bound of
// math.MaxInt64 ns, which is excluded). It never overflows: for any
// n ≥ 0 the bound is at most max, and it never returns a negative duration.
// rnd(k) must return a uniform random integer in [0, k); nil uses
// math/rand/v2. Source: "Exponential Backoff And Jitter", AWS Architecture
// Blog (Marc Brooker, 2015), the "Full Jitter" variant.
func Backoff(n int, base, max time.Duration, rnd func(int64) int64) time.Duration {
	if max <= 0 || base <= 0 {
		return 0
	}
	bound := max
	if n < 0 {
		n = 0
	}
	if n < 62 && base <= max>>uint(n) {
		bound = base << uint(n)
	}
	if rnd == nil {
		rnd = rand.Int64N
	}
	if bound == time.Duration(1<<63-1) {
		return time.Duration(rnd(int64(bound)))
	}
	return time.Duration(rnd(int64(bound) + 1))
}
