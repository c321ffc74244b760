package retry

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the full-jitter exponential wait before retry n (n = 0 is
// the wait after the first attempt; n < 0 counts as 0): a uniform random
// duration in [0, min(ceiling, base·2^n)], both ends included (but for a
// bound of math.MaxInt64 ns, which is excluded), or 0 if base or ceiling is
// not positive. It never overflows, for any n, base and ceiling, and never
// returns a negative duration. rnd(k) must return a uniform random integer
// in [0, k) (a result outside is clamped into it); it is called with k in
// [1, math.MaxInt64]; nil uses math/rand/v2. Source: "Exponential Backoff
// And Jitter", AWS Architecture Blog (Marc Brooker, 2015), the "Full
// Jitter" variant.
func Backoff(n int, base, ceiling time.Duration, rnd func(int64) int64) time.Duration {
	if ceiling <= 0 || base <= 0 {
		return 0
	}
	n = max(n, 0)
	bound := ceiling
	// base·2^n ≤ ceiling exactly when base ≤ ceiling>>n, and then base<<n
	// cannot overflow; ceiling>>n is 0 from n = 63 on.
	if base <= ceiling>>uint(n) {
		bound = base << uint(n)
	}
	if rnd == nil {
		rnd = rand.Int64N
	}
	n64 := int64(bound) + 1
	if bound == time.Duration(1<<63-1) {
		n64 = int64(bound)
	}
	return time.Duration(min(max(rnd(n64), 0), n64-1))
}
