package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// The cap's fields: defaults, and errors naming the field and its range.
func TestCapConfig(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     Config
		want    string        // in the error; "" for none
		wantTTL time.Duration // HeartbeatTTL after defaults, if no error
	}{
		{"defaults", Config{}, "", time.Second},
		{"on", Config{FleetLimit: 30}, "", time.Second},
		{"largest", Config{FleetLimit: 1 << 20}, "", time.Second},
		{"slow interval", Config{Interval: time.Second}, "", 3 * time.Second},
		{"short KeyTTL", Config{Interval: 10 * time.Millisecond, KeyTTL: 100 * time.Millisecond}, "", 100 * time.Millisecond},
		{"set", Config{HeartbeatTTL: 5 * time.Second}, "", 5 * time.Second},
		{"negative", Config{FleetLimit: -1}, "FleetLimit must be in [0, 1048576]", 0},
		{"too large", Config{FleetLimit: 1<<20 + 1}, "FleetLimit must be in [0, 1048576]", 0},
		{"TTL short", Config{HeartbeatTTL: 299 * time.Millisecond}, "HeartbeatTTL must be in [3·Interval=300ms, KeyTTL=10m0s]", 0},
		{"TTL negative", Config{HeartbeatTTL: -time.Second}, "HeartbeatTTL must be in", 0},
		{"TTL over KeyTTL", Config{HeartbeatTTL: 11 * time.Minute}, "HeartbeatTTL must be in [3·Interval=300ms, KeyTTL=10m0s]", 0},
	} {
		s, err := validate(c.cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case c.want == "" && s.HeartbeatTTL != c.wantTTL:
			t.Errorf("%s: HeartbeatTTL %v, want %v", c.name, s.HeartbeatTTL, c.wantTTL)
		}
	}
}

// testFleet returns an unstarted Fleet on client with cfg (its Logger
// discarding unless set) and the budget of gate "g", closed at the test's
// end.
func testFleet(t testing.TB, client redis.UniversalClient, cfg Config) (*Fleet, *retry.Budget) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discard
	}
	f, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	b, err := f.Budget("g")
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// capFleet returns a Fleet on client with cfg and a gate named "g" of
// its, attached, not started; closed at the test's end.
func capFleet(t testing.TB, client redis.UniversalClient, cfg Config) (*Fleet, *floodgate.Gate) {
	t.Helper()
	f, b := testFleet(t, client, cfg)
	g, err := floodgate.New("g", floodgate.WithRetry(retry.Config{Budget: b}))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Attach(g); err != nil {
		t.Fatal(err)
	}
	return f, g
}

// Attach caps the limiter at 1 with FleetLimit, and leaves it alone
// without; Share has nothing before a sync.
func TestAttachCap(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	for _, c := range []struct{ limit, wantCap, wantLimit int }{{30, 1, 1}, {0, 0, 20}} {
		f, g := capFleet(t, client, Config{FleetLimit: c.limit})
		if got := g.Limiter().Cap(); got != c.wantCap || g.Limiter().Limit() != c.wantLimit {
			t.Errorf("FleetLimit %d: cap %d limit %d after Attach, want %d %d", c.limit, got, g.Limiter().Limit(), c.wantCap, c.wantLimit)
		}
		if s, n, ok := f.Share("g"); ok || s != 0 || n != 0 {
			t.Errorf("FleetLimit %d: Share %d %d %v before a sync, want 0 0 false", c.limit, s, n, ok)
		}
	}
}

// Redis unreachable from the start: the sync falls back to local mode,
// the gate keeps its cap of 1 and serves.
func TestCapRedisUnreachable(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer client.Close()
	f, g := capFleet(t, client, Config{FleetLimit: 30})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.Fallbacks() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if f.Fallbacks() != 1 || f.State() != Local {
		t.Fatalf("fallbacks %d, state %v; want 1, local", f.Fallbacks(), f.State())
	}
	if err := g.Guard(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Errorf("Guard: %v", err)
	}
	if g.Limiter().Cap() != 1 {
		t.Errorf("cap %d in local mode, want 1 (held)", g.Limiter().Cap())
	}
}

// The cap's series: the limiter's cap of each attached gate (1 from
// Attach), the live processes once a sync counted them; none with the cap
// off.
func TestCollectorCap(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	const help = `# HELP floodgate_fleet_limit_share Fleet-wide concurrency cap (Config.FleetLimit): the cap (calls in flight) the gate's limiter holds in this process, its share of FleetLimit as of its last successful sync (1 from Attach until the first; the last share while floodgate_fleet_shared is 0). Absent with the cap off or the gate not attached.
# TYPE floodgate_fleet_limit_share gauge
# HELP floodgate_fleet_live_processes Fleet-wide concurrency cap: the live processes (heartbeat within the lifetime it declared, HeartbeatTTL or more; this one included) that divide the gate's FleetLimit, as this process counted them at its last successful sync; absent before the first.
# TYPE floodgate_fleet_live_processes gauge
`
	names := []string{"floodgate_fleet_limit_share", "floodgate_fleet_live_processes"}
	f, g := capFleet(t, client, Config{Prefix: "shop", FleetLimit: 30})
	if _, err := f.Budget("unattached"); err != nil {
		t.Fatal(err)
	}
	c, err := NewCollector(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(help+`
floodgate_fleet_limit_share{fleet="shop",gate="g",side="client"} 1
`), names...); err != nil {
		t.Errorf("after Attach: %v", err)
	}
	// As a sync sets them.
	gs := f.gates["g"]
	_ = g.Limiter().SetCap(15)
	gs.cap.share.Store(15)
	gs.cap.live.Store(2)
	if err := testutil.CollectAndCompare(c, strings.NewReader(help+`
floodgate_fleet_limit_share{fleet="shop",gate="g",side="client"} 15
floodgate_fleet_live_processes{fleet="shop",gate="g",side="client"} 2
`), names...); err != nil {
		t.Errorf("after a sync: %v", err)
	}
	off, _ := capFleet(t, client, Config{Prefix: "off"})
	co, err := NewCollector(off)
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(co, names...); n != 0 {
		t.Errorf("cap off: %d cap series, want 0", n)
	}
}
