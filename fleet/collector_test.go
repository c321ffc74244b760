package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// newTestCollector returns an unstarted Fleet with the gates "a" and "b"
// (on a client that is never called) and its Collector.
func newTestCollector(t *testing.T, prefix string) (*Fleet, *Collector) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { client.Close() })
	f, err := New(client, Config{Prefix: prefix, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, name := range []string{"a", "b"} {
		if _, err := f.Budget(name); err != nil {
			t.Fatal(err)
		}
	}
	c, err := NewCollector(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

const fleetHelp = `# HELP floodgate_fleet_breaker_held 1 while the fleet holds this process's breaker of the gate open (its calls refused with ErrOpen, but for the prober's probes), 0 otherwise; for attached gates. The breaker's own state is floodgate_breaker_state.
# TYPE floodgate_fleet_breaker_held gauge
# HELP floodgate_fleet_breaker_state State of the gate's fleet breaker, decided in Redis on the summed counts of every process, as this process read it at its last successful sync: 0 closed, 1 half-open (one process probes), 2 open. Applied only while floodgate_fleet_shared is 1; absent for a gate not attached (Fleet.Attach) and before the first sync.
# TYPE floodgate_fleet_breaker_state gauge
# HELP floodgate_fleet_budget_tokens Retry budget tokens in the gate's fleet bucket in Redis, shared by every process of the fleet, as this process read it at its last successful sync (at most Interval old while floodgate_fleet_shared is 1, older while it is 0); absent before the first. The tokens this process holds locally are floodgate_retry_budget_tokens.
# TYPE floodgate_fleet_budget_tokens gauge
# HELP floodgate_fleet_fallbacks_total Times this process fell back to local mode because a sync with Redis failed or timed out (a stretch of failed syncs counts once).
# TYPE floodgate_fleet_fallbacks_total counter
# HELP floodgate_fleet_shared Fleet mode of this process: 1 shared (its last sync with Redis succeeded), 0 local (before the first sync, after a failed or timed-out sync until one succeeds, and after Close).
# TYPE floodgate_fleet_shared gauge
`

// The series before the first sync, in shared mode, after a fallback
// (the buckets keep the last level read) and after recovery; the state
// and counts are set as the sync sets them.
func TestCollectorValues(t *testing.T) {
	f, c := newTestCollector(t, "shop")
	check := func(step, series string) {
		t.Helper()
		if err := testutil.CollectAndCompare(c, strings.NewReader(fleetHelp+series)); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	check("before the first sync", `
floodgate_fleet_fallbacks_total{fleet="shop",side="client"} 0
floodgate_fleet_shared{fleet="shop",side="client"} 0
`)
	f.gates["a"].level.Store(150 * retry.CreditsPerToken / 10) // 15 tokens
	f.gates["b"].level.Store(0)
	f.setState(Shared)
	check("shared", `
floodgate_fleet_budget_tokens{fleet="shop",gate="a",side="client"} 15
floodgate_fleet_budget_tokens{fleet="shop",gate="b",side="client"} 0
floodgate_fleet_fallbacks_total{fleet="shop",side="client"} 0
floodgate_fleet_shared{fleet="shop",side="client"} 1
`)
	f.fail(errors.New("redis down"))
	f.fail(errors.New("redis still down"))
	check("after a fallback", `
floodgate_fleet_budget_tokens{fleet="shop",gate="a",side="client"} 15
floodgate_fleet_budget_tokens{fleet="shop",gate="b",side="client"} 0
floodgate_fleet_fallbacks_total{fleet="shop",side="client"} 1
floodgate_fleet_shared{fleet="shop",side="client"} 0
`)
	f.gates["a"].level.Store(3 * retry.CreditsPerToken / 2) // 1.5 tokens
	f.recovered()
	check("after recovery", `
floodgate_fleet_budget_tokens{fleet="shop",gate="a",side="client"} 1.5
floodgate_fleet_budget_tokens{fleet="shop",gate="b",side="client"} 0
floodgate_fleet_fallbacks_total{fleet="shop",side="client"} 1
floodgate_fleet_shared{fleet="shop",side="client"} 1
`)
	f.Close()
	check("after Close", `
floodgate_fleet_budget_tokens{fleet="shop",gate="a",side="client"} 1.5
floodgate_fleet_budget_tokens{fleet="shop",gate="b",side="client"} 0
floodgate_fleet_fallbacks_total{fleet="shop",side="client"} 1
floodgate_fleet_shared{fleet="shop",side="client"} 0
`)
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

// Registration: nil, twice the same Fleet or prefix (AlreadyRegistered),
// two prefixes in one registry.
func TestCollectorRegistration(t *testing.T) {
	if c, err := NewCollector(nil); err == nil || c != nil {
		t.Errorf("NewCollector(nil) = %v, %v; want an error", c, err)
	}
	f, c := newTestCollector(t, "one")
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	again, err := NewCollector(f)
	if err != nil {
		t.Fatal(err)
	}
	_, same := newTestCollector(t, "one")
	for _, dup := range []prometheus.Collector{c, again, same} {
		var are prometheus.AlreadyRegisteredError
		if err := reg.Register(dup); !errors.As(err, &are) {
			t.Errorf("registering a second collector of prefix one: %v, want AlreadyRegisteredError", err)
		}
	}
	_, other := newTestCollector(t, "two")
	if err := reg.Register(other); err != nil {
		t.Errorf("a second prefix: %v", err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
	if n := testutil.CollectAndCount(c); n != 2 {
		t.Errorf("%d series before any sync, want 2 (no bucket series)", n)
	}
}

// The fleet breaker's series: only for an attached gate; held from the
// breaker's hold, state from the last sync's reading (absent before one).
func TestCollectorBreaker(t *testing.T) {
	f, c := newTestCollector(t, "shop")
	b, _ := f.Budget("a")
	g, err := floodgate.New("a", floodgate.WithRetry(retry.Config{Budget: b}))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Attach(g); err != nil {
		t.Fatal(err)
	}
	check := func(step, series string) {
		t.Helper()
		err := testutil.CollectAndCompare(c, strings.NewReader(fleetHelp+series), "floodgate_fleet_breaker_state", "floodgate_fleet_breaker_held")
		if err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	check("attached, before the first sync", `
floodgate_fleet_breaker_held{fleet="shop",gate="a",side="client"} 0
`)
	f.gates["a"].brk.state.Store(int32(breaker.Open) + 1)
	g.Breaker().Hold(time.Minute, 0)
	check("held open", `
floodgate_fleet_breaker_held{fleet="shop",gate="a",side="client"} 1
floodgate_fleet_breaker_state{fleet="shop",gate="a",side="client"} 2
`)
	f.gates["a"].brk.state.Store(int32(breaker.Closed) + 1)
	f.releaseBreakers()
	check("released", `
floodgate_fleet_breaker_held{fleet="shop",gate="a",side="client"} 0
floodgate_fleet_breaker_state{fleet="shop",gate="a",side="client"} 0
`)
	if st, ok := f.BreakerState("a"); !ok || st != breaker.Closed {
		t.Errorf("BreakerState(a) = %v, %v", st, ok)
	}
	if _, ok := f.BreakerState("b"); ok {
		t.Error("BreakerState(b), not attached: ok")
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}
