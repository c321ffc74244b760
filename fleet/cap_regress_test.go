//go:build e2e

// Regression tests of the fleet-wide cap, from an adversarial review
// (numbered as its defects): a cap key of the wrong type (1), fields dated
// in the future (2), a sync round slower than HeartbeatTTL (3), an outage
// for every process just under HeartbeatTTL (4), mixed configs on one gate
// (5).

package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// The cap key of the wrong type: the breaker's script heals a wrong type
// and the budget's overwrites it, the cap's errors with WRONGTYPE; syncAll
// stops at the first failure, so the process is local for good and every
// gate after it is never synced (budgets and breakers unshared).
func TestCap1WrongTypeKeyHealed(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	f, _ := capFleet(t, c, Config{Prefix: prefix(t), FleetLimit: 30})
	if _, err := f.Budget("other"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, capKey(f.s.Prefix, "g"), "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.syncAll()
	}
	_, otherSynced := f.Tokens("other")
	share, _, ok := f.Share("g")
	if f.State() != Shared || !otherSynced || !ok {
		t.Errorf("cap key of gate g SET to a string: after 5 syncs state %v, fallbacks %d, share %d %v, gate \"other\" synced %v; "+
			"want it healed as the breaker's and budget's keys are", f.State(), f.Fallbacks(), share, ok, otherSynced)
	}
}

// A cap field that matches "<digits> <digits>" but with a heartbeat in the
// future is never "not seen for HeartbeatTTL": it counts as a live
// process for ever, and its recorded cap leaves every real process at 1.
// The same for a future "+since": every share frozen at its held cap.
func TestCap2FutureFieldsDropped(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		fields []any
	}{
		{"ghost-process", []any{"zzghost", "99999999999999 1048576"}},
		{"future-since", []any{"+since", "99999999999999"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Prefix: shortPrefix(), FleetLimit: 30, Interval: 20 * time.Millisecond, HeartbeatTTL: 200 * time.Millisecond}
			f, g := capFleet(t, c, cfg)
			f.syncAll() // the process's field exists
			if err := c.HSet(ctx, capKey(f.s.Prefix, "g"), tc.fields...).Err(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(2 * time.Second) // 10 × HeartbeatTTL
			for time.Now().Before(deadline) {
				f.syncAll()
				time.Sleep(20 * time.Millisecond)
			}
			share, live, _ := f.Share("g")
			if share != 30 {
				v, _ := c.HGetAll(ctx, capKey(f.s.Prefix, "g")).Result()
				t.Errorf("%s: a single process, 2 s (10 × HeartbeatTTL) after planting %v: share %d, live %d, cap %d, key %v; want 30 (the field dropped)",
					tc.name, tc.fields, share, live, g.Limiter().Cap(), v)
			}
		})
	}
}

// capLatency delays every command by d before sending it: a Redis that is
// slow but answers well within Timeout.
type capLatency struct{ d time.Duration }

func (h capLatency) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h capLatency) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { time.Sleep(h.d); return next(ctx, cmd) }
}
func (h capLatency) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// capProcN is one process of the cap tests: a Fleet with the gates named,
// each attached.
func capProcN(t *testing.T, client redis.UniversalClient, cfg Config, names ...string) (*Fleet, []*floodgate.Gate) {
	t.Helper()
	cfg.Logger = discard
	f, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var gs []*floodgate.Gate
	for _, n := range names {
		b, err := f.Budget(n)
		if err != nil {
			t.Fatal(err)
		}
		g, err := floodgate.New(n, floodgate.WithRetry(retry.Config{Budget: b}))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Attach(g); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	return f, gs
}

// sampleCapSum samples the sum of the gates' caps for d, returning its max.
func sampleCapSum(d time.Duration, gs ...*floodgate.Gate) int {
	m := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		s := 0
		for _, g := range gs {
			s += g.Limiter().Cap()
		}
		m = max(m, s)
	}
	return m
}

// Every sync succeeding, well within Timeout, no partition: but a process
// with 8 attached gates and a 15 ms Redis takes 8 × 3 × 15 ms = 360 ms per
// round, more than HeartbeatTTL (300 ms, the 3·Interval that New
// accepts): its heartbeat for a gate lapses between two of its rounds,
// the other process counts it dead and takes FleetLimit while it still
// holds its share.
//
// With 16 gates (a 720 ms round) the heartbeat would lapse even past the
// one more lifetime a dead field's cap stays reserved: it takes each
// process declaring its own lifetime from its round.
func TestCap3SlowRoundKeepsHeartbeat(t *testing.T) {
	for _, gates := range []int{8, 16} {
		t.Run(fmt.Sprint(gates), func(t *testing.T) { capSlowRound(t, gates) })
	}
}

func capSlowRound(t *testing.T, gates int) {
	addr := redisAddr(t)
	slow := redis.NewClient(&redis.Options{Addr: addr})
	slow.AddHook(capLatency{15 * time.Millisecond})
	t.Cleanup(func() { slow.Close() })
	fast := newClient(t, addr)
	p := prefix(t)
	cfg := Config{Prefix: p, FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond, Timeout: 100 * time.Millisecond}
	var names []string
	for i := range gates {
		names = append(names, fmt.Sprintf("g%d", i))
	}
	fa, ga := capProcN(t, slow, cfg, names...)
	fb, gb := capProcN(t, fast, cfg, "g0")
	if err := fa.Start(); err != nil {
		t.Fatal(err)
	}
	if err := fb.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past the new record's hold, and A's first rounds (it declares HeartbeatTTL until it measured one)
	m, samples, starved := 0, 0, 0
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		a, b := ga[0].Limiter().Cap(), gb[0].Limiter().Cap()
		m = max(m, a+b)
		samples++
		if a < 10 {
			starved++
		}
	}
	t.Logf("%d gates: the caps of g0 summed to %d at most; A's below 10 in %d of %d samples", gates, m, starved, samples)
	if m > 31 || starved > samples/10 {
		t.Errorf("FleetLimit 30, two processes, every sync within Timeout (A: %d gates, state %v, %d fallbacks): the caps of gate g0 summed to %d at most (A %d, B %d at the end), A's cap below 10 in %d of %d samples; want ≤ 30 (+1), and A at its share (15) in 90%% of them",
			gates, fa.State(), fa.Fallbacks(), m, ga[0].Limiter().Cap(), gb[0].Limiter().Cap(), starved, samples)
	}
}

