package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// downstream is the "shipping quote" service: a real HTTP server on
// 127.0.0.1 whose latency follows the scenario's clock. Like most real
// services it finishes the work of a request whose client has given up, so
// abandoned attempts still occupy it.
type downstream struct {
	srv      *http.Server
	url      string
	latency  func() time.Duration
	attempts atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
}

func startDownstream(latency func() time.Duration) (*downstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &downstream{latency: latency, url: "http://" + ln.Addr().String() + "/quote"}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	return d, nil
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.attempts.Add(1)
	n := d.inFlight.Add(1)
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	time.Sleep(d.latency())
	d.inFlight.Add(-1)
	fmt.Fprintln(w, `{"quote_cents":1250}`)
}

func (d *downstream) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = d.srv.Shutdown(ctx)
	_ = d.srv.Close()
}
