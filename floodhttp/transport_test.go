package floodhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
)

// fastRetry keeps the tests' backoff waits at a few milliseconds.
var fastRetry = retry.Config{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}

func newGate(t testing.TB, rc retry.Config) *floodgate.Gate {
	t.Helper()
	g, err := floodgate.New(t.Name(), floodgate.WithRetry(rc))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newClient(t testing.TB, g *floodgate.Gate, cfg Config) (*http.Client, *Transport) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	if cfg.Base == nil {
		cfg.Base = base
	}
	tr, err := NewTransport(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}, tr
}

// seen is what a test server saw of each request.
type seen struct {
	mu       sync.Mutex
	attempts []string // AttemptHeader
	timeouts []string // TimeoutHeader
	keys     []string // Idempotency-Key
	bodies   []string
}

func (s *seen) record(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, r.Header.Get(AttemptHeader))
	s.timeouts = append(s.timeouts, r.Header.Get(TimeoutHeader))
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	s.bodies = append(s.bodies, string(b))
}

func (s *seen) n() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.attempts) }

// statusServer answers its requests with statuses in turn, then with the
// last one.
func statusServer(t *testing.T, s *seen, statuses ...int) *httptest.Server {
	srv := unstartedStatusServer(s, statuses...)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func unstartedStatusServer(s *seen, statuses ...int) *httptest.Server {
	var i atomic.Int32
	return httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		n := int(i.Add(1)) - 1
		code := statuses[min(n, len(statuses)-1)]
		w.WriteHeader(code)
		_, _ = io.WriteString(w, strings.Repeat("x", 1000)) // an error page, drained
	}))
}

// Which requests are retried, by method and body (RFC 9110 §9.2.2 and
// draft-ietf-httpapi-idempotency-key-header), against a server answering
// 503 then 200: the attempts the server saw and what RoundTrip returned.
func TestTransportRetriesByMethodAndBody(t *testing.T) {
	for _, tc := range []struct {
		name     string
		method   string
		body     func() io.Reader // nil: no body
		noReplay bool             // drop GetBody: the body cannot be replayed
		key      string           // Idempotency-Key set by the caller
		genKeys  bool             // Config.IdempotencyKeys
		attempts int
		want     int // status returned; 0: an error
	}{
		{"GET", "GET", nil, false, "", false, 2, 200},
		{"HEAD", "HEAD", nil, false, "", false, 2, 200},
		{"PUT, body replayed", "PUT", func() io.Reader { return strings.NewReader("payload") }, false, "", false, 2, 200},
		{"DELETE", "DELETE", nil, false, "", false, 2, 200},
		{"POST without a key", "POST", func() io.Reader { return strings.NewReader("payload") }, false, "", false, 1, 0},
		{"PATCH without a key", "PATCH", func() io.Reader { return strings.NewReader("payload") }, false, "", false, 1, 0},
		{"POST with the caller's key", "POST", func() io.Reader { return strings.NewReader("payload") }, false, `"k-1"`, false, 2, 200},
		{"POST, key generated", "POST", func() io.Reader { return bytes.NewBufferString("payload") }, false, "", true, 2, 200},
		{"PUT, body not replayable", "PUT", func() io.Reader { return strings.NewReader("payload") }, true, "", false, 1, 0},
		{"POST with a key, body not replayable", "POST", func() io.Reader { return strings.NewReader("payload") }, true, `"k-2"`, true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			srv := statusServer(t, &s, 503, 200)
			client, _ := newClient(t, newGate(t, fastRetry), Config{IdempotencyKeys: tc.genKeys})
			var body io.Reader
			if tc.body != nil {
				body = tc.body()
			}
			req, err := http.NewRequest(tc.method, srv.URL, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.noReplay {
				req.GetBody = nil
			}
			if tc.key != "" {
				req.Header.Set("Idempotency-Key", tc.key)
			}
			resp, err := client.Do(req)
			got := 0
			if err == nil {
				got = resp.StatusCode
				resp.Body.Close()
			}
			if got != tc.want || s.n() != tc.attempts {
				t.Fatalf("status %d (err %v) after %d attempts; want %d after %d", got, err, s.n(), tc.want, tc.attempts)
			}
			if tc.want == 0 {
				var se *StatusError
				if !errors.As(err, &se) || se.StatusCode != 503 {
					t.Errorf("error %v does not carry the 503", err)
				}
				// The error says why it was not retried (a fresh user read
				// "error not retried" on a POST's 503 as a contradiction).
				// A body that cannot be replayed is marked non-idempotent
				// too, and its error says the same.
				if !errors.Is(err, floodgate.ErrNotIdempotent) || !strings.Contains(err.Error(), "without an idempotency key") {
					t.Errorf("error %v; want ErrNotIdempotent, saying so", err)
				}
			}
			for i := range s.n() {
				if tc.body != nil && s.bodies[i] != "payload" {
					t.Errorf("attempt %d sent body %q, want %q", i+1, s.bodies[i], "payload")
				}
				if s.keys[i] != s.keys[0] {
					t.Errorf("attempt %d sent key %q, the first %q: a retry must carry the same key", i+1, s.keys[i], s.keys[0])
				}
			}
			if tc.genKeys && tc.key == "" && (len(s.keys[0]) != 38 || s.keys[0][0] != '"') {
				t.Errorf("generated key %q, want a quoted UUID", s.keys[0])
			}
			if tc.key != "" && s.keys[0] != tc.key {
				t.Errorf("sent key %q, want the caller's %q", s.keys[0], tc.key)
			}
		})
	}
}

