// Package fleet shares floodgate's retry budget and circuit breaker between
// the processes of a fleet through Redis, and optionally caps the calls in
// flight fleet-wide, with Redis never on the hot path (issue 15).
//
// The model: each gate name has one token bucket in Redis, the fleet's,
// holding at most Max tokens. Every process keeps a local
// [retry.Budget] per gate, which Guard uses as without fleet mode: each
// original call deposits Ratio tokens, each retry withdraws one, one
// atomic each. Every Interval a background sync runs one Lua script per
// gate (EVALSHA; EVAL when Redis answers NOSCRIPT, which loads it): it
// moves what the local budget holds above Lease into the fleet bucket (up
// to Max) and tops the local budget up to Lease from it (as far as it
// holds tokens). So between syncs a process spends its lease and its own
// deposits, and the fleet as a whole retries at most
//
//	Ratio × original calls + Max + processes × Lease
//
// (deposits made while the fleet bucket is full, or above LocalMax between
// two syncs, are lost, so it retries less). When a sync fails or takes
// longer than Timeout, the process is in local mode: its budgets keep
// their tokens and earn up to LocalMax, as without fleet mode, until a
// sync succeeds; then what they hold above Lease is dropped and sharing
// resumes.
//
// The shared breaker, for a gate given to [Fleet.Attach]: each sync also
// runs a second script per gate that publishes the counts of the gate's
// breaker window (calls, failures, slow calls) under the process's id and
// runs the fleet's breaker, in Redis and on Redis's clock, on the sum of
// every process's fresh counts, with the gate's own breaker thresholds. It
// opens when the sum holds MinCalls calls and reaches FailureRatio or
// SlowRatio and more than half of the processes with calls reach a ratio
// on their own counts (one whose counts are for another generation, or
// none yet, counts as not reaching it: a minority whose own path is broken,
// however busy or first to sync, does not open it); then every process holds its breaker open
// ([breaker.Breaker.Hold]: ErrOpen at once, fn not called) from its next
// sync, for the rest of the fleet's open: OpenFor after a trip from
// closed, twice the last open after each failed probe, at most MaxOpenFor,
// as a process's own breaker does. Then half-open: the first process to sync takes a
// probe lease (PX ProbeLease) and lets Probes calls through; the others
// stay held; a failed or slow probe reopens it, Probes successes close it,
// and the others are released at their next sync. Each process's own
// breaker keeps deciding for it alone underneath; when a sync fails, every
// hold is released at once, so that each breaker decides alone.
//
// The fleet-wide concurrency cap (Config.FleetLimit, off by default; for
// the gates given to [Fleet.Attach]): each sync also runs a third script
// per attached gate, which records the process's heartbeat and the cap
// its limiter holds (Redis's clock) with the lifetime it declares
// (HeartbeatTTL, longer if its rounds of syncs are slow), counts a
// process live for its lifetime and keeps its cap reserved for one more
// (then forgets it), and grants the process its share of FleetLimit
// among the n live ones (FleetLimit/n, the remainder to the first in id
// order), at most what the others' recorded caps (live or reserved)
// leave free; the process then caps its limiter there
// ([github.com/floodgate-go/floodgate/adaptive.Limiter.SetCap]), which
// lowers the limit at once. A process raises its cap only after Redis
// recorded it, and reports a lower one only after it applied it, so the
// caps of the live processes sum to at most FleetLimit, plus 1 for each
// process that joined within the last few intervals (Attach caps it at 1
// until it gets a share), while every process reaches Redis at least
// once every 2 lifetimes. When a process exits, the others divide its
// share 2 lifetimes after its last sync; when syncs fail, the limiter
// keeps its last share, and a record with no live field holds every cap
// for a lifetime once Redis answers again.
// [Fleet.Share] reads it.
//
// [NewCollector] exports the mode, the fallbacks, the fleet buckets, the
// fleet breakers and the caps to Prometheus. docs/fleet.md has the key
// layout, the bounds, the failure modes and the metrics.
//
//	f, err := fleet.New(redisClient, fleet.Config{})
//	budget, err := f.Budget("shipping-quote")
//	gate, err := floodgate.New("shipping-quote", floodgate.WithRetry(retry.Config{Budget: budget}))
//	err = f.Attach(gate) // the breaker, and the fleet-wide cap (Config.FleetLimit)
//	err = f.Start()
//	defer f.Close()
package fleet
