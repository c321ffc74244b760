// Package floodgate keeps a service alive when the downstreams it calls get
// slow or go down: it makes a slowdown stay a slowdown instead of becoming
// an outage.
//
// # Why
//
// By Little's Law, calls in flight = arrival rate × latency. At 100 calls/s a
// downstream that slows from 100 ms to 2 s needs 200 calls in flight instead
// of 10; the caller's CPU stays low because it only waits, so CPU-based
// autoscaling sees nothing; and retries at three layers turn one user click
// into up to 3×3×3 = 27 attempts on the struggling downstream.
//
// # Model
//
// A [Gate] guards one downstream. Each call goes through [Gate.Guard] (or
// [Do] for a call that returns a value), which runs three layers, outermost
// first:
//
//  1. The budgeted retry loop (package retry) owns the call's retries:
//     only transient failures, full-jitter exponential backoff, one overall
//     deadline split across attempts, the server's Retry-After honoured, no
//     retry of non-idempotent work without an idempotency key, and a retry
//     budget shared by all calls (0.1 token earned per call, 1 spent per
//     retry, 20 at most) so that retries add at most ~10% load in an outage.
//     When the next wait would outlast the deadline, it returns at once.
//  2. The circuit breaker (package breaker, on sony/gobreaker) trips on the
//     ratio of failures and on the ratio of slow calls; open, it refuses at
//     once and stops the retry loop: no further attempt, no sleep.
//  3. The adaptive concurrency limiter (package adaptive) caps the calls in
//     flight at a limit it moves from observed RTT and drops, and sheds a
//     call at once when the limit is reached; it never queues. A slot is
//     released before any backoff sleep.
//
// The success path allocates nothing of floodgate's own and takes no lock
// of its own shared by all calls; it reads the clock twice per attempt
// (gobreaker reads it twice more).
//
// # Whose deadline
//
// What ends a call before the downstream answers decides what the breaker
// and the limiter learn from it. One rule: an attempt cut by the call's
// deadline (the context's, or retry.Config.Timeout's) counts as a failure
// for the breaker and a drop for the limiter only if it ran at least the
// downstream's normal latency, min(the limiter's RecentRTT, the breaker's
// SlowCall) (SlowCall before the first window with successes); cut
// sooner, it says nothing about the downstream and both ignore it. An
// attempt cut by retry.Config.AttemptTimeout always counts: it held a slot
// for nothing. A context that ended before the call is refused before any
// layer is touched (no slot, no permit, no budget deposit).
//
//	case                                                      breaker, limiter
//	8 callers with 1 ms deadlines, healthy 2 ms downstream    ignore: stays closed,
//	                                                          patient callers served
//	deadline 1 s only, downstream 100 ms -> 2 s (S1, 20×)     failures, drops:
//	                                                          limit 20 -> 1, opens
//	                                                          9.1 s after the onset
//	deadline 2 s only, downstream hangs from the start        failures, drops (SlowCall
//	                                                          1 s): opens after 2 s
//
// # Observing
//
// [WithObserver] installs an [Observer] that is told of every attempt,
// every call's [Outcome] and every breaker state change; package metrics
// provides one that exports Prometheus series. [WithLogger] logs breaker
// state changes and limit changes with log/slog. Without either, Guard makes
// no observer call. With an observer, the success path still reads the
// clock no more often; a call that fails reads it once more, for its
// duration.
//
// # Errors
//
// One rule: Guard returns fn's error as it is only when fn's only attempt
// failed with an error of a class that is never retried (permanent,
// unknown, the caller's cancellation: see [retry.Classify]); every other
// failure (every refusal, every call that made more than one attempt, a
// retryable error that was not retried) is an [*Error] with a non-nil
// Reason; fn's own error is always reachable with errors.Is and errors.As.
// [RetryAfter] reads the retry-after hint from any of them.
//
//	path                                         Guard returns         Reason
//	an attempt succeeded                         nil                   -
//	nil Gate, ctx or fn (nothing is touched)     *Error                ErrNilArgument
//	ctx ended before the call (nothing touched)  *Error                the context's error
//	fn's only attempt: an error never retried    fn's error, as it is  -
//	shed, first attempt                          the Gate's shared     ErrShed
//	                                             *Error (read-only)
//	shed, a retry                                *Error                ErrShed
//	breaker open                                 *Error                ErrOpen
//	deadline passed before an attempt            *Error                the context's error, or
//	                                                                   ErrDeadline (Timeout's)
//	next wait would outlast the deadline         *Error                ErrDeadline
//	server's hint longer than MaxDelay           *Error                ErrWaitTooLong
//	retry budget empty                           *Error                ErrBudgetExhausted
//	MaxAttempts made (1 included), error         *Error                ErrAttemptsExhausted
//	  retryable (1 attempt: WithRetriesOwned)
//	non-idempotent call without a key, error     *Error                ErrNotIdempotent (which
//	  retryable                                                        wraps ErrNotRetried)
//	a retry failed with an error never retried   *Error                ErrNotRetried, or
//	                                                                   context.Canceled
//	the context ended during a wait              *Error                the context's error
//
// An inner Gate's refusal before any attempt reached the downstream (shed,
// breaker open) is [retry.ClassRefused] to an outer Gate ([Error.RetryClass]),
// every other *Error [retry.ClassFailure] or [retry.ClassCanceled]: an outer
// Gate never retries an inner Gate's error. Mark errors with
// [retry.Permanent], [retry.Transient] and [retry.Overload] so that Guard
// knows which to retry.
package floodgate