// Two processes of one gate with different Interval (so different
// HeartbeatTTL defaults), same FleetLimit: the fast one (HeartbeatTTL 1 s)
// deletes the slow one's field (synced every 2 s) between its syncs and
// takes the whole FleetLimit each time; the slow one, whenever it syncs,
// finds it taken and gets 1. New accepts the mix; nothing is logged.
func TestCap5MixedIntervalShares(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := prefix(t)
	fa, ga := capProcN(t, c, Config{Prefix: p, FleetLimit: 30, Interval: 2 * time.Second, Timeout: 50 * time.Millisecond}, "g") // HeartbeatTTL 6 s
	fb, gb := capProcN(t, c, Config{Prefix: p, FleetLimit: 30, Interval: 100 * time.Millisecond}, "g")                          // HeartbeatTTL 1 s
	fa.Start()
	fb.Start()
	time.Sleep(4 * time.Second)
	maxA := 0
	m := 0
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		a, b := ga[0].Limiter().Cap(), gb[0].Limiter().Cap()
		maxA, m = max(maxA, a), max(m, a+b)
	}
	_, liveB, _ := fb.Share("g")
	t.Logf("Interval 2 s and 100 ms: max sum %d, A's cap at most %d over 6 s; B sees %d live", m, maxA, liveB)
	if m > 31 || maxA < 10 {
		t.Errorf("FleetLimit 30 in both, Interval 2 s and 100 ms: caps summed to %d at most; the slow process's cap was at most %d over 6 s (B sees %d live); want ≤ 30 and about 15 each (or New/the script refusing the mix)",
			m, maxA, liveB)
	}
}

// Two processes with different FleetLimit on one gate name: reported, not
// asserted (docs say nothing of it).
func TestCap5MixedFleetLimit(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := prefix(t)
	cfg := Config{Prefix: p, Interval: 20 * time.Millisecond, HeartbeatTTL: 200 * time.Millisecond}
	cfg.FleetLimit = 10
	fa, ga := capProcN(t, c, cfg, "g")
	cfg.FleetLimit = 100
	fb, gb := capProcN(t, c, cfg, "g")
	fa.Start()
	fb.Start()
	time.Sleep(time.Second)
	m := sampleCapSum(time.Second, ga[0], gb[0])
	t.Logf("FleetLimit 10 and 100 on one gate: max sum %d; A %d, B %d", m, ga[0].Limiter().Cap(), gb[0].Limiter().Cap())
	if m > 10 {
		t.Errorf("FleetLimit 10 and 100 on one gate: sum of caps %d, above the smaller limit (A %d, B %d), no error or log", m, ga[0].Limiter().Cap(), gb[0].Limiter().Cap())
	}
}

// Redis down for both processes for a little under HeartbeatTTL, both
// back within 10 ms of each other (docs/fleet.md: the bound holds
// "provided every process reaches Redis again within HeartbeatTTL of the
// first"). B's last heartbeat before the outage was 90 ms older than A's:
// A, first back, finds B's older than HeartbeatTTL and deletes it, but
// its own (the newest) is younger, so the record does not restart: A takes
// all 30 while B holds 15.
func TestCap4OutageUnderTTLKeepsSum(t *testing.T) {
	addr := redisAddr(t)
	ha, hb := &failHook{}, &failHook{}
	ac := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	ac.AddHook(ha)
	bcl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	bcl.AddHook(hb)
	t.Cleanup(func() { ac.Close(); bcl.Close() })
	cfg := Config{Prefix: shortPrefix(), FleetLimit: 30, Interval: 100 * time.Millisecond, HeartbeatTTL: 300 * time.Millisecond}
	fa, ga := capProcN(t, ac, cfg, "g")
	fb, gb := capProcN(t, bcl, cfg, "g")
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		fa.syncAll()
		fb.syncAll()
	}
	if ga[0].Limiter().Cap() != 15 || gb[0].Limiter().Cap() != 15 {
		t.Fatalf("caps %d %d, want 15 15", ga[0].Limiter().Cap(), gb[0].Limiter().Cap())
	}
	fb.syncAll()
	time.Sleep(90 * time.Millisecond)
	fa.syncAll()
	ha.armed.Store(true) // Redis down for both
	hb.armed.Store(true)
	fa.syncAll()
	fb.syncAll()
	time.Sleep(250 * time.Millisecond) // < HeartbeatTTL since A's last sync
	ha.armed.Store(false)
	hb.armed.Store(false)
	fa.syncAll()
	sum := ga[0].Limiter().Cap() + gb[0].Limiter().Cap()
	fb.syncAll() // 10 ms or so after A
	if sum > 30 {
		t.Errorf("outage of 250 ms < HeartbeatTTL 300 ms for both, both back within ms: caps A %d + B %d = %d; want ≤ 30 (A's then B's state %v %v)",
			ga[0].Limiter().Cap(), 15, sum, fa.State(), fb.State())
	}
}
