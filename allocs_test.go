//go:build !race

package floodgate

import (
	"context"
	"testing"
)

// The success path allocates nothing of floodgate's own: the one allocation
// is the done closure returned by gobreaker's two-step Allow (48 B).
func TestSuccessPathAllocations(t *testing.T) {
	g := mustGate(t)
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	for _, tc := range []struct {
		name string
		run  func()
		max  float64
	}{
		{"Guard", func() { _ = g.Guard(ctx, ok) }, 1},
		{"Do", func() { _, _ = Do(ctx, g, fn) }, 1},
	} {
		if got := testing.AllocsPerRun(1000, tc.run); got > tc.max {
			t.Errorf("%s: %v allocations per call, want at most %v", tc.name, got, tc.max)
		}
	}
}
