//go:build !race

package bench

import (
	"runtime"
	"testing"
)

// allocsPerCall returns the number of heap allocations and bytes one call
// of f makes, averaged over runs calls after one warm-up call on one P and
// rounded down, as testing.AllocsPerRun counts, so that a stray allocation
// of the runtime's during the runs does not count.
func allocsPerCall(runs int, f func()) (allocs, bytes float64) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64((after.Mallocs - before.Mallocs) / uint64(runs)),
		float64((after.TotalAlloc - before.TotalAlloc) / uint64(runs))
}

// TestOverheadAllocations holds the allocation targets of the overhead
// benchmarks without timing anything: on the success and shed paths Guard
// allocates nothing, less than its floor (gobreaker's two-step Allow returns
// a 48 B done closure; a closed floodgate breaker admits calls without it);
// the limiter alone allocates nothing; a call refused by the open breaker
// allocates only the 64 B *floodgate.Error.
// The race detector allocates on its own, hence the build tag.
func TestOverheadAllocations(t *testing.T) {
	find := func(cases []overheadCase, name string) func() error {
		t.Helper()
		for _, c := range cases {
			if c.name == name {
				return c.build(t, noop)
			}
		}
		t.Fatalf("no case %q", name)
		return nil
	}
	floorAllocs, floorBytes := allocsPerCall(1000, func() { _ = find(successCases, "floor")() })
	for _, tc := range []struct {
		path, name      string
		call            func() error
		maxAllocs, maxB float64
		atMostTheFloor  bool
	}{
		{"Success", "floodgate-guard", find(successCases, "floodgate-guard"), 0, 0, true},
		{"Success", "floodgate-limiter", find(successCases, "floodgate-limiter"), 0, 0, false},
		{"Shed", "floodgate-guard", find(shedCases, "floodgate-guard"), 0, 0, true},
		{"Shed", "floodgate-limiter", find(shedCases, "floodgate-limiter"), 0, 0, false},
		{"Open", "floodgate-guard", find(openCases, "floodgate-guard"), 1, 64, false},
	} {
		allocs, bytes := allocsPerCall(1000, func() { _ = tc.call() })
		if allocs > tc.maxAllocs || bytes > tc.maxB {
			t.Errorf("%s/%s: %v allocations, %v B per call; want at most %v, %v B",
				tc.path, tc.name, allocs, bytes, tc.maxAllocs, tc.maxB)
		}
		if tc.atMostTheFloor && (allocs > floorAllocs || bytes > floorBytes) {
			t.Errorf("%s/%s: %v allocations, %v B per call; its floor (gobreaker two-step) makes %v, %v B",
				tc.path, tc.name, allocs, bytes, floorAllocs, floorBytes)
		}
	}
}