// The answers a GET gets, by the statuses the server gives: what comes
// back (the response, or an error with the status and the hint) after how
// many attempts (MaxAttempts 3).
func TestTransportAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int
		attempts int
		want     int // status returned; 0: an error wrapping errStatus
		errCode  int
	}{
		{"200", []int{200}, 1, 200, 0},
		{"404: permanent, returned", []int{404}, 1, 404, 0},
		{"501: permanent, returned", []int{501}, 1, 501, 0},
		{"503 then 404: the answer returned", []int{503, 404}, 2, 404, 0},
		{"500 twice then 200", []int{500, 500, 200}, 3, 200, 0},
		{"429, 408, 502: an error after 3", []int{429, 408, 502}, 3, 0, 502},
		{"503 always: an error after 3", []int{503}, 3, 0, 503},
		{"504 always", []int{504}, 3, 0, 504},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			srv := statusServer(t, &s, tc.statuses...)
			client, _ := newClient(t, newGate(t, fastRetry), Config{})
			resp, err := client.Get(srv.URL)
			got := 0
			if err == nil {
				got = resp.StatusCode
				if b, _ := io.ReadAll(resp.Body); len(b) != 1000 {
					t.Errorf("returned body %d bytes, want 1000", len(b))
				}
				resp.Body.Close()
			}
			if got != tc.want || s.n() != tc.attempts {
				t.Fatalf("status %d (err %v) after %d attempts; want %d after %d", got, err, s.n(), tc.want, tc.attempts)
			}
			var se *StatusError
			if tc.want == 0 && (!errors.As(err, &se) || se.StatusCode != tc.errCode || !errors.Is(err, floodgate.ErrAttemptsExhausted)) {
				t.Errorf("error %v: want ErrAttemptsExhausted wrapping status %d", err, tc.errCode)
			}
		})
	}
}

// A Retry-After beyond the retry loop's MaxDelay ends the call at once,
// with the server's hint on the error, whatever its form; a huge one does
// not overflow.
func TestTransportRetryAfterTooLong(t *testing.T) {
	for _, ra := range []string{"3600", "99999999999999999999", time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)} {
		var s seen
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.record(r)
			w.Header().Set("Retry-After", ra)
			w.WriteHeader(503)
		}))
		client, _ := newClient(t, newGate(t, fastRetry), Config{})
		_, err := client.Get(srv.URL)
		srv.Close()
		d, ok := floodgate.RetryAfter(err)
		if !errors.Is(err, floodgate.ErrWaitTooLong) || !ok || d < time.Hour || s.n() != 1 {
			t.Errorf("Retry-After %q: %d attempts, err %v, hint %v; want 1 attempt, ErrWaitTooLong, hint ≥ 1h", ra, s.n(), err, d)
		}
	}
}

