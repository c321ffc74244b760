// Package retry is the budgeted retry loop's policy: which failures are
// retried, how long to wait between attempts, how one overall deadline is
// split across attempts, and a retry budget that caps how much extra load
// retries may add.
//
// # Model
//
// A call makes at most MaxAttempts attempts. After a failed attempt the
// [Policy] decides ([Policy.Decide]), in this order:
//
//  1. Only transient failures are retried: timeouts, overload answers
//     ([Overload], e.g. HTTP 503 or 429), refused or reset connections and
//     errors marked [Transient].
//     [Permanent] errors, the caller's cancellation and unknown errors are
//     returned as they are. Classify replaces this rule.
//  2. A call marked [NonIdempotent] is never retried unless it carries an
//     idempotency key ([WithIdempotencyKey]): it ends with [ErrNotIdempotent].
//  3. No retry once the circuit breaker is open (the caller says so).
//  4. The wait is full-jitter exponential backoff: the n-th retry (n from 0)
//     waits a uniform random time in [0, min(MaxDelay, BaseDelay·2^n)]; if
//     the error carries a server's Retry-After hint, the wait is at least
//     the hint. A hint longer than MaxDelay ends the call at once with
//     [ErrWaitTooLong] and the hint, whatever the deadline; otherwise, if
//     the wait would end at or past the call's deadline, the call ends at
//     once with [ErrDeadline] and the hint, so that the caller can hand the
//     work to a background job instead of sleeping.
//  5. The retry is paid from the [Budget]: each original call deposits 0.1
//     token, each retry withdraws 1, at most 20 tokens are kept. With the
//     budget empty the call ends with [ErrBudgetExhausted]: during an
//     outage retries add at most 10% to the load instead of tripling it.
//
// The deadline is the earlier of the context's deadline and Timeout after
// the first attempt starts; each attempt gets min(AttemptTimeout, time left),
// never a fresh timeout.
package retry
