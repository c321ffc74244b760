//go:build !race

package metrics_test

import (
	"context"
	"testing"
)

// With the collector installed, the success path still allocates only
// gobreaker's 48 B done closure: the counters and histograms are updated
// in place.
func TestObservedSuccessPathAllocations(t *testing.T) {
	g := benchGate(t, true)
	ctx := context.Background()
	if got := testing.AllocsPerRun(1000, func() { _ = g.Guard(ctx, ok) }); got > 1 {
		t.Errorf("%v allocations per call, want at most 1", got)
	}
}
