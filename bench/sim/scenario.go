package sim

import "time"

// Scenario is one scripted run: the offered load, the downstream's
// behaviour over time, and the moments the metrics are taken from.
type Scenario struct {
	// Name is the scenario's short name (S1..S19).
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
	// (S8, S9, S12, S13, S14): calls that arrive from 5 s after the onset
	// count as healthy in Result.HealthyLost and Result.HealthyShed.
	Spare bool
	// FailsAnyway says the downstream fails some calls of the healthy
	// seconds whatever the client does (S13: three 503s in a row, or a
	// retry the budget refuses): there only the calls the contender
	// refused itself (Result.HealthyShed) count against it, not every call
	// lost (Result.HealthyLost).
	FailsAnyway bool
	// Saturated says the offered load is at the downstream's capacity for
	// the whole run (S16): no second counts as healthy and under capacity.
	Saturated bool
	// AttemptTimeout bounds one attempt, from the moment the contender
	// starts it (a pool's wait for a slot included); 0 means
	// DefaultAttemptTimeout. Every contender gets it through Env.
	AttemptTimeout time.Duration
	// CallDeadline is the user call's overall deadline, set on its context
	// when it arrives; 0 means DefaultCallDeadline.
	CallDeadline time.Duration
	// SLO is the latency within which a success counts towards goodput; 0
	// means DefaultSLO.
	SLO time.Duration
	// Gates is the fleet's size (S15): that many gates, each its own
	// instance of the contender, call the one downstream, and arrival n
	// goes to gate n mod Gates; 0 means 1.
	Gates int
	// Pause scripts stop-the-world pauses of the client (S14); the zero
	// value has none.
	Pause Pause
}

// Defaults of the Scenario fields whose zero value selects one.
const (
	// DefaultAttemptTimeout is Scenario.AttemptTimeout's default.
	DefaultAttemptTimeout = time.Second
	// DefaultCallDeadline is Scenario.CallDeadline's default: 3 s rather
	// than 2 s so that S5's retry after a 2 s Retry-After is possible at
	// all.
	DefaultCallDeadline = 3 * time.Second
	// DefaultSLO is Scenario.SLO's default.
	DefaultSLO = time.Second
)

// orDefault returns d, or def if d is 0.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// attemptTimeout, callDeadline, slo and gates return the fields with their
// defaults applied.
func (sc Scenario) attemptTimeout() time.Duration {
	return orDefault(sc.AttemptTimeout, DefaultAttemptTimeout)
}
func (sc Scenario) callDeadline() time.Duration {
	return orDefault(sc.CallDeadline, DefaultCallDeadline)
}
func (sc Scenario) slo() time.Duration { return orDefault(sc.SLO, DefaultSLO) }
func (sc Scenario) gates() int         { return max(1, sc.Gates) }

// Pause is a periodic stop-the-world pause of the client (a long GC pause,
// a descheduled VM): every Every from From on, for For, the client runs
// nothing. During a pause no attempt is sent and no call or attempt
// completes: an answer that lands in it is seen at its end (its RTT
// includes the pause), and a call that arrives in it reaches the contender
// at its end, in a burst with the others. The downstream is not paused.
type Pause struct {
	// From is when the first pause starts, since the start of the run.
	From time.Duration
	// Every is the period of the pauses; 0: no pauses.
	Every time.Duration
	// For is how long each pause lasts; less than Every.
	For time.Duration
}

// Covering returns the start and end of the pause that covers elapsed time
// t (start ≤ t < end), and whether one does.
func (p Pause) Covering(t time.Duration) (start, end time.Duration, ok bool) {
	if p.Every <= 0 || p.For <= 0 || t < p.From {
		return 0, 0, false
	}
	start = p.From + (t-p.From)/p.Every*p.Every
	if t >= start+p.For {
		return 0, 0, false
	}
	return start, start + p.For, true
}

