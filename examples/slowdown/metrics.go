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

	"github.com/floodgate-go/floodgate/metrics"
)

// serveMetrics serves a registry holding a floodgate collector at
// http://addr/metrics until stop is called.
func serveMetrics(addr string, w io.Writer) (stop func(), c *metrics.Collector, err error) {
	c = metrics.NewCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
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
