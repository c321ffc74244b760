package floodhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate/retry"
)

// The default classification, status by status and for the transport's
// errors: what a Gate retries, and what its breaker and limiter count.
func TestClassify(t *testing.T) {
	resp := func(code int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	for _, tc := range []struct {
		name  string
		resp  *http.Response
		err   error
		class retry.Class
		hint  time.Duration
	}{
		{"200", resp(200, ""), nil, retry.ClassSuccess, 0},
		{"204", resp(204, ""), nil, retry.ClassSuccess, 0},
		{"304", resp(304, ""), nil, retry.ClassSuccess, 0},
		{"101", resp(101, ""), nil, retry.ClassSuccess, 0},
		{"429 Retry-After 7", resp(429, "7"), nil, retry.ClassOverload, 7 * time.Second},
		{"503 Retry-After 2", resp(503, "2"), nil, retry.ClassOverload, 2 * time.Second},
		{"503 Retry-After garbage", resp(503, "soon"), nil, retry.ClassOverload, 0},
		{"503", resp(503, ""), nil, retry.ClassOverload, 0},
		{"408", resp(408, ""), nil, retry.ClassTransient, 0},
		{"502", resp(502, ""), nil, retry.ClassTransient, 0},
		{"504", resp(504, ""), nil, retry.ClassTransient, 0},
		{"500", resp(500, ""), nil, retry.ClassTransient, 0},
		{"507", resp(507, ""), nil, retry.ClassTransient, 0},
		{"501", resp(501, ""), nil, retry.ClassPermanent, 0},
		{"400", resp(400, ""), nil, retry.ClassPermanent, 0},
		{"404", resp(404, ""), nil, retry.ClassPermanent, 0},
		{"499", resp(499, ""), nil, retry.ClassPermanent, 0},
		{"600", resp(600, ""), nil, retry.ClassFailure, 0},
		{"io.EOF", nil, io.EOF, retry.ClassTransient, 0},
		{"connection refused", nil, syscall.ECONNREFUSED, retry.ClassTransient, 0},
		{"connection reset", nil, syscall.ECONNRESET, retry.ClassTransient, 0},
		{"deadline", nil, context.DeadlineExceeded, retry.ClassOverload, 0},
		{"canceled", nil, context.Canceled, retry.ClassCanceled, 0},
		{"other error", nil, errors.New("tls: bad certificate"), retry.ClassFailure, 0},
	} {
		e := Classify(tc.resp, tc.err)
		if c := retry.Classify(e); c != tc.class {
			t.Errorf("%s: class %v, want %v", tc.name, c, tc.class)
		}
		if d, _ := retry.Hint(e); d != tc.hint {
			t.Errorf("%s: hint %v, want %v", tc.name, d, tc.hint)
		}
		var se *StatusError
		if tc.resp != nil && tc.class != retry.ClassSuccess && (!errors.As(e, &se) || se.StatusCode != tc.resp.StatusCode) {
			t.Errorf("%s: %v does not wrap a *StatusError with the status", tc.name, e)
		}
	}
}

// A Retry-After date is read against the answer's Date header, so that
// the server's clock, not the client's, decides the wait.
func TestClassifyRetryAfterDateAgainstDateHeader(t *testing.T) {
	h := http.Header{}
	h.Set("Date", "Sun, 06 Nov 1994 08:49:37 GMT")
	h.Set("Retry-After", "Sun, 06 Nov 1994 08:50:07 GMT")
	d, _ := retry.Hint(Classify(&http.Response{StatusCode: 503, Header: h}, nil))
	if d != 30*time.Second {
		t.Errorf("hint %v, want 30s (Retry-After − Date)", d)
	}
}

// Classify is total: for any status and Retry-After it never panics, a
// status below 400 is a success, and every failure's class is the table's.
func FuzzClassify(f *testing.F) {
	for _, c := range []int{100, 200, 399, 400, 408, 429, 499, 500, 501, 503, 504, 599, 600, 999, 0, -1} {
		f.Add(c, "1", "")
	}
	f.Add(503, "Sun, 06 Nov 1994 08:50:07 GMT", "Sun, 06 Nov 1994 08:49:37 GMT")
	f.Add(429, "99999999999999999999", "garbage")
	f.Fuzz(func(t *testing.T, code int, retryAfter, date string) {
		h := http.Header{}
		h["Retry-After"] = []string{retryAfter}
		h["Date"] = []string{date}
		e := Classify(&http.Response{StatusCode: code, Header: h}, nil)
		c := retry.Classify(e)
		var want retry.Class
		switch {
		case code < 400:
			want = retry.ClassSuccess
		case code == 429 || code == 503:
			want = retry.ClassOverload
		case code == 501:
			want = retry.ClassPermanent
		case code == 408 || code >= 500 && code < 600:
			want = retry.ClassTransient
		case code < 500:
			want = retry.ClassPermanent
		default:
			want = retry.ClassFailure
		}
		if c != want {
			t.Fatalf("status %d: class %v, want %v", code, c, want)
		}
		if d, _ := retry.Hint(e); d < 0 || d > MaxRetryAfter {
			t.Fatalf("status %d, Retry-After %q: hint %v out of [0, MaxRetryAfter]", code, retryAfter, d)
		}
		if e != nil && !errorsAsStatus(e, code) {
			t.Fatalf("status %d: %v does not wrap a *StatusError with the status", code, e)
		}
	})
}

func errorsAsStatus(e error, code int) bool {
	var se *StatusError
	return errors.As(e, &se) && se.StatusCode == code
}
