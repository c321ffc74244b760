package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/floodhttp"
	"github.com/floodgate-go/floodgate/metrics"
)

// newTransport returns a floodhttp Transport through a gate named name,
// observed by c, on a net/http Transport of its own.
func newTransport(t *testing.T, c *metrics.Collector, name string) (*http.Client, *floodhttp.Transport) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr, err := floodhttp.NewTransport(newGate(t, c, name), floodhttp.Config{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ObserveTransport(tr); err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}, tr
}

func get(t *testing.T, client *http.Client, url string) int {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A server that closes a kept connection without answering makes net/http
// re-send the GET on a new connection, inside one Gate attempt (as in
// floodhttp's TestTransportCountsHiddenRetries): the gate counts 2
// attempts for 3 requests on the server, and the hidden one is exported,
// labelled with the gate and side client, from 0 before any request.
func TestTransportHiddenRetries(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 { // the second request, on the first's kept connection
			c, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = c.Close() // no answer
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := metrics.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	client, tr := newTransport(t, c, "quote")
	hidden := map[string]string{"gate": "quote", "side": "client"}
	if v, ok := value(t, reg, "floodgate_http_hidden_retries_total", hidden); !ok || v != 0 {
		t.Fatalf("before any request: %v, %v; want a series at 0", v, ok)
	}
	for range 2 {
		if code := get(t, client, srv.URL); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	got, _ := value(t, reg, "floodgate_http_hidden_retries_total", hidden)
	attempts, _ := value(t, reg, "floodgate_attempts_total", map[string]string{"gate": "quote", "side": "client", "attempt": "first"})
	t.Logf("%d requests on the server, %v attempts, %v hidden retries exported", n.Load(), attempts, got)
	if n.Load() != 3 || attempts != 2 || got != 1 || tr.HiddenRetries() != 1 {
		t.Errorf("%d requests, %v attempts, %v exported, HiddenRetries %d; want 3, 2, 1, 1", n.Load(), attempts, got, tr.HiddenRetries())
	}
}

// Two Transports on one gate add up into the gate's one series; Remove of
// the gate deletes it.
func TestTransportsOfOneGateAddUp(t *testing.T) {
	c := metrics.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	_, tr := newTransport(t, c, "quote")
	tr2, err := floodhttp.NewTransport(tr.Gate(), floodhttp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ObserveTransport(tr2); err != nil {
		t.Fatalf("a second Transport on the gate: %v", err)
	}
	if err := c.ObserveTransport(tr2); err == nil {
		t.Error("the same Transport twice: no error (it would be counted twice)")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "floodgate_http_hidden_retries_total" && len(mf.GetMetric()) != 1 {
			t.Errorf("%d series, want 1 per gate", len(mf.GetMetric()))
		}
	}
	if !c.Remove("quote") {
		t.Fatal("Remove: false")
	}
	if _, ok := value(t, reg, "floodgate_http_hidden_retries_total", nil); ok {
		t.Error("the series outlived Remove")
	}
}

// A Handler is exported with side server: its limit and in-flight while a
// request is being served, and the request shed over its limit, as the
// client saw them (one 200 in flight, one 503).
func TestHandlerLimitInFlightAndSheds(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h, err := floodhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	}), floodhttp.HandlerConfig{Limiter: adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: base}

	c := metrics.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	newGate(t, c, "api") // a gate of the same name: the side label tells them apart
	if err := c.ObserveHandler("api", h); err != nil {
		t.Fatal(err)
	}
	server := func(extra ...string) map[string]string {
		m := map[string]string{"gate": "api", "side": "server"}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	if v, ok := value(t, reg, "floodgate_http_shed_total", server()); !ok || v != 0 {
		t.Fatalf("sheds before any request: %v, %v; want a series at 0", v, ok)
	}
	done := make(chan int)
	go func() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Error(err)
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-started
	shed := get(t, client, srv.URL)
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"floodgate_limit", 1},
		{"floodgate_in_flight", 1},
		{"floodgate_in_flight_peak", 1},
		{"floodgate_http_shed_total", 1},
	} {
		if got, ok := value(t, reg, tc.name, server()); !ok || got != tc.want {
			t.Errorf("%s{side=server}: %v (found %v), want %v", tc.name, got, ok, tc.want)
		}
	}
	if got, _ := value(t, reg, "floodgate_limit", map[string]string{"gate": "api", "side": "client"}); got != 20 {
		t.Errorf("the gate's floodgate_limit{side=client} = %v, want its own 20", got)
	}
	close(release)
	if code := <-done; code != 200 || shed != 503 {
		t.Errorf("the client got %d and %d, want 200 and 503", code, shed)
	}
	if got, _ := value(t, reg, "floodgate_in_flight", server()); got != 0 {
		t.Errorf("in flight after the request: %v, want 0", got)
	}
	if !c.RemoveHandler("api") || c.RemoveHandler("api") {
		t.Error("RemoveHandler: want true, then false")
	}
	if _, ok := value(t, reg, "floodgate_limit", server()); ok {
		t.Error("the Handler's series outlived RemoveHandler")
	}
	if _, ok := value(t, reg, "floodgate_limit", map[string]string{"gate": "api", "side": "client"}); !ok {
		t.Error("RemoveHandler removed the gate of the same name")
	}
}

// The floodhttp series follow Prometheus's naming conventions, and every
// gate series has side client.
func TestHTTPSeriesLintAndSide(t *testing.T) {
	c := metrics.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	newTransport(t, c, "quote")
	h, err := floodhttp.NewHandler(http.NotFoundHandler(), floodhttp.HandlerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ObserveHandler("api", h); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	sides := map[string]int{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			want := map[string]string{"quote": "client", "api": "server"}[labels["gate"]]
			if labels["side"] != want {
				t.Errorf("%s%v: side %q, want %q", mf.GetName(), labels, labels["side"], want)
			}
			sides[labels["side"]]++
		}
	}
	t.Logf("series by side: %v", sides)
	if sides["server"] != 7 { // the limiter's six gauges and http_shed_total
		t.Errorf("%d server series, want 7", sides["server"])
	}
}

func TestObserveHTTPErrors(t *testing.T) {
	c := metrics.NewCollector()
	h, err := floodhttp.NewHandler(http.NotFoundHandler(), floodhttp.HandlerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		err  error
		want string
	}{
		{"nil Transport", c.ObserveTransport(nil), "nil"},
		{"nil Handler", c.ObserveHandler("api", nil), "nil"},
		{"invalid UTF-8", c.ObserveHandler("a\xff", h), "UTF-8"},
		{"first Handler", c.ObserveHandler("api", h), ""},
		{"second Handler named api", c.ObserveHandler("api", h), `"api"`},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v, want no error", tc.what, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %s", tc.what, tc.err, tc.want)
		}
	}
}
