//go:build !race

package floodgate

import (
	"context"
	"testing"
)

// The success path allocates nothing: while the breaker is closed, calls are
// admitted from its state mirror, so not even gobreaker's 48 B done closure.
func TestSuccessPathAllocations(t *testing.T) {
	g := mustGate(t)
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	for _, tc := range []struct {
		name string
		run  func()
		max  float64
	}{
		{"Guard", func() { _ = g.Guard(ctx, ok) }, 0},
		{"Do", func() { _, _ = Do(ctx, g, fn) }, 0},
	} {
		if got := testing.AllocsPerRun(1000, tc.run); got > tc.max {
			t.Errorf("%s: %v allocations per call, want at most %v", tc.name, got, tc.max)
		}
	}
}