// Each attempt carries its number and the time its deadline leaves, never
// more than the caller's; without a deadline no timeout is sent; both
// headers can be turned off.
func TestTransportHeaders(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		deadline  time.Duration
		attempts  []string
		noTimeout bool
	}{
		{"on, deadline 5 s", Config{}, 5 * time.Second, []string{"1", "2", "3"}, false},
		{"on, no deadline", Config{}, 0, []string{"1", "2", "3"}, true},
		{"off", Config{NoAttemptHeader: true, NoTimeoutHeader: true}, 5 * time.Second, []string{"", "", ""}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			srv := statusServer(t, &s, 503)
			client, _ := newClient(t, newGate(t, fastRetry), tc.cfg)
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			if _, err := client.Do(req); err == nil {
				t.Fatal("no error from an always-503 server")
			}
			for i, a := range tc.attempts {
				if s.attempts[i] != a {
					t.Errorf("attempt %d: %s %q, want %q", i+1, AttemptHeader, s.attempts[i], a)
				}
				d, ok := parseTimeout(s.timeouts[i])
				if tc.noTimeout && s.timeouts[i] != "" || !tc.noTimeout && (!ok || d > tc.deadline || d < tc.deadline-time.Second) {
					t.Errorf("attempt %d: %s %q, want %v", i+1, TimeoutHeader, s.timeouts[i], map[bool]string{true: "none", false: "at most " + tc.deadline.String()}[tc.noTimeout])
				}
			}
		})
	}
}

// The returned response's body stays readable after RoundTrip returns,
// although the Gate cancels its attempt context as the attempt returns
// (failsafe-go #123 and #65), and closing it ends the attempt: the server
// sees its request end.
func TestTransportBodyOutlivesAttempt(t *testing.T) {
	release := make(chan struct{})
	serverDone := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "head;")
		http.NewResponseController(w).Flush()
		if r.URL.Path == "/close" {
			<-r.Context().Done() // the client closed the body: its connection goes
			serverDone <- r.Context().Err()
			return
		}
		<-release
		_, _ = io.WriteString(w, "tail")
	}))
	defer srv.Close()
	// AttemptTimeout gives each attempt a context of its own, which
	// Guard cancels when the attempt returns.
	client, _ := newClient(t, newGate(t, retry.Config{AttemptTimeout: 10 * time.Second}), Config{})
	resp, err := client.Get(srv.URL + "/read")
	if err != nil {
		t.Fatal(err)
	}
	close(release) // the rest of the body comes after RoundTrip returned
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "head;tail" {
		t.Fatalf("body %q, err %v; want %q", b, err, "head;tail")
	}
	resp, err = client.Get(srv.URL + "/close")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	select {
	case err := <-serverDone:
		if err == nil {
			t.Fatal("server's request context did not end")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("closing the body did not end the request on the server within 10 s")
	}
}

// Failed attempts' bodies are drained and closed, so that every attempt of
// a call reuses one connection.
func TestTransportReusesConnections(t *testing.T) {
	var s seen
	srv := unstartedStatusServer(&s, 503, 503, 200)
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client, _ := newClient(t, newGate(t, fastRetry), Config{})
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s.n() != 3 || conns.Load() != 1 {
		t.Errorf("%d attempts over %d connections, want 3 over 1", s.n(), conns.Load())
	}
}

// hijack takes the connection of a handler's request and closes it
// without an answer: with reset, with an RST (SO_LINGER 0), otherwise with
// a FIN.
func hijack(t *testing.T, w http.ResponseWriter, reset bool) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	if tc, ok := c.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// A connection reset before the answer is transient: retried, on a new
// connection.
func TestTransportRetriesReset(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			hijack(t, w, true)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	client, tr := newClient(t, newGate(t, fastRetry), Config{})
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
	resp.Body.Close()
	if n.Load() != 2 || tr.HiddenRetries() != 0 {
		t.Errorf("%d requests, %d hidden retries; want 2 (a reset, then the Gate's retry), 0", n.Load(), tr.HiddenRetries())
	}
}

