package adaptive

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A downstream with no capacity limit (latency independent of load) and a
// rare, long latency tail (GC pauses, cold caches) is healthy: Gradient
// must not read the windows that happen to hold a few more tail calls as
// a queue (its test is the window's mean less two standard errors; the
// Hybrid it replaced once held a median limit of 18 here with 0.1% of
// calls at 1 s).
func TestGradientHealthyDownstreamWithLatencyTail(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tailShare float64       // share of calls in the tail
		tail      time.Duration // their RTT; the rest take 10 ms ± 10%
		wantP10   int           // lowest acceptable 10th percentile of the limit
	}{
		{"no tail", 0, 0, 360},
		{"1% at 100 ms", 0.01, 100 * time.Millisecond, 360},
		{"0.1% at 1 s", 0.001, time.Second, 360},
		{"0.2% at 500 ms", 0.002, 500 * time.Millisecond, 360},
		{"5% at 50 ms", 0.05, 50 * time.Millisecond, 360},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewGradient(GradientConfig{})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			limit := 20
			var limits []int
			for w := range 2500 {
				s := limit * 10 // 100 ms windows of calls that take about 10 ms, limit binding
				var sum float64
				for range s {
					rtt := 10 * float64(time.Millisecond) * (0.9 + 0.2*r.Float64())
					if r.Float64() < tc.tailShare {
						rtt = float64(tc.tail)
					}
					sum += rtt
				}
				limit = min(max(h.Update(limit, Window{Duration: 100 * time.Millisecond, Samples: s,
					MeanRTT: time.Duration(sum / float64(s)), MinRTT: 9 * time.Millisecond, MaxInFlight: limit}), 1), 400)
				if w >= 1500 {
					limits = append(limits, limit)
				}
			}
			slices.Sort(limits)
			if p10 := limits[len(limits)/10]; p10 < tc.wantP10 {
				t.Errorf("limit p10 %d, median %d over the last 1000 windows; want p10 ≥ %d (the limit is capped at 400 here)",
					p10, limits[len(limits)/2], tc.wantP10)
			}
		})
	}
}
