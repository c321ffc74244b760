// Package fleet shares floodgate's retry budget between the processes of a
// fleet through Redis, with Redis never on the hot path (issue 15; the
// shared breaker and the fleet-wide concurrency cap are not built yet).
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
// resumes. [NewCollector] exports the mode, the fallbacks and the fleet
// buckets to Prometheus. docs/fleet.md has the key layout, the bounds, the
// failure modes and the metrics.
//
//	f, err := fleet.New(redisClient, fleet.Config{})
//	budget, err := f.Budget("shipping-quote")
//	gate, err := floodgate.New("shipping-quote", floodgate.WithRetry(retry.Config{Budget: budget}))
//	err = f.Start()
//	defer f.Close()
package fleet