// net/http's Transport re-sends a GET that failed on a reused keep-alive
// connection before any answer, within one attempt: the Gate sees one
// attempt, the server two requests, and the Transport counts one hidden
// retry.
func TestTransportCountsHiddenRetries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wrap    bool // Base is not an *http.Transport: a tracer of its own
		caller  bool // the caller's context has a trace: composed with it
		callers int32
	}{
		{"http.Transport", false, false, 0},
		{"wrapped Base", true, false, 0},
		{"caller's trace", false, true, 3}, // GetConn: 1, then 2 (net/http re-sent the second)
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 2 { // the second request, on the first's kept connection
					hijack(t, w, false)
					return
				}
				_, _ = io.WriteString(w, "ok")
			}))
			defer srv.Close()
			var hooked, callers atomic.Int32
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			cfg := Config{Base: base, OnHiddenRetry: func(k int) { hooked.Add(int32(k)) }}
			if tc.wrap {
				cfg.Base = rtFunc(base.RoundTrip)
			}
			client, tr := newClient(t, newGate(t, fastRetry), cfg)
			ctx := context.Background()
			if tc.caller {
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GetConn: func(string) { callers.Add(1) }})
			}
			attempts := 0
			for range 2 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				attempts++
			}
			t.Logf("%d calls, %d requests on the server, %d hidden retries", attempts, n.Load(), tr.HiddenRetries())
			if n.Load() != 3 || tr.HiddenRetries() != 1 || hooked.Load() != 1 {
				t.Errorf("%d requests, %d hidden retries, hook told of %d; want 3, 1, 1", n.Load(), tr.HiddenRetries(), hooked.Load())
			}
			if callers.Load() != tc.callers {
				t.Errorf("the caller's trace heard %d GetConn, want %d", callers.Load(), tc.callers)
			}
		})
	}
}

// A request the Gate refuses is never sent, and its body is closed.
func TestTransportClosesBodyWhenRefused(t *testing.T) {
	g := newGate(t, fastRetry)
	for !g.Breaker().OpenAt(time.Now()) && g.Stats().Breaker.String() != "open" {
		_ = g.Guard(context.Background(), func(context.Context) error { return retry.Transient(errors.New("down")) })
	}
	client, _ := newClient(t, g, Config{})
	b := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest("PUT", "http://127.0.0.1:1/", b)
	_, err := client.Do(req)
	if !errors.Is(err, floodgate.ErrOpen) || !b.closed {
		t.Errorf("err %v, body closed %v; want ErrOpen, true", err, b.closed)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestNewTransportNilGate(t *testing.T) {
	if _, err := NewTransport(nil, Config{}); err == nil {
		t.Error("NewTransport(nil) did not fail")
	}
	if _, err := NewClient(nil, Config{}); err == nil {
		t.Error("NewClient(nil) did not fail")
	}
}

// A failed attempt whose body stalls (a 503 that declares 4000 bytes,
// sends 10 and stops) is drained for at most drainTime, then closed: the
// retries go on, with no deadline to end them.
func TestTransportDrainOfStalledBodyIsBounded(t *testing.T) {
	var n atomic.Int32
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Length", "4000")
		w.WriteHeader(503)
		_, _ = io.WriteString(w, "0123456789")
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	client, _ := newClient(t, newGate(t, fastRetry), Config{})
	start := time.Now()
	_, err := client.Get(srv.URL) // no deadline
	took := time.Since(start)
	if !errors.Is(err, floodgate.ErrAttemptsExhausted) || n.Load() != 3 {
		t.Fatalf("err %v after %d requests, want ErrAttemptsExhausted after 3", err, n.Load())
	}
	if took < 3*drainTime || took > 3*drainTime+5*time.Second {
		t.Errorf("took %v, want about 3 × %v (each stalled drain cut)", took, drainTime)
	}
}

// The classification is replaceable: a Classifier that calls 404 transient
// makes it retried, and one that calls 503 permanent returns it at once.
func TestTransportCustomClassifier(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []int
		classify Classifier
		attempts int
		want     int
	}{
		{"404 transient", []int{404, 404, 200}, func(resp *http.Response, err error) error {
			if err == nil && resp.StatusCode == 404 {
				return retry.Transient(&StatusError{StatusCode: 404})
			}
			return Classify(resp, err)
		}, 3, 200},
		{"503 permanent", []int{503, 200}, func(resp *http.Response, err error) error {
			if err == nil && resp.StatusCode == 503 {
				return retry.Permanent(&StatusError{StatusCode: 503})
			}
			return Classify(resp, err)
		}, 1, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			srv := statusServer(t, &s, tc.statuses...)
			client, _ := newClient(t, newGate(t, fastRetry), Config{Classify: tc.classify})
			resp, err := client.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want || s.n() != tc.attempts {
				t.Errorf("status %d after %d attempts, want %d after %d", resp.StatusCode, s.n(), tc.want, tc.attempts)
			}
		})
	}
}

