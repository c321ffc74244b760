package bench

// floodhttp's client against faults that toxiproxy injects between it and
// a real server on 127.0.0.1 (in-process, as bench/real runs it): reset
// connections, answers that never come in time, and a body that trickles.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/floodhttp"
	"github.com/floodgate-go/floodgate/retry"
)

// faultProxy starts a server answering body to every GET, and a toxiproxy
// proxy in front of it; it returns the proxy and its URL.
func faultProxy(t *testing.T, body string) (*toxiproxy.Proxy, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
	t.Cleanup(srv.Close)
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(api, t.Name(), "127.0.0.1:0", srv.Listener.Addr().String())
	if err := p.Start(); err != nil {
		t.Fatalf("toxiproxy: %v", err)
	}
	t.Cleanup(p.Stop)
	return p, "http://" + p.Listen
}

func addFault(t *testing.T, p *toxiproxy.Proxy, kind, attributes string) {
	js := `{"name":"fault","type":"` + kind + `","stream":"downstream","attributes":` + attributes + `}`
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Fatalf("toxic %s: %v", kind, err)
	}
	// before the proxy stops (cleanups run last first), so that no link
	// goroutine is left holding data back
	t.Cleanup(func() { _ = p.Toxics.RemoveToxic(context.Background(), "fault") })
}

// faultClient is a floodhttp client through a Gate of rc, whose base
// transport counts the attempts.
func faultClient(t *testing.T, rc retry.Config) (*http.Client, *floodhttp.Transport, *floodgate.Gate, *atomic.Int32) {
	g := newGate(t, floodgate.WithRetry(rc))
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	var attempts atomic.Int32
	counting := rtFunc(func(r *http.Request) (*http.Response, error) { attempts.Add(1); return base.RoundTrip(r) })
	tr, err := floodhttp.NewTransport(g, floodhttp.Config{Base: counting})
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}, tr, g, &attempts
}

var faultRetry = retry.Config{BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}

// Connections reset as the answer comes (toxiproxy reset_peer) are
// retried: 3 attempts, the error a reset or an EOF; the first, on the
// connection a healthy call left in the pool, is re-sent once by
// net/http's Transport on its own, which the Transport counts. After the
// fault the next call succeeds.
func TestHTTPFaultReset(t *testing.T) {
	p, url := faultProxy(t, "ok")
	client, tr, _, attempts := faultClient(t, faultRetry)
	get := func() error {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil { // leaves a kept connection
		t.Fatal(err)
	}
	attempts.Store(0)
	addFault(t, p, "reset_peer", `{"timeout":0}`)
	err := get()
	t.Logf("reset_peer: %d attempts, %d hidden retries, err %v", attempts.Load(), tr.HiddenRetries(), err)
	if !errors.Is(err, floodgate.ErrAttemptsExhausted) || attempts.Load() != 3 ||
		!(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		t.Errorf("%d attempts, err %v; want 3, ErrAttemptsExhausted on a reset", attempts.Load(), err)
	}
	if tr.HiddenRetries() != 1 {
		t.Errorf("%d hidden retries, want 1 (the kept connection's reset, re-sent by net/http)", tr.HiddenRetries())
	}
	if err := p.Toxics.RemoveToxic(context.Background(), "fault"); err != nil {
		t.Fatal(err)
	}
	if err := get(); err != nil {
		t.Errorf("after the fault: %v", err)
	}
}

// Answers delayed 5 s (toxiproxy latency) with a 200 ms AttemptTimeout:
// each attempt is cut at 200 ms and retried (a timeout is an overload), so
// the call fails after 3 attempts in well under one delayed answer.
func TestHTTPFaultAttemptTimeout(t *testing.T) {
	p, url := faultProxy(t, "ok")
	addFault(t, p, "latency", `{"latency":5000}`)
	client, _, _, attempts := faultClient(t, retry.Config{AttemptTimeout: 200 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond})
	start := time.Now()
	_, err := client.Get(url)
	took := time.Since(start)
	t.Logf("latency 5 s, AttemptTimeout 200 ms: %d attempts in %v, err %v", attempts.Load(), took.Round(time.Millisecond), err)
	if !errors.Is(err, floodgate.ErrAttemptsExhausted) || !errors.Is(err, context.DeadlineExceeded) || attempts.Load() != 3 {
		t.Errorf("%d attempts, err %v; want 3, attempts exhausted on the attempt deadline", attempts.Load(), err)
	}
	if took < 600*time.Millisecond || took > 4*time.Second {
		t.Errorf("took %v, want at least 3 × 200 ms and less than one 5 s answer", took)
	}
}

// A body that trickles (toxiproxy bandwidth, 2 KB/s, 4 KB): RoundTrip
// returns at the headers, the Gate counts a success (its RTT is the time
// to headers, and the slot is back), and reading the body is cut at the
// attempt's deadline (1 s), not left hanging.
func TestHTTPFaultSlowBody(t *testing.T) {
	p, url := faultProxy(t, strings.Repeat("x", 4<<10))
	addFault(t, p, "bandwidth", `{"rate":2}`)
	client, _, g, _ := faultClient(t, retry.Config{AttemptTimeout: time.Second})
	start := time.Now()
	resp, err := client.Get(url)
	headers := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	inFlight := g.Stats().InFlight
	n, rerr := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	t.Logf("bandwidth 2 KB/s: headers after %v, %d of 4096 bytes read in %v, %v", headers.Round(time.Millisecond), n, took.Round(time.Millisecond), rerr)
	if headers >= time.Second || inFlight != 0 {
		t.Errorf("headers after %v with %d in flight; want before the 1 s attempt deadline, the slot given back", headers, inFlight)
	}
	if !errors.Is(rerr, context.DeadlineExceeded) || n >= 4<<10 {
		t.Errorf("read %d bytes, err %v; want the read cut by the attempt deadline", n, rerr)
	}
	if took < time.Second {
		t.Errorf("read ended after %v, before the 1 s attempt deadline", took)
	}
	if c := g.Breaker().Counts(); c.Calls != 1 || c.Failures != 0 {
		t.Errorf("breaker counts %+v, want 1 call, 0 failures (the answer came)", c)
	}
}
