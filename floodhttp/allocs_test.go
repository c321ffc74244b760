//go:build !race

package floodhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A GET through an *http.Transport allocates, beyond the bare transport's,
// the request's copy and its context, and the server's copy of
// Floodgate-Attempt's name (issue 14; docs/http.md, "Overhead").
func TestTransportAllocations(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	perGET := func(rt http.RoundTripper) float64 {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		get := func() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get()
		return testing.AllocsPerRun(500, get)
	}
	newBase := func() *http.Transport {
		b := &http.Transport{}
		t.Cleanup(b.CloseIdleConnections)
		return b
	}
	bare := perGET(newBase())
	for _, tc := range []struct {
		name string
		cfg  Config
		max  float64
	}{
		{"defaults", Config{}, 3},
		{"no headers", Config{NoAttemptHeader: true, NoTimeoutHeader: true}, 2},
		{"AttemptTimeout", Config{}, 18}, // and the server's copy of a second name, the attempt's two deadlines (the Gate's, and the one that outlives it for the body), the body's wrapper
	} {
		tc.cfg.Base = newBase()
		rc := fastRetry
		if tc.name == "AttemptTimeout" {
			rc.AttemptTimeout = time.Minute
		}
		tr, err := NewTransport(newGate(t, rc), tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := perGET(tr)
		t.Logf("%s: %.0f allocations per GET, the bare transport %.0f", tc.name, got, bare)
		if got-bare > tc.max {
			t.Errorf("%s: %.0f allocations per GET more than the bare transport, want at most %.0f", tc.name, got-bare, tc.max)
		}
	}
}
