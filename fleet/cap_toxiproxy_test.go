//go:build e2e

package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Redis slow: an in-process toxiproxy between 2 processes (one Fleet each,
// FleetLimit 30, 15 each) and Redis adds a 2 s latency to Redis's answers
// for 1 s. Both fall back to local mode within Interval + Timeout (+ slack),
// keep their caps at 15 and go on serving, none slowed (Guard never waits
// on Redis); after the heal they share again with the same caps; the sum
// of the caps never exceeds 30.
func TestFleetCapSlowRedis(t *testing.T) {
	addr := redisAddr(t)
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(api, "redis", "127.0.0.1:0", addr)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	defer proxy.Stop()
	cfg := Config{Prefix: prefix(t), FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond}
	f1, g1 := capFleet(t, newClient(t, proxy.Listen), cfg)
	f2, g2 := capFleet(t, newClient(t, proxy.Listen), cfg)
	w := watchCaps(g1, g2)
	for _, f := range []*Fleet{f1, f2} {
		if err := f.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "15 each", capsAre(15, g1, g2))
	js := `{"name":"slow","type":"latency","stream":"downstream","attributes":{"latency":2000}}`
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Fatal(err)
	}
	local := waitFor(t, 5*time.Second, "local", func() bool { return f1.State() == Local && f2.State() == Local })
	var slowest time.Duration
	for range 1000 {
		start := time.Now()
		if err := g1.Guard(context.Background(), ok); err != nil {
			t.Fatalf("Guard while Redis is slow: %v", err)
		}
		slowest = max(slowest, time.Since(start))
	}
	time.Sleep(500 * time.Millisecond) // past HeartbeatTTL
	held := capsAre(15, g1, g2)()
	if err := proxy.Toxics.RemoveToxic(context.Background(), "slow"); err != nil {
		t.Fatal(err)
	}
	back := waitFor(t, 10*time.Second, "shared", func() bool { return f1.State() == Shared && f2.State() == Shared })
	t.Logf("Redis 2 s slow: both local %.0f ms later, caps held %v, slowest of 1,000 Guard calls %v; shared %.0f ms after the heal",
		local.Seconds()*1000, held, slowest, back.Seconds()*1000)
	if local > DefaultInterval+DefaultTimeout+200*time.Millisecond {
		t.Errorf("local %v after the latency began, want ≤ Interval + Timeout (+200 ms of slack)", local)
	}
	if !held {
		t.Errorf("caps %d %d while Redis is slow, want 15 15 (held)", g1.Limiter().Cap(), g2.Limiter().Cap())
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("slowest Guard %v while Redis is slow, want ≤ 100 ms", slowest)
	}
	waitFor(t, 5*time.Second, "15 each again", capsAre(15, g1, g2))
	if m := w.end(); m > 30 {
		t.Errorf("the sum of the caps reached %d, want ≤ 30", m)
	}
	if f1.Fallbacks() != 1 || f2.Fallbacks() != 1 {
		t.Errorf("fallbacks %d %d, want 1 1", f1.Fallbacks(), f2.Fallbacks())
	}
}
