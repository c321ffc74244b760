package floodhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// Three services on loopback, user → A → B → C, each calling the next
// through floodgate with 3 attempts, C answering every request 503: with
// the Floodgate-Attempt header the user's client owns the retries and C
// sees 3 attempts per user request; without it every layer retries and C
// sees 3 × 3 × 3 = 27 (20 with the breakers' defaults: B's opens after 20
// failed attempts, MinCalls). In all, the deadline the user's client set is the
// one C's handler sees, less the time spent on the way.
func TestThreeServicesRetryOwnership(t *testing.T) {
	for _, tc := range []struct {
		name        string
		noOwnership bool // Config.NoAttemptHeader on every client
		minCalls    int  // the breakers' MinCalls: 100 keeps them closed
		wantC       int  // attempts C sees for one user request
	}{
		{"ownership on", false, 100, 3},
		{"ownership off", true, 100, 27},
		{"ownership off, default breakers", true, 0, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 10 * time.Second
			cfg := Config{NoAttemptHeader: tc.noOwnership}
			var (
				mu        sync.Mutex
				cAttempts int
				cLeft     []time.Duration // time left of C's handler's deadline as it started
				cSeen     []time.Time
				noDl      int
			)
			c := httptest.NewServer(mustHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				now := time.Now()
				d, ok := r.Context().Deadline()
				mu.Lock()
				cAttempts++
				if ok {
					cLeft = append(cLeft, d.Sub(now))
					cSeen = append(cSeen, now)
				} else {
					noDl++
				}
				mu.Unlock()
				w.WriteHeader(http.StatusServiceUnavailable)
			})))
			defer c.Close()
			b := httptest.NewServer(mustHandler(t, forward(t, chainGate(t, "B", tc.minCalls), c.URL, cfg)))
			defer b.Close()
			a := httptest.NewServer(mustHandler(t, forward(t, chainGate(t, "A", tc.minCalls), b.URL, cfg)))
			defer a.Close()

			user, _ := newClient(t, chainGate(t, "user", tc.minCalls), cfg)
			start := time.Now() // before the deadline is set: it is at least start + timeout
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", a.URL, nil)
			_, err := user.Do(req)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != 503 || !errors.Is(err, floodgate.ErrAttemptsExhausted) {
				t.Fatalf("user's error %v, want the attempts exhausted on a 503", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if noDl > 0 {
				t.Fatalf("%d of C's %d requests had no deadline: it was not propagated", noDl, cAttempts)
			}
			// C's deadline is the user's, less the time spent until C saw
			// the request, and at most 1 ms per hop (3) earlier, from rounding down.
			worst := time.Duration(0)
			for i, left := range cLeft {
				spent := cSeen[i].Sub(start)
				lo, hi := timeout-spent-3*time.Millisecond, timeout
				if left < lo || left > hi {
					t.Errorf("C's request %d: %v left, %v after the user's call began; want in [%v, %v]", i+1, left, spent, lo, hi)
				}
				worst = max(worst, timeout-left)
			}
			t.Logf("%s: C saw %d attempts for 1 user request; C's handlers saw %v..%v left of the user's %v deadline (at most %v gone: the time spent on the way)",
				tc.name, cAttempts, minOf(cLeft), cLeft[0], timeout, worst)
			if cAttempts != tc.wantC {
				t.Errorf("C saw %d attempts, want %d", cAttempts, tc.wantC)
			}
		})
	}
}

// chainGate is a Gate of 3 attempts with millisecond backoff, so that the
// 27 attempts take milliseconds, and a breaker of minCalls (0: the default).
func chainGate(t *testing.T, name string, minCalls int) *floodgate.Gate {
	g, err := floodgate.New(name, floodgate.WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}),
		floodgate.WithBreaker(breaker.Config{MinCalls: minCalls}))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustHandler(t *testing.T, next http.Handler) *Handler {
	h, err := NewHandler(next, HandlerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// forward is a service's handler: it calls next through its own Gate with
// the request's context, and answers 503 when the call fails.
func forward(t *testing.T, g *floodgate.Gate, next string, cfg Config) http.Handler {
	client, _ := newClient(t, g, cfg)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), "GET", next, nil)
		resp, err := client.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
}

func minOf(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = min(m, x)
	}
	return m
}
