package retry

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"
)

// Class is what an attempt's error says about the downstream, and so
// whether it is retried and how the breaker and the limiter count it.
type Class uint8

const (
	// ClassSuccess: no error.
	ClassSuccess Class = iota
	// ClassPermanent: the downstream answered and retrying cannot help (HTTP
	// 400, 401, 404). Not retried; a success for the breaker; ignored by
	// the limiter.
	ClassPermanent
	// ClassFailure: an error of unknown kind. Not retried; a failure for the
	// breaker; ignored by the limiter.
	ClassFailure
	// ClassTransient: a failure that may pass (connection reset). Retried; a
	// failure for the breaker; ignored by the limiter.
	ClassTransient
	// ClassOverload: a timeout or an overload answer (HTTP 503, 429). Retried; a
	// failure for the breaker; a drop for the limiter.
	ClassOverload
	// ClassCanceled: the caller cancelled. Not retried; ignored by the breaker
	// and the limiter.
	ClassCanceled
	// ClassRefused: an inner Gate refused the call before it reached the
	// downstream (its limiter shed it, or its breaker was open). Not
	// retried (the inner Gate owns that decision, and its error carries
	// when to come back); ignored by the breaker and the limiter, as a
	// Gate's own refusals are: counting them would let an overload that the
	// inner limiter handles by shedding open the outer breaker.
	ClassRefused
)

// String returns the class's name in lower case.
func (c Class) String() string {
	switch c {
	case ClassSuccess:
		return "success"
	case ClassPermanent:
		return "permanent"
	case ClassFailure:
		return "failure"
	case ClassTransient:
		return "transient"
	case ClassOverload:
		return "overload"
	case ClassCanceled:
		return "canceled"
	case ClassRefused:
		return "refused"
	}
	return "unknown"
}

// Retryable reports whether the class is retried: ClassTransient and ClassOverload.
func (c Class) Retryable() bool { return c == ClassTransient || c == ClassOverload }

// Classified is implemented by errors that carry their own Class; the
// errors made by [Permanent], [Transient] and [Overload] do.
type Classified interface {
	error
	RetryClass() Class
}

// Hinted is implemented by errors that carry a server's retry-after hint
// (HTTP Retry-After), a duration ≥ 0.
type Hinted interface {
	error
	RetryAfter() time.Duration
}

type marked struct {
	err   error
	class Class
	after time.Duration
}

func (e *marked) Error() string             { return e.err.Error() }
func (e *marked) Unwrap() error             { return e.err }
func (e *marked) RetryClass() Class         { return e.class }
func (e *marked) RetryAfter() time.Duration { return e.after }

// Permanent marks err as permanent: it is never retried and does not count
// as a failure for the breaker. Permanent(nil) is nil.
func Permanent(err error) error { return mark(err, ClassPermanent, 0) }

// Transient marks err as transient: it is retried. Transient(nil) is nil.
func Transient(err error) error { return mark(err, ClassTransient, 0) }

// Overload marks err as an overload answer (HTTP 503 or 429, gRPC
// RESOURCE_EXHAUSTED): it is retried, counts as a drop for the limiter, and
// carries the server's retry-after hint (0 for none; a negative hint is
// taken as 0). Overload(nil, d) is nil.
func Overload(err error, retryAfter time.Duration) error {
	return mark(err, ClassOverload, max(retryAfter, 0))
}

func mark(err error, c Class, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, class: c, after: after}
}

// Classify is the default classifier:
//   - nil: ClassSuccess;
//   - an error in the chain that implements [Classified]: its class;
//   - context.Canceled: ClassCanceled;
//   - context.DeadlineExceeded, or an error with Timeout() true (net.Error):
//     ClassOverload;
//   - connection refused or reset, or an unexpected EOF (the connection
//     broke mid-answer): ClassTransient;
//   - anything else: ClassFailure (not retried).
func Classify(err error) Class {
	if err == nil {
		return ClassSuccess
	}
	var c Classified
	if errors.As(err, &c) {
		return c.RetryClass()
	}
	if errors.Is(err, context.Canceled) {
		return ClassCanceled
	}
	var t interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &t) && t.Timeout() {
		return ClassOverload
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ClassTransient
	}
	return ClassFailure
}

// Hint returns the retry-after hint of the first error in err's chain that
// implements [Hinted] with a hint > 0; ok is false when there is none.
func Hint(err error) (d time.Duration, ok bool) {
	for err != nil {
		if h, ok := err.(Hinted); ok && h.RetryAfter() > 0 {
			return h.RetryAfter(), true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if d, ok := Hint(e); ok {
					return d, true
				}
			}
			return 0, false
		default:
			return 0, false
		}
	}
	return 0, false
}
