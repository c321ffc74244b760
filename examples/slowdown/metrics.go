package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/floodhttp"
	"github.com/floodgate-go/floodgate/metrics"
)

// serveMetrics serves a registry holding a floodgate collector at
// http://addr/metrics until stop is called. The endpoint is served through
// a floodhttp.Handler exported as "metrics" (side server), so that the
// dashboard's HTTP server panels have a Handler to show: its traffic is
// the scrapes.
func serveMetrics(addr string, w io.Writer) (stop func(), c *metrics.Collector, err error) {
	c = metrics.NewCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	h, err := floodhttp.NewHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), floodhttp.HandlerConfig{})
	if err != nil {
		return nil, nil, err
	}
	if err := c.ObserveHandler("metrics", h); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(w, "metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(w, "metrics: http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, c, nil
}

// observeIdleTransport exports the hidden retries of a floodhttp.Transport
// on gate that the demo never calls (its calls use net/http inside Guard),
// so that the dashboard's hidden-retries panel and alert have their
// series: it stays at 0.
func observeIdleTransport(c *metrics.Collector, gate *floodgate.Gate) error {
	tr, err := floodhttp.NewTransport(gate, floodhttp.Config{})
	if err != nil {
		return err
	}
	return c.ObserveTransport(tr)
}