// A body that GetBody cannot replay ends the call after the attempt that
// sent it, never counted against the downstream.
func TestTransportGetBodyFails(t *testing.T) {
	var s seen
	srv := statusServer(t, &s, 503)
	g := newGate(t, fastRetry)
	client, _ := newClient(t, g, Config{})
	req, _ := http.NewRequest("PUT", srv.URL, strings.NewReader("payload"))
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("spool gone") }
	_, err := client.Do(req)
	if !errors.Is(err, floodgate.ErrNotRetried) || s.n() != 1 || !strings.Contains(err.Error(), "spool gone") {
		t.Errorf("err %v after %d requests; want ErrNotRetried with GetBody's error after 1", err, s.n())
	}
	if c := g.Breaker().Counts(); c.Calls != 1 {
		t.Errorf("breaker counted %d calls, want 1 (the refused replay is not one)", c.Calls)
	}
}

// The caller's request is left as it was, with or without headers of its
// own, and the response's Request is it; a caller's own ClientTrace still
// hears its hooks, beside the Transport's; a Base that (against
// http.RoundTripper's rule) modifies the headers it is given modifies a
// copy of its own.
func TestTransportLeavesRequestAlone(t *testing.T) {
	if traceKey == nil {
		t.Error("traceKey not found: each RoundTrip wraps its context with httptrace.WithClientTrace")
	}
	for _, tc := range []struct {
		name    string
		header  http.Header
		trace   bool
		rogue   bool // Base sets a header on the request it is given
		timeout time.Duration
	}{
		{"no headers", http.Header{}, false, false, 0},
		{"nil headers", nil, false, false, 0},
		{"headers", http.Header{"X-Own": {"a"}}, false, false, 0},
		{"headers and a deadline", http.Header{"X-Own": {"a"}}, false, false, 5 * time.Second},
		{"caller's trace", http.Header{}, true, false, 0},
		{"rogue Base", http.Header{}, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seen
			srv := statusServer(t, &s, 503, 200)
			base := &http.Transport{}
			t.Cleanup(base.CloseIdleConnections)
			var rt http.RoundTripper = base
			if tc.rogue {
				rt = rtFunc(func(r *http.Request) (*http.Response, error) {
					r.Header.Set("X-Rogue", r.Header.Get(AttemptHeader))
					return base.RoundTrip(r)
				})
			}
			_, tr := newClient(t, newGate(t, fastRetry), Config{Base: rt})
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			var gotConns atomic.Int32
			if tc.trace {
				ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GetConn: func(string) { gotConns.Add(1) }})
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			req.Header = tc.header
			before := fmt.Sprint(req.Header)
			for range 2 {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.Request != req {
					t.Errorf("resp.Request %p, want the caller's %p", resp.Request, req)
				}
			}
			if after := fmt.Sprint(req.Header); after != before {
				t.Errorf("the caller's Header went from %s to %s", before, after)
			}
			if fmt.Sprint(attemptHeaders[0]) != "map[Floodgate-Attempt:[1]]" {
				t.Errorf("the shared header of attempt 1 is now %v", attemptHeaders[0])
			}
			if tc.trace && gotConns.Load() != 3 {
				t.Errorf("the caller's trace heard %d GetConn, want 3 (503, 200, 200)", gotConns.Load())
			}
			if s.n() != 3 || s.attempts[0] != "1" || s.attempts[1] != "2" || s.attempts[2] != "1" {
				t.Errorf("the server saw attempts %q, want [1 2 1]", s.attempts)
			}
		})
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// With retry.Config.AttemptTimeout, attempts of requests without headers
// of their own share the Transport's last Header when their attempt
// number and time left match: each still sends its own number and a time
// left within its attempt's.
func TestTransportSharesTimeoutHeader(t *testing.T) {
	var s seen
	srv := statusServer(t, &s, 503, 200)
	rc := fastRetry
	rc.AttemptTimeout = 5 * time.Second
	client, tr := newClient(t, newGate(t, rc), Config{})
	for range 3 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if want := "[1 2 1 1]"; fmt.Sprint(s.attempts) != want {
		t.Errorf("attempts %v, want %s", s.attempts, want)
	}
	for i, v := range s.timeouts {
		if d, ok := parseTimeout(v); !ok || d > rc.AttemptTimeout || d < rc.AttemptTimeout-time.Second {
			t.Errorf("attempt %d: %s %q, want at most %v", i+1, TimeoutHeader, v, rc.AttemptTimeout)
		}
	}
	if e := tr.lastHdr.Load(); e == nil || len(e.h) != 2 || e.h.Get(AttemptHeader) != strconv.Itoa(e.n) {
		t.Errorf("the shared Header is %+v, want the last attempt's two headers", e)
	}
}
