package floodhttp

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
)

func newHandler(t *testing.T, next http.Handler, cfg HandlerConfig) *Handler {
	t.Helper()
	h, err := NewHandler(next, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Over the limit the Handler answers at once, before the handler runs,
// with the configured status and Retry-After.
func TestHandlerShedsOverTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        HandlerConfig
		status     int
		retryAfter string
	}{
		{"defaults", HandlerConfig{}, 503, "1"},
		{"429, 2.5 s", HandlerConfig{Status: 429, RetryAfter: 2500 * time.Millisecond}, 429, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var mu sync.Mutex
			ran := 0
			tc.cfg.Limiter = adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}
			h := newHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				ran++
				mu.Unlock()
				entered <- struct{}{}
				<-release
			}), tc.cfg)
			srv := httptest.NewServer(h)
			defer srv.Close()
			done := make(chan error, 1)
			go func() {
				resp, err := http.Get(srv.URL)
				if err == nil {
					resp.Body.Close()
				}
				done <- err
			}()
			<-entered // the only slot is held
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryAfter || ran != 1 || h.Shed() != 1 {
				t.Errorf("shed answer %d, Retry-After %q, handler ran %d times, Shed %d; want %d, %q, 1, 1",
					resp.StatusCode, resp.Header.Get("Retry-After"), ran, h.Shed(), tc.status, tc.retryAfter)
			}
			http.DefaultClient.CloseIdleConnections()
		})
	}
}

// The request context a handler runs with, by the headers it came with:
// AttemptHeader puts "an upstream owns the retries" into it, TimeoutHeader
// its deadline (capped by Timeout); malformed values, and the headers when
// turned off, are ignored.
func TestHandlerOwnershipAndDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     HandlerConfig
		headers map[string]string
		owned   bool
		left    time.Duration // the deadline's time left as the handler starts; 0: none
	}{
		{"no headers", HandlerConfig{}, nil, false, 0},
		{"attempt 1", HandlerConfig{}, map[string]string{AttemptHeader: "1"}, true, 0},
		{"attempt 3, timeout 1500ms", HandlerConfig{}, map[string]string{AttemptHeader: "3", TimeoutHeader: "1500ms"}, true, 1500 * time.Millisecond},
		{"timeout 0ms", HandlerConfig{}, map[string]string{TimeoutHeader: "0ms"}, false, -1},
		{"timeout capped by Timeout 500 ms", HandlerConfig{Timeout: 500 * time.Millisecond}, map[string]string{TimeoutHeader: "9000ms"}, false, 500 * time.Millisecond},
		{"Timeout 500 ms, shorter header", HandlerConfig{Timeout: 500 * time.Millisecond}, map[string]string{TimeoutHeader: "200ms"}, false, 200 * time.Millisecond},
		{"Timeout alone", HandlerConfig{Timeout: 700 * time.Millisecond}, nil, false, 700 * time.Millisecond},
		{"malformed", HandlerConfig{}, map[string]string{AttemptHeader: "0", TimeoutHeader: "1.5s"}, false, 0},
		{"malformed 2", HandlerConfig{}, map[string]string{AttemptHeader: "-1", TimeoutHeader: "123456789ms"}, false, 0},
		{"ignored", HandlerConfig{IgnoreAttemptHeader: true, IgnoreTimeoutHeader: true},
			map[string]string{AttemptHeader: "1", TimeoutHeader: "1500ms"}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				owned    bool
				deadline time.Time
				hasD     bool
				start    time.Time
			)
			h := newHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				owned = floodgate.RetriesOwned(r.Context())
				deadline, hasD = r.Context().Deadline()
			}), tc.cfg)
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer http.DefaultClient.CloseIdleConnections()
			req, _ := http.NewRequest("GET", srv.URL, nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			start = time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			end := time.Now()
			if owned != tc.owned {
				t.Errorf("RetriesOwned %v, want %v", owned, tc.owned)
			}
			switch {
			case tc.left == 0 && hasD:
				t.Errorf("deadline %v ahead, want none", deadline.Sub(start))
			case tc.left < 0 && (!hasD || deadline.After(end)):
				t.Errorf("deadline %v (set %v), want one already passed", deadline.Sub(start), hasD)
			case tc.left > 0 && (!hasD || deadline.Before(start.Add(tc.left)) || deadline.After(end.Add(tc.left))):
				t.Errorf("deadline %v ahead (set %v), want %v", deadline.Sub(start), hasD, tc.left)
			}
		})
	}
}

