//go:build !race

package metrics_test

import (
	"context"
	"testing"
)

// With the collector installed, the success path still allocates nothing:
// the counters and histograms are updated in place.
func TestObservedSuccessPathAllocations(t *testing.T) {
	g := benchGate(t, true)
	ctx := context.Background()
	if got := testing.AllocsPerRun(1000, func() { _ = g.Guard(ctx, ok) }); got > 0 {
		t.Errorf("%v allocations per call, want 0", got)
	}
}
