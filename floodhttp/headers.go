package floodhttp

import (
	"net/http"
	"strconv"
	"time"
)

// The request headers a [Transport] sends and a [Handler] reads. Both
// ends are optional: a Handler without them, or behind a client that is
// not floodgate's, works as any middleware; a Transport to a server that
// ignores them works as any client.
const (
	// AttemptHeader carries the attempt number, 1 for the first ("2" is
	// the first retry), and says that the sender owns the retries of this
	// request: a Handler puts floodgate.WithRetriesOwned into the
	// request's context, so that the Gates of its handler make one
	// attempt per call.
	AttemptHeader = "Floodgate-Attempt"
	// TimeoutHeader carries the time the attempt has left before its
	// deadline, as a whole number of milliseconds followed by "ms"
	// ("1234ms"), rounded down, so that the receiver's deadline is never
	// later than the sender's. It is relative, never a timestamp: the two
	// machines' clocks need not agree. A Handler sets its request
	// context's deadline to now plus this, capped by its own.
	TimeoutHeader = "Floodgate-Timeout"
)

// maxTimeoutMS is the largest TimeoutHeader value, 8 digits as grpc-timeout
// allows (99999999 ms, 27.8 h); a longer time left is not sent.
const maxTimeoutMS = 99_999_999

// timeoutMS returns d as a TimeoutHeader's milliseconds, rounded down; ok
// is false when d is more than 99999999 ms.
func timeoutMS(d time.Duration) (ms int64, ok bool) {
	ms = max(d.Milliseconds(), 0) // rounds toward 0: down for d ≥ 0
	return ms, ms <= maxTimeoutMS
}

// appendTimeout appends ms milliseconds as a TimeoutHeader value to b.
func appendTimeout(b []byte, ms int64) []byte {
	return append(strconv.AppendInt(b, ms, 10), 'm', 's')
}

// parseTimeout reads a TimeoutHeader value: 1 to 8 digits then "ms".
// Anything else is ignored (ok false).
func parseTimeout(v string) (time.Duration, bool) {
	n := len(v) - 2
	if n < 1 || n > 8 || v[n:] != "ms" {
		return 0, false
	}
	var ms int64
	for i := range n {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return time.Duration(ms) * time.Millisecond, true
}

// parseAttempt reads an AttemptHeader value: a number from 1 to 9999.
func parseAttempt(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 9999 || len(v) > 4 {
		return 0, false
	}
	return n, true
}

// attemptValues holds the AttemptHeader values of the first attempts, so
// that sending one does not allocate.
var attemptValues = func() (v [10][]string) {
	for i := range v {
		v[i] = []string{strconv.Itoa(i + 1)}
	}
	return v
}()

// attemptHeaders holds the Header of an attempt of a request without
// headers of its own, for the first attempts, shared by all: sent only
// through an *http.Transport, which does not modify it.
var attemptHeaders = func() (h [len(attemptValues)]http.Header) {
	for i := range h {
		h[i] = http.Header{AttemptHeader: attemptValues[i]}
	}
	return h
}()