// healthy is the downstream most scenarios start from: 40 workers at a
// median of 50 ms (p99 150 ms): mean 55.9 ms, so about 715 calls/s of capacity.
func healthy(from time.Duration) Phase {
	return Phase{From: from, Workers: 40, Service: LogNormal{Median: 50 * time.Millisecond, P99: 150 * time.Millisecond}}
}

// Scenarios returns S1..S19, the values both the tests and cmd/scenarios
// run.
func Scenarios() []Scenario {
	const s, ms = time.Second, time.Millisecond
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
		// S10 is tripwire's configs/adaptivelimiter-staged.yaml (by
		// failsafe-go's author): constant service times on a time-sliced
		// server there, FIFO workers with a near-constant service time
		// (p99 1.2× the median) here, which queue alike. At 150 ms the 12
		// workers serve 79.7 calls/s of the 100 offered, and a limit serves
		// all of it only with a queue in front of them: over the run a fixed
		// 12 serves 78.1 calls/s, a fixed 24 85.9 (TestS10FixedLimitCeiling).
		// Healthy seconds (no call may be lost): 2–18 s and from 145 s.
		{
			Name: "S10", Title: "staged slowdown (tripwire adaptivelimiter-staged): 100 calls/s, 12 workers; service 50 ms → 150 ms (p99 1.2× the median) from 20 s to 140 s: capacity 239 → 80 calls/s",
			Seed: 10, Duration: 170 * s, Rate: flat(100), Onset: 20 * s, Recovery: 140 * s,
			Phases: []Phase{constant(0, 12, 50*ms), constant(20*s, 12, 150*ms), constant(140*s, 12, 50*ms)},
		},
		// S11 is S1's slowdown, lasting, with a deadline that a 2 s
		// answer meets: the 50 workers serve 24.8 calls/s of the 100
		// offered, and a call is good if it succeeds before its 3 s
		// deadline (SLO = deadline = attempt timeout: one attempt, no
		// retry, can use the whole deadline). Healthy seconds: 2–28 s.
		{
			Name: "S11", Title: "lasting slowdown, patient deadline: 100 calls/s, 50 workers; service 100 ms → 2 s (p99 200 ms → 2.6 s) from 30 s to the end; attempt timeout, deadline and SLO 3 s",
			Seed: 11, Duration: 120 * s, Rate: flat(100), Onset: 30 * s,
			AttemptTimeout: 3 * s, CallDeadline: 3 * s, SLO: 3 * s,
			Phases: []Phase{
				{From: 0, Workers: PoolSize, Service: LogNormal{Median: 100 * ms, P99: 200 * ms}},
				{From: 30 * s, Workers: PoolSize, Service: LogNormal{Median: 2 * s, P99: 2600 * ms}},
			},
		},
		// S12: every call still succeeds within the 1 s attempt timeout
		// and the SLO; 120 calls in flight during the stall, 0.3 before.
		// The stall leaves capacity to spare (Spare): every second but the
		// first 2 and 28–35 s (the stall's first 5 s) is healthy, so a
		// limit that sheds a call from 5 s into the stall loses it.
		{
			Name: "S12", Title: "whole-server stall: 300 calls/s, no capacity limit (10,000 workers); service 1 ms → 400 ms (p99 1.2× the median) from 30 s to 45 s",
			Seed: 12, Duration: 75 * s, Rate: flat(300), Onset: 30 * s, Recovery: 45 * s, Spare: true,
			Phases: []Phase{constant(0, unlimited, ms), constant(30*s, unlimited, 400*ms), constant(45*s, unlimited, ms)},
		},
		// S13: the 503s take no worker, and whatever the client's
		// concurrency 20% of attempts get one. A retry waits out the 1 s
		// hint, so the SLO is the 3 s deadline: a call retried after a 503
		// is good. Three 503s in a row (0.8% of calls) fail whatever the
		// client does, and so does a retry the budget refuses (FailsAnyway).
		// Healthy seconds (Spare): 2–28 s and from 35 s, in which no call
		// may be shed.
		{
			Name: "S13", Title: "random 503s: 200 calls/s, no capacity limit (10,000 workers), 50 ms (p99 150 ms); from 30 s to 90 s, 20% of calls answered 503 with Retry-After 1 s; SLO 3 s",
			Seed: 13, Duration: 120 * s, Rate: flat(200), Onset: 30 * s, Recovery: 90 * s, Spare: true, FailsAnyway: true,
			SLO:    3 * s,
			Phases: []Phase{unlimitedHealthy(0), with(unlimitedHealthy(30*s), func(p *Phase) { p.Throttle = 0.2; p.RetryAfter = s }), unlimitedHealthy(90 * s)},
		},
		// S14: about 15 calls arrive in each 50 ms pause and reach the
		// gate together at its end, and the answers in flight at its start
		// come back with an RTT of up to 50 ms, 50× the median. The pauses
		// end at 30.05 s, 32.05 s, ..., off the 100 ms sampling grid. With
		// Hybrid (the previous default), pauses of 30 ms shed nothing, 50 ms shed 47 healthy calls,
		// 100 ms 430 (failsafe-go: 0, 0, 233). Healthy seconds (Spare):
		// 2–28 s and from 35 s.
		{
			Name: "S14", Title: "low RTT, client pauses: 300 calls/s, no capacity limit (10,000 workers), service 1 ms (p99 2 ms); from 30 s the client stops the world for 50 ms every 2 s",
			Seed: 14, Duration: 90 * s, Rate: flat(300), Onset: 30 * s, Spare: true,
			Pause:  Pause{From: 30 * s, Every: 2 * s, For: 50 * ms},
			Phases: []Phase{{From: 0, Workers: unlimited, Service: LogNormal{Median: ms, P99: 2 * ms}}},
		},
		// S15: each gate sees a tenth of the arrivals (40 calls/s) and
		// none sees the others' calls. The oracle's limit per gate is the
		// workers / 10 (4), the fixed pool's PoolSize / 10 (5): the fleet's
		// totals are the single gate's. Capacity 715 → 238 calls/s.
		// Healthy seconds: 2–28 s.
		{
			Name: "S15", Title: "fleet: 10 gates, 400 calls/s in all, one downstream of 40 workers; service 50 ms → 150 ms (p99 150 → 450 ms) from 30 s to the end",
			Seed: 15, Duration: 90 * s, Rate: flat(400), Onset: 30 * s, Gates: 10,
			Phases: []Phase{healthy(0), with(healthy(30*s), func(p *Phase) {
				p.Service = LogNormal{Median: 150 * ms, P99: 450 * ms}
			})},
		},
		// S16 is tripwire's configs/runaway-limits.yaml: 12 workers at
		// 120 ms serve 99.7 calls/s, and 100 are offered, so the queue
		// takes a random walk with a slight upward drift. A limit that
		// climbs while the RTT stays flat runs away; the target is that
		// floodgate's stays within 3× the workers from 10 s on. No second
		// is healthy and under capacity (Saturated).
		{
			Name: "S16", Title: "runaway limits (tripwire runaway-limits): 100 calls/s for 10 min, 12 workers, service 120 ms (p99 144 ms): the offered load is the capacity",
			Seed: 16, Duration: 600 * s, Rate: flat(100), Saturated: true,
			Phases: []Phase{constant(0, 12, 120*ms)},
		},
		// S17 is bench/real's HTTP timeline on a client pool of 50: a
		// storm of timeouts (2.1 s answers, 2 s attempt timeout), 5 s
		// healthy, then 300 ms answers that succeed: 50 calls in flight
		// serve 166 calls/s of the 300 offered. After the storm the limit is
		// a few calls, and the slow phase (25–35 s) needs 50: it grows
		// back once the experiment finds the 300 ms to be the downstream's
		// new normal. Healthy seconds: 2–8 s and from 40 s.
		{
			Name: "S17", Title: "timeouts, then a slowdown that succeeds: 300 calls/s, 50 workers (a client pool), service 1 ms; 2.1 s from 10 s to 20 s (attempts time out at 2 s), 1 ms to 25 s, 300 ms to 35 s, then 1 ms; attempt timeout, deadline and SLO 2 s",
			Seed: 17, Duration: 45 * s, Rate: flat(300), Onset: 10 * s, Recovery: 35 * s,
			AttemptTimeout: 2 * s, CallDeadline: 2 * s, SLO: 2 * s,
			Phases: []Phase{constant(0, PoolSize, ms), constant(10*s, PoolSize, 2100*ms), constant(20*s, PoolSize, ms),
				constant(25*s, PoolSize, 300*ms), constant(35*s, PoolSize, ms)},
		},
		// S18 is bench/real's Redis stalls on a client pool of 50: from 30 s
		// to 45 s the server runs back-to-back 0.5 s sleeps, and a request
		// finishes at the end of the sleep it started in, or of the next
		// one for half the sleeps (Phase.Stall), so the answers come back
		// in bursts and a window's mean RTT swings between about 0.45 and
		// 0.95 s at the same load, as the real trial's did. Every call that
		// reaches a connection succeeds within the 2 s deadline; no limit
		// relieves the stall, and one that holds the pool serves the most
		// (the oracle's 50: 70 calls/s of the 300 offered). Healthy seconds:
		// 2–28 s and from 47 s. This is one alignment of the slips
		// (Phase.Slips 0); bench's TestScenarioS18Alignments runs 20 others.
		{
			Name: "S18", Title: "stalls (bench/real's Redis): 300 calls/s, 50 workers (a client pool), service 1 ms; from 30 s to 45 s the server stalls in back-to-back 0.5 s sleeps, each call ending with its sleep or the next; attempt timeout, deadline and SLO 2 s",
			Seed: 18, Duration: 60 * s, Rate: flat(300), Onset: 30 * s, Recovery: 45 * s,
			AttemptTimeout: 2 * s, CallDeadline: 2 * s, SLO: 2 * s,
			Phases: []Phase{constant(0, PoolSize, ms), with(constant(30*s, PoolSize, ms), func(p *Phase) { p.Stall = 500 * ms }),
				constant(45*s, PoolSize, ms)},
		},
		// S19 is a review's shape (stop 35): a slowdown of a downstream
		// whose 40 workers our calls queue at, under an attempt timeout
		// of twice the new service time. 300 calls/s against 80 of
		// capacity from 30 s: a limit above the 40 workers queues our calls
		// past the timeout, so the oracle's 40 serve the most. Healthy
		// seconds: 2–28 s.
		{
			Name: "S19", Title: "own queue, tight timeout: 300 calls/s, 40 workers; service 50 ms → 500 ms (p99 1.2× the median) from 30 s to the end: capacity 80 calls/s; attempt timeout and SLO 1 s, deadline 3 s",
			Seed: 19, Duration: 60 * s, Rate: flat(300), Onset: 30 * s,
			AttemptTimeout: s, CallDeadline: 3 * s, SLO: s,
			Phases: []Phase{healthy(0), constant(30*s, 40, 500*ms)},
		},
	}
}

// unlimited is the worker count of a downstream with no capacity limit in
// practice (S12, S13, S14).
const unlimited = 10000

// constant is a phase of a near-constant service time: log-normal with a
// p99 1.2× its median (σ = 0.078, mean 1.003× the median).
func constant(from time.Duration, workers int, median time.Duration) Phase {
	return Phase{From: from, Workers: workers, Service: LogNormal{Median: median, P99: median * 6 / 5}}
}

// unlimitedHealthy is healthy's service time on an unlimited downstream.
func unlimitedHealthy(from time.Duration) Phase {
	p := healthy(from)
	p.Workers = unlimited
	return p
}
