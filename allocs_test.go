//go:build !race

package floodgate

import (
	"context"
	"errors"
	"testing"

	"github.com/floodgate-go/floodgate/adaptive"
)

// The success path allocates nothing: while the breaker is closed, calls are
// admitted from its state mirror, so not even gobreaker's 48 B done closure.
// Nor does the shed path.
func TestSuccessPathAllocations(t *testing.T) {
	g := mustGate(t)
	observed := mustGate(t, WithObserver(nopObserver{}))
	shed := mustGate(t, WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}))
	shed.Limiter().Acquire() // hold the only slot
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	for _, tc := range []struct {
		name string
		run  func()
		max  float64
	}{
		{"Guard", func() { _ = g.Guard(ctx, ok) }, 0},
		{"Do", func() { _, _ = Do(ctx, g, fn) }, 0},
		{"Guard with an observer (its Call deferred)", func() { _ = observed.Guard(ctx, ok) }, 0},
		// the gate's shared *Error, and errors.Is matching its Reason without Unwrap
		{"Guard shed, errors.Is", func() { _ = errors.Is(shed.Guard(ctx, ok), ErrShed) }, 0},
	} {
		if got := testing.AllocsPerRun(1000, tc.run); got > tc.max {
			t.Errorf("%s: %v allocations per call, want at most %v", tc.name, got, tc.max)
		}
	}
}