// What the limiter learns from each way a handler ends (the Handler's
// table).
func TestHandlerOutcome(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name              string
		clientErr, ctxErr error
		status            int
		rtt, recent       time.Duration
		want              adaptive.Outcome
	}{
		{"200", nil, nil, 200, 10 * ms, 10 * ms, adaptive.Success},
		{"404", nil, nil, 404, ms, 10 * ms, adaptive.Success},
		{"500", nil, nil, 500, ms, 10 * ms, adaptive.Success},
		{"429", nil, nil, 429, ms, 10 * ms, adaptive.Success},
		{"nothing written (200)", nil, nil, 0, ms, 10 * ms, adaptive.Success},
		{"503", nil, nil, 503, ms, 10 * ms, adaptive.Drop},
		{"client went away", context.Canceled, context.Canceled, 503, 50 * ms, 10 * ms, adaptive.Ignore},
		{"deadline after the recent RTT", nil, context.DeadlineExceeded, 504, 20 * ms, 10 * ms, adaptive.Drop},
		{"deadline before the recent RTT", nil, context.DeadlineExceeded, 504, 2 * ms, 10 * ms, adaptive.Ignore},
		{"deadline, no RTT yet", nil, context.DeadlineExceeded, 200, 2 * ms, 0, adaptive.Drop},
	} {
		if got := outcome(tc.clientErr, tc.ctxErr, tc.status, tc.rtt, tc.recent); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// windows records the limiter's windows.
type windows struct {
	mu sync.Mutex
	w  []adaptive.Window
}

func (r *windows) Update(limit int, w adaptive.Window) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w = append(r.w, w)
	return limit
}

// The Handler reports each request to its limiter as the table says: one
// window per sample (WindowMin 1 ms, MinSamples 1, each handler taking at
// least 2 ms), none for a request the client cancelled, one cut by a
// deadline sooner than the recent RTT, or one whose handler hijacked the
// connection.
func TestHandlerReportsToLimiter(t *testing.T) {
	rec := &windows{}
	hijacked := make(chan net.Conn, 1)
	defer func() { (<-hijacked).Close() }()
	h := newHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hijack": // answers by hand, and keeps the connection open
			time.Sleep(2 * time.Millisecond)
			c, bw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			_ = bw.Flush()
			hijacked <- c
			return
		case "/cancel", "/deadline":
			<-r.Context().Done()
			w.WriteHeader(504)
			return
		}
		time.Sleep(2 * time.Millisecond)
		code := 200
		switch r.URL.Path {
		case "/503":
			code = 503
		case "/500":
			code = 500
		}
		w.WriteHeader(code)
	}), HandlerConfig{Limiter: adaptive.Config{Algorithm: rec, WindowMin: time.Millisecond, WindowMax: time.Millisecond, MinSamples: 1}})
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		served <- struct{}{} // the Handler has released the slot
	}))
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	get := func(path string, timeout string, cancelAfter time.Duration) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		if timeout != "" {
			req.Header.Set(TimeoutHeader, timeout)
		}
		if cancelAfter > 0 {
			time.AfterFunc(cancelAfter, cancel)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		} else if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		<-served
	}
	get("/ok", "", 0)  // window 1: 1 sample
	get("/503", "", 0) // window 2: 1 sample, 1 drop
	get("/500", "", 0) // window 3: 1 sample
	get("/cancel", "", 5*time.Millisecond)
	get("/hijack", "", 0)
	get("/deadline", "0ms", 0)  // cut at once, before the recent RTT (≥ 2 ms)
	get("/deadline", "20ms", 0) // window 4: cut after it: a drop
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var got []string
	for _, w := range rec.w {
		got = append(got, strings.Repeat("s", w.Samples-w.Drops)+strings.Repeat("d", w.Drops))
	}
	if want := []string{"s", "d", "s", "d"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("windows %v (s: success, d: drop), want %v", got, want)
	}
}

// NewHandler names the field out of range.
func TestNewHandlerRejects(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, tc := range []struct {
		next http.Handler
		cfg  HandlerConfig
		want string
	}{
		{nil, HandlerConfig{}, "next is nil"},
		{ok, HandlerConfig{Status: 500}, "Status"},
		{ok, HandlerConfig{RetryAfter: time.Millisecond}, "RetryAfter"},
		{ok, HandlerConfig{RetryAfter: 2 * time.Hour}, "RetryAfter"},
		{ok, HandlerConfig{Timeout: -time.Second}, "Timeout"},
		{ok, HandlerConfig{Timeout: 25 * time.Hour}, "Timeout"},
		{ok, HandlerConfig{Limiter: adaptive.Config{MinLimit: -1}}, "MinLimit"},
	} {
		if _, err := NewHandler(tc.next, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one naming %s", tc.cfg, err, tc.want)
		}
	}
}

// A handler that panics gives its slot back (net/http's server recovers
// the panic and closes the connection).
func TestHandlerPanicReleasesSlot(t *testing.T) {
	h := newHandler(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
		HandlerConfig{Limiter: adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	for range 3 {
		if resp, err := http.Get(srv.URL); err == nil {
			resp.Body.Close()
			t.Fatalf("status %d, want the connection closed by the panic", resp.StatusCode)
		}
	}
	if n := h.Limiter().InFlight(); n != 0 {
		t.Errorf("%d in flight after 3 panics, want 0", n)
	}
}
