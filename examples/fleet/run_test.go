//go:build e2e

package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A short run against the Redis scripts/e2e-fleet.sh started: the program
// finishes and prints its table, every replica shared, and the replicas'
// caps sum to the FleetLimit of 30 (a new cap record holds every cap at 1
// for HeartbeatTTL, 1 s: the run lasts 2 s; the other numbers: the fleet
// package's tests assert those).
func TestShortRun(t *testing.T) {
	addr := os.Getenv("FLOODGATE_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FLOODGATE_REDIS_ADDR is not set (CI is set, so this is a failure): run bash scripts/e2e-fleet.sh, which starts a Redis")
		}
		t.Skip("FLOODGATE_REDIS_ADDR is not set: run bash scripts/e2e-fleet.sh, which starts a Redis and runs this test")
	}
	var out strings.Builder
	if err := run(options{redis: addr, replicas: 3, calls: 600, span: 2 * time.Second, limit: 30}, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"r1 ", "r2 ", "r3 ", "fleet ", "bound: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table has no %q", want)
		}
	}
	if strings.Count(out.String(), " shared   10\n") != 3 {
		t.Errorf("not every replica ends shared with a cap of 10 (FleetLimit 30 / 3):\n%s", out.String())
	}
}
