package floodgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// Sentinel errors, for errors.Is: the Reason of an [Error]. Those from the
// sub-packages are the same values, so either name matches.
var (
	// ErrShed: the concurrency limit was reached and the call was shed at
	// once, without reaching the downstream.
	ErrShed = adaptive.ErrShed
	// ErrOpen: the circuit breaker is open (or half-open with every probe
	// out); the returned error's RetryAfter is the time until it admits a
	// probe.
	ErrOpen = breaker.ErrOpen
	// ErrBudgetExhausted: a retry was due but the retry budget was empty.
	ErrBudgetExhausted = retry.ErrBudgetExhausted
	// ErrDeadline: the wait before the next attempt (backoff or the
	// server's retry-after hint) would end at or past the call's deadline,
	// so the call ended at once instead of sleeping; or the deadline set by
	// the retry policy's Timeout passed.
	ErrDeadline = retry.ErrDeadline
	// ErrAttemptsExhausted: the last attempt's error would have been
	// retried, but MaxAttempts attempts were made (1 included), or the
	// one attempt of a call whose context says an upstream owns the
	// retries ([WithRetriesOwned]).
	ErrAttemptsExhausted = retry.ErrAttemptsExhausted
	// ErrWaitTooLong: the server's retry-after hint is longer than the retry
	// policy's MaxDelay; the call ended at once with the hint, whatever its
	// deadline.
	ErrWaitTooLong = retry.ErrWaitTooLong
	// ErrNotRetried: the last attempt's error is not retried, after a call
	// that made more than one attempt (its class is permanent or unknown);
	// errors.Is(err, ErrNotRetried) also holds for ErrNotIdempotent.
	ErrNotRetried = retry.ErrNotRetried
	// ErrNotIdempotent: a non-idempotent call's only attempt (marked with
	// retry.NonIdempotent, without retry.WithIdempotencyKey; floodhttp
	// marks a request whose method RFC 9110 does not make idempotent and
	// that has no Idempotency-Key header, and one whose body it cannot
	// replay) failed with an error that would otherwise be retried. It
	// wraps ErrNotRetried.
	ErrNotIdempotent = retry.ErrNotIdempotent
	// ErrNilArgument: Guard or Do was called with a nil Gate, ctx or fn;
	// nothing was called and no layer was touched.
	ErrNilArgument = errors.New("floodgate: nil Gate, ctx or fn")
)

// Error is the error Guard returns for every failure but one whose only
// attempt failed with an error that is never retried: every refusal, every
// call that made more than one attempt, a retryable error that was not
// retried (see the package doc's table). It wraps both Reason and the last
// attempt's error, so errors.Is and errors.As see through it.
//
// The Error of a call shed at its first attempt is one value per Gate,
// shared by every such call (so that shedding allocates nothing): treat
// every Error as read-only.
//
// An Error is not retried by an outer Gate (its class is Refused when this
// Gate shed the call or its breaker was open before any attempt reached the
// downstream, Canceled when the caller cancelled, Failure otherwise):
// retries stay in one layer, and an outer Gate's breaker does not count
// this Gate's refusals.
type Error struct {
	// Gate is the name of the gate.
	Gate string
	// Reason is ErrShed, ErrOpen, ErrAttemptsExhausted,
	// ErrBudgetExhausted, ErrDeadline, ErrWaitTooLong, ErrNotRetried,
	// ErrNotIdempotent, ErrNilArgument or the context's error (context.Canceled, context.DeadlineExceeded);
	// never nil in an Error that Guard returns.
	Reason error
	// Last is the last attempt's error; nil when no attempt reached the
	// downstream.
	Last error
	// Attempts counts the attempts that reached the downstream.
	Attempts int
	// Hint is how long the caller should wait before trying again: the
	// server's retry-after hint, or the time until the breaker admits a
	// probe; 0 if unknown.
	Hint time.Duration
}

// Error returns a message with the gate, the reason, the attempt count and
// the hint in parentheses, and the last error: for example
// `floodgate: gate "quotes": error not retried (3 attempts): status 404`.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "floodgate: gate %q", e.Gate)
	if e.Reason != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Reason.Error(), "floodgate: "))
	}
	// The count and the hint go in parentheses: "error not retried after 3
	// attempts" read as a contradiction to a new user.
	switch {
	case e.Attempts > 0 && e.Hint > 0:
		fmt.Fprintf(&b, " (%d %s, retry after %v)", e.Attempts, attemptsWord(e.Attempts), e.Hint)
	case e.Attempts > 0:
		fmt.Fprintf(&b, " (%d %s)", e.Attempts, attemptsWord(e.Attempts))
	case e.Hint > 0:
		fmt.Fprintf(&b, " (retry after %v)", e.Hint)
	}
	if e.Last != nil {
		b.WriteString(": ")
		b.WriteString(e.Last.Error())
	}
	return b.String()
}

func attemptsWord(n int) string {
	if n == 1 {
		return "attempt"
	}
	return "attempts"
}

// Unwrap returns Reason and Last, those that are not nil.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	for _, err := range []error{e.Reason, e.Last} {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// Is reports whether target is one of this package's sentinel errors and
// is e's Reason (ErrNotRetried also when the Reason is ErrNotIdempotent,
// which wraps it), so that errors.Is(err, ErrShed) answers without
// Unwrap's allocation; for any other target errors.Is goes on through
// Unwrap.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrShed, ErrOpen, ErrBudgetExhausted, ErrDeadline, ErrAttemptsExhausted, ErrWaitTooLong, ErrNotRetried, ErrNotIdempotent, ErrNilArgument:
		return errors.Is(e.Reason, target) // ErrNotIdempotent wraps ErrNotRetried
	}
	return false
}

// RetryAfter returns Hint, so that [RetryAfter] and an outer Gate see it.
func (e *Error) RetryAfter() time.Duration { return e.Hint }

// RetryClass keeps an outer Gate from retrying what this one gave up on:
// ClassRefused when this Gate refused the call before any attempt reached
// the downstream (Reason ErrShed or ErrOpen, Attempts 0), so that an outer
// Gate's breaker and limiter do not count it; ClassCanceled when the caller
// cancelled; ClassFailure otherwise, including a refusal after an attempt
// that reached the downstream and failed.
func (e *Error) RetryClass() retry.Class {
	switch {
	case errors.Is(e.Reason, context.Canceled):
		return retry.ClassCanceled
	case e.Attempts == 0 && (e.Reason == ErrShed || e.Reason == ErrOpen):
		return retry.ClassRefused
	}
	return retry.ClassFailure
}

// RetryAfter returns the retry-after hint carried by err or any error it
// wraps (an [Error]'s Hint, or a server's hint set with [retry.Overload]),
// and whether there was one greater than 0.
func RetryAfter(err error) (time.Duration, bool) { return retry.Hint(err) }
