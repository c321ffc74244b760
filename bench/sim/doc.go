// Package sim is a discrete-event simulator of clients calling one
// downstream, meant to run inside a testing/synctest bubble so that minutes
// of traffic take seconds of wall time and repeat for a given seed: every
// Result's metrics exactly, and every floodgate contender's time series
// sample for sample (failsafe-go's limit in S1 and the fixed pool's
// in-flight count in S2 can differ in some samples between runs, and
// failsafe-go's goodput in S15, as goroutines that act at the same virtual
// instant run in another order; docs/benchmarks.md).
//
// A [Scenario] scripts the downstream ([Phase]: workers, service time, error
// and throttle rates over time) and the offered load (open-loop Poisson
// arrivals at a scripted rate, [RatePoint]). [Run] offers that load to one
// [Contender] (floodgate with an algorithm, failsafe-go, a fixed pool, or the
// oracle) and returns a [Result]: per-call outcomes reduced to the metrics of
// docs/benchmarks.md, and time series sampled every [SampleEvery] for plots.
// A scenario may also set the attempt timeout, the call deadline and the
// SLO, run a fleet of gates (each its own instance of the contender) in
// front of the one downstream, and pause the client ([Pause]).
//
// Randomness is seeded: arrival gaps come from one generator seeded with the
// scenario's seed, and every user call draws its attempts' service times and
// outcomes from a generator of its own, seeded with (seed, call number), so a
// call sees the same downstream whatever order goroutines run in.
package sim
