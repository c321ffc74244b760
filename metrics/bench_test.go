package metrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/metrics"
)

// variants are the two gates each benchmark compares.
var variants = []struct {
	name    string
	observe bool
}{{"plain", false}, {"collector", true}}

// BenchmarkGuard is Guard's success path without and with the collector
// registered (and scraped once, so the series exist): the difference is
// what the metrics cost per call.
func BenchmarkGuard(b *testing.B) {
	for _, tc := range variants {
		b.Run(tc.name, func(b *testing.B) {
			g := benchGate(b, tc.observe)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := g.Guard(ctx, ok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGuardParallel is the same from every P at once.
func BenchmarkGuardParallel(b *testing.B) {
	for _, tc := range variants {
		b.Run(tc.name, func(b *testing.B) {
			g := benchGate(b, tc.observe)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := g.Guard(ctx, ok); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func benchGate(tb testing.TB, observe bool) *floodgate.Gate {
	opts := []floodgate.Option{floodgate.WithLimiter(adaptive.Config{
		Algorithm: adaptive.Fixed{}, InitialLimit: 1 << 20, MaxLimit: 1 << 20})}
	if observe {
		c := metrics.NewCollector()
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		opts = append(opts, c.Observe())
		defer func() {
			if _, err := reg.Gather(); err != nil {
				tb.Fatal(err)
			}
		}()
	}
	g, err := floodgate.New("bench", opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}
