package floodhttp

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/floodgate-go/floodgate/retry"
)

// StatusError is an HTTP answer that a [Classifier] counts as a failure.
type StatusError struct {
	// StatusCode is the answer's status code.
	StatusCode int
	// RetryAfter is the answer's Retry-After hint ([ParseRetryAfter]), 0
	// if none or malformed.
	RetryAfter time.Duration
}

// Error returns "floodhttp: status 503 Service Unavailable".
func (e *StatusError) Error() string {
	s := "floodhttp: status " + strconv.Itoa(e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	return s
}

// A Classifier maps one attempt's result, the response (nil if err is not
// nil) or the base transport's error, to the error its Gate classifies
// with retry.Classify: nil for a success, or an error marked with
// retry.Permanent, retry.Transient or retry.Overload, or an unmarked
// error, which retry.Classify reads as it does any error (timeouts,
// refused and reset connections are retried; anything else is not). It
// must not read or close the body. [Classify] is the default.
type Classifier func(resp *http.Response, err error) error

// Classify is the default [Classifier], RFC 9110's status codes mapped to
// the Gate's classes:
//
//	result                                  error              Gate: retried, breaker, limiter
//	1xx, 2xx, 3xx                           nil                success: RTT is a sample
//	429, 503                                Overload(hint)     yes, failure, drop
//	408, 502, 504, other 5xx (500, 505...)  Transient          yes, failure, ignored
//	501, other 4xx                          Permanent          no, success, ignored
//	a status of 600 or more                 *StatusError       no, failure, ignored
//	io.EOF (closed before an answer)        Transient          yes, failure, ignored
//	timeout, context.DeadlineExceeded       as it is           yes (overload), failure, drop
//	connection refused or reset             as it is           yes (transient), failure, ignored
//	context.Canceled                        as it is           no, ignored, ignored
//	any other error                         as it is           no, failure, ignored
//
// "Retried" is subject to the method (see [Transport]) and the Gate's
// budget, attempts and deadline. The hint is the Retry-After header read
// against the answer's Date header when it has a valid one (so that the
// two clocks need not agree), else against the local clock. The errors
// wrap a *StatusError.
func Classify(resp *http.Response, err error) error {
	if err != nil {
		if errors.Is(err, io.EOF) {
			return retry.Transient(err)
		}
		return err
	}
	code := resp.StatusCode
	switch {
	case code < 400:
		return nil
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		hint := retryAfter(resp.Header)
		return retry.Overload(&StatusError{StatusCode: code, RetryAfter: hint}, hint)
	case code == http.StatusNotImplemented:
		return retry.Permanent(&StatusError{StatusCode: code})
	case code == http.StatusRequestTimeout || code >= 500 && code < 600:
		return retry.Transient(&StatusError{StatusCode: code, RetryAfter: retryAfter(resp.Header)})
	case code < 500:
		return retry.Permanent(&StatusError{StatusCode: code})
	}
	return &StatusError{StatusCode: code}
}

// retryAfter is h's Retry-After hint, 0 if none.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	now := time.Now()
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		now = t
	}
	d, _ := ParseRetryAfter(v, now)
	return d
}
