//go:build e2e

package fleet

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The collector over real syncs with a Redis killed and restarted: the
// bucket's level after the first sync, the stale level and one fallback
// while Redis is down, shared again with the new level after it is back.
func TestCollectorRedisFallback(t *testing.T) {
	s := ownRedis(t)
	c := newClient(t, s.addr)
	f, b := newFleet(t, c, Config{Prefix: prefix(t), Max: 10, Lease: 2})
	col, err := NewCollector(f)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name string) float64 {
		t.Helper()
		v, err := collected(col, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(step string, shared, fallbacks, tokens float64) {
		t.Helper()
		if s, fb, tk := value("floodgate_fleet_shared"), value("floodgate_fleet_fallbacks_total"), value("floodgate_fleet_budget_tokens"); s != shared || fb != fallbacks || tk != tokens {
			t.Errorf("%s: shared %v, fallbacks %v, bucket tokens %v; want %v, %v, %v", step, s, fb, tk, shared, fallbacks, tokens)
		}
	}
	if n := testutil.CollectAndCount(col, "floodgate_fleet_budget_tokens"); n != 0 {
		t.Errorf("%d bucket series before the first sync, want 0", n)
	}
	f.syncAll() // the bucket is created full (10), the lease (2) is already held
	check("first sync", 1, 0, 10)
	spend(b)
	f.syncAll() // 2 more from the bucket
	check("second sync", 1, 0, 8)
	s.kill()
	f.syncAll()
	f.syncAll()
	check("Redis down", 0, 1, 8)
	s.start()
	f.syncAll() // a new, empty Redis: the bucket is created full; the lease is still held
	check("Redis back", 1, 1, 10)
}

// collected returns the value of the first series named name that col
// exports.
func collected(col *Collector, name string) (float64, error) {
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(col); err != nil {
		return 0, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return 0, err
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), nil
			}
			return m.GetGauge().GetValue(), nil
		}
	}
	return 0, fmt.Errorf("no series %s", name)
}
