// Package adaptive is an adaptive concurrency limiter: it caps the number of
// calls in flight to a downstream and moves that cap (the limit) from what it
// observes, instead of using a fixed pool size.
//
// # Model
//
// Every call asks for a slot with [Limiter.Acquire]. If fewer than Limit calls
// are in flight the slot is granted at once (one compare-and-swap, no lock);
// otherwise the call is shed at once with [ErrShed]: the limiter never queues.
// When the call ends the slot is given back with [Limiter.Release], together
// with the call's round-trip time (RTT) and its outcome: [Success] (a sample
// of the downstream's latency), [Drop] (a timeout: the call held its slot
// until its deadline), [Overload] (an overload answer such as HTTP 503 or
// 429 before the deadline) or [Ignore] (the caller cancelled, or the error
// says nothing about load).
//
// Samples are summed into a window (atomic counters, no lock). A window closes
// once it is at least WindowMin old and holds min(MinSamples, limit)
// samples, or once it is WindowMax old with any sample at all, drops
// included: a window never needs a success to close. The goroutine whose
// Release closes the window hands the window's summary (samples, drops and
// overloads, mean, minimum and standard deviation of the successes' RTT,
// peak in-flight) to the [Algorithm], which returns the next limit; the limiter clamps it to [MinLimit, MaxLimit]. An
// Algorithm that is a [Grower] also lets Acquire raise the limit on demand
// between windows, up to its Ceiling, instead of shedding.
//
// [Limiter.SetCap] sets a runtime cap over both (package fleet divides a
// fleet-wide maximum among processes with it): the limit never goes above
// the cap, even when it is below MinLimit, and lowering the cap lowers the
// limit at once. Only the shed path and closing windows read it.
//
// # Algorithms
//
//   - [Gradient] (the default): cuts the limit only on evidence that our
//     own calls queue at the downstream: an RTT above its base cuts the
//     limit, and the cut is an experiment whose throughput tells a queue of
//     ours from a downstream that is merely slower (then the cut is undone);
//     timeouts cut by their share; overload answers do not move it. See its
//     doc.
//   - [AIMD]: additive increase, multiplicative decrease on drops, as in
//     Netflix concurrency-limits' AIMDLimit (after TCP Reno, RFC 5681).
//   - [Gradient2]: Netflix concurrency-limits' Gradient2Limit: the ratio of a
//     long-term RTT average to the window's RTT steers the limit.
//   - [Vegas]: TCP Vegas as Netflix concurrency-limits' VegasLimit applies
//     it: the queue estimated from no-load and current RTT steers the limit.
//   - [Fixed]: no adaptation; a semaphore that sheds instead of queueing.
//
// Limits, in-flight counts and sample counts are whole calls; RTTs are
// [time.Duration] values.
package adaptive
