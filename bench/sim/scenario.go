package sim

import "time"

// Scenario is one scripted run: the offered load, the downstream's
// behaviour over time, and the moments the metrics are taken from.
type Scenario struct {
	// Name is the scenario's short name (S1..S9).
	Name string
	// Title says what happens, for tables and plots.
	Title string
	// Seed seeds every random draw of the run.
	Seed uint64
	// Duration is how long calls arrive; the run then waits for the last
	// calls and for the downstream to drain.
	Duration time.Duration
	// Rate scripts the arrival rate (calls per second).
	Rate []RatePoint
	// Phases scripts the downstream.
	Phases []Phase
	// Onset is when trouble starts (0: none); Recovery when it ends (0:
	// it lasts to the end).
	Onset, Recovery time.Duration
	// Layers is how many layers of the contender wrap each other around
	// the downstream (S7: 3); 0 means 1.
	Layers int
	// Spare says the trouble leaves the downstream capacity to spare
	// (S8, S9): calls that arrive from 5 s after the onset count as healthy
	// in Result.HealthyLost.
	Spare bool
}

// healthy is the downstream most scenarios start from: 40 workers at a
// median of 50 ms (p99 150 ms): mean 55.9 ms, so about 715 calls/s of capacity.
func healthy(from time.Duration) Phase {
	return Phase{From: from, Workers: 40, Service: LogNormal{Median: 50 * time.Millisecond, P99: 150 * time.Millisecond}}
}

// Scenarios returns S1..S9, the values both the tests and cmd/scenarios
// run.
func Scenarios() []Scenario {
	const s = time.Second
	flat := func(r float64) []RatePoint { return []RatePoint{{0, r}} }
	with := func(p Phase, f func(*Phase)) Phase { f(&p); return p }
	return []Scenario{
		{
			Name: "S1", Title: "slowdown: 100 calls/s, 50 workers, service 100 ms → 2 s at 60 s, back at 180 s",
			Seed: 1, Duration: 240 * s, Rate: flat(100), Onset: 60 * s, Recovery: 180 * s,
			Phases: []Phase{
				{From: 0, Workers: PoolSize, Service: LogNormal{Median: 100 * time.Millisecond, P99: 200 * time.Millisecond}},
				{From: 60 * s, Workers: PoolSize, Service: LogNormal{Median: 2 * s, P99: 4 * s}},
				{From: 180 * s, Workers: PoolSize, Service: LogNormal{Median: 100 * time.Millisecond, P99: 200 * time.Millisecond}},
			},
		},
		{
			Name: "S2", Title: "overload: 40 workers, 50 ms; arrivals ramp 400 → 1,600 calls/s over 60 s, then hold 60 s; offered passes capacity (≈ 715 calls/s) at 16 s",
			Seed: 2, Duration: 120 * s, Rate: []RatePoint{{0, 400}, {60 * s, 1600}}, Onset: 16 * s,
			Phases: []Phase{healthy(0)},
		},
		{
			Name: "S3", Title: "hard outage: 200 calls/s; every call fails fast from 30 s to 60 s",
			Seed: 3, Duration: 90 * s, Rate: flat(200), Onset: 30 * s, Recovery: 60 * s,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) { p.FailFast = 1 }), healthy(60 * s)},
		},
		{
			Name: "S4", Title: "brown-out: 200 calls/s; 30% of calls fail (after their service time) from 30 s to 90 s",
			Seed: 4, Duration: 120 * s, Rate: flat(200), Onset: 30 * s, Recovery: 90 * s,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) { p.ErrRate = 0.3 }), healthy(90 * s)},
		},
		{
			Name: "S5", Title: "throttling: 200 calls/s; 429 with Retry-After 2 s from 30 s to 50 s",
			Seed: 5, Duration: 80 * s, Rate: flat(200), Onset: 30 * s, Recovery: 50 * s,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) { p.Throttle = 1; p.RetryAfter = 2 * s }), healthy(50 * s)},
		},
		{
			Name: "S6", Title: "capacity loss: 600 calls/s; workers 40 → 20 at 30 s",
			Seed: 6, Duration: 90 * s, Rate: flat(600), Onset: 30 * s,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) { p.Workers = 20 })},
		},
		{
			Name: "S7", Title: "three nested layers, 200 calls/s; every call fails fast from 30 s to 60 s",
			Seed: 7, Duration: 90 * s, Rate: flat(200), Onset: 30 * s, Recovery: 60 * s, Layers: 3,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) { p.FailFast = 1 }), healthy(60 * s)},
		},
		{
			Name: "S8", Title: "lasting slowdown, capacity to spare: 200 calls/s, 40 workers; service 50 ms → 100 ms (p99 150 → 300 ms) from 30 s to the end",
			Seed: 8, Duration: 90 * s, Rate: flat(200), Onset: 30 * s, Spare: true,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) {
				p.Service = LogNormal{Median: 100 * time.Millisecond, P99: 300 * time.Millisecond}
			})},
		},
		{
			Name: "S9", Title: "background drops: 400 calls/s, 40 workers, healthy; from 30 s, 2% of calls answered 503 (no Retry-After)",
			Seed: 9, Duration: 90 * s, Rate: flat(400), Onset: 30 * s, Spare: true,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) { p.Throttle = 0.02 })},
		},
	}
}
