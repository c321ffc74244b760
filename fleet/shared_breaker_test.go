//go:build e2e

package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// proc is one process of the in-process breaker tests: a Fleet (its own
// process id) with gate "g" attached, one attempt per call.
type proc struct {
	name string
	f    *Fleet
	g    *floodgate.Gate
}

// newProc returns an unstarted proc on client, closed at the test's end;
// the tests sync it by hand (syncAll) or Start it.
func newProc(t *testing.T, name string, client redis.UniversalClient, cfg Config, bc breaker.Config) *proc {
	t.Helper()
	f, b := newFleet(t, client, cfg)
	g, err := floodgate.New("g", floodgate.WithRetry(retry.Config{Budget: b, MaxAttempts: 1}), floodgate.WithBreaker(bc))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Attach(g); err != nil {
		t.Fatal(err)
	}
	return &proc{name, f, g}
}

// calls makes n Guard calls whose fn ends with err, and returns how many
// reached fn and how many the breaker refused.
func (p *proc) calls(n int, err error) (reached, refused int) {
	for range n {
		e := p.g.Guard(context.Background(), func(context.Context) error { reached++; return err })
		if errors.Is(e, breaker.ErrOpen) {
			refused++
		}
	}
	return reached, refused
}

// fleetState returns p's reading of the fleet breaker, "none" without one.
func (p *proc) fleetState() string {
	st, ok := p.f.BreakerState("g")
	if !ok {
		return "none"
	}
	return st.String()
}

var errFail = retry.Transient(errors.New("downstream failing"))

// Three processes step by step. Each fails fewer calls than MinCalls, the
// fleet's sum reaches it: the fleet's breaker opens, and each process is
// held open at its next sync (its own breaker still closed), fn not
// called. After OpenFor the first to sync takes the probe lease and gets
// Probes calls through; the others stay held. A failed probe reopens it;
// after the next OpenFor the prober's Probes successes close it, and the
// others are released at their next sync.
func TestSharedBreakerSteps(t *testing.T) {
	c := newClient(t, redisAddr(t))
	cfg := Config{Prefix: prefix(t)}
	bc := breaker.Config{MinCalls: 10, OpenFor: 300 * time.Millisecond, Probes: 2, ProbeLease: 5 * time.Second}
	ps := []*proc{newProc(t, "p1", c, cfg, bc), newProc(t, "p2", c, cfg, bc), newProc(t, "p3", c, cfg, bc)}
	syncAll := func(order ...int) {
		for _, i := range order {
			ps[i].f.syncAll()
			if ps[i].f.State() != Shared {
				t.Fatalf("%s: state %v after a sync", ps[i].name, ps[i].f.State())
			}
		}
	}
	syncAll(0, 1, 2) // the first sync learns the generation; its counts are ignored
	for i, n := range []int{4, 3, 3} {
		if reached, refused := ps[i].calls(n, errFail); reached != n || refused != 0 {
			t.Fatalf("%s: %d of %d calls reached fn, %d refused", ps[i].name, reached, n, refused)
		}
	}
	syncAll(0, 1)
	if ps[1].fleetState() != "closed" {
		t.Fatalf("7 failures of 10 MinCalls: fleet %s, want closed", ps[1].fleetState())
	}
	syncAll(2) // p3's counts make 10 failures
	if ps[2].fleetState() != "open" {
		t.Fatalf("10 failures in the fleet: %s, want open", ps[2].fleetState())
	}
	syncAll(0, 1)
	for _, p := range ps {
		reached, refused := p.calls(5, nil)
		if reached != 0 || refused != 5 || !p.g.Breaker().Held() || p.g.Breaker().State() != breaker.Closed {
			t.Errorf("%s, fleet open: %d calls reached fn, %d refused, held %v, own breaker %v; want 0, 5, true, closed",
				p.name, reached, refused, p.g.Breaker().Held(), p.g.Breaker().State())
		}
	}

	halfOpen := func(first int, probe error) {
		t.Helper()
		time.Sleep(bc.OpenFor + 20*time.Millisecond)
		syncAll(first)
		syncAll(0, 1, 2)
		for i, p := range ps {
			if p.fleetState() != "half-open" {
				t.Fatalf("after OpenFor: %s reads %s, want half-open", p.name, p.fleetState())
			}
			reached, refused := p.calls(4, probe)
			want := 0
			if i == first {
				want = bc.Probes
			}
			if reached != want || refused != 4-want {
				t.Errorf("half-open, %s first: %s had %d calls reach fn, %d refused; want %d, %d",
					ps[first].name, p.name, reached, refused, want, 4-want)
			}
		}
	}
	halfOpen(1, errFail)
	syncAll(1)
	if ps[1].fleetState() != "open" {
		t.Fatalf("a failed probe: fleet %s, want open", ps[1].fleetState())
	}
	syncAll(0, 2)
	halfOpen(2, nil)
	syncAll(2)
	if ps[2].fleetState() != "closed" {
		t.Fatalf("Probes successes: fleet %s, want closed", ps[2].fleetState())
	}
	syncAll(0, 1) // one sync each: released
	for _, p := range ps {
		if reached, refused := p.calls(3, nil); reached != 3 || refused != 0 || p.g.Breaker().Held() {
			t.Errorf("%s after the close: %d calls reached fn, %d refused, held %v; want 3, 0, false",
				p.name, reached, refused, p.g.Breaker().Held())
		}
	}
	// the closed generation starts afresh: the old failures are gone
	syncAll(0, 1, 2)
	if ps[0].fleetState() != "closed" || ps[0].g.Breaker().Counts().Failures != 0 {
		t.Errorf("after the close: fleet %s, p1's window %+v; want closed, no failures", ps[0].fleetState(), ps[0].g.Breaker().Counts())
	}
}

// openTime returns the length of the fleet breaker's last open, as its
// hash at key records it: until − since, on Redis's clock.
func openTime(t *testing.T, c *redis.Client, key string) time.Duration {
	t.Helper()
	v, err := c.HMGet(context.Background(), key, "until", "since").Result()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	s, _ := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	return time.Duration(u-s) * time.Millisecond
}

// The fleet's open time backs off as a process's own does: OpenFor after
// a trip from closed, twice the last open after each failed probe, at most
// MaxOpenFor, and OpenFor again after a close. Read from the breaker hash
// (until − since, on Redis's clock), so no timing is asserted. Before the
// backoff every open lasted MaxOpenFor: 400, 400, 400, 400, 400 ms.
//
//	| open                     | want   |
//	|---|--:|
//	| the trip from closed     | 100 ms |
//	| after failed probes 1–3  | 200, 400, 400 ms |
//	| the trip after a close   | 100 ms |
//	| a planted dur of 10⁶ ms  | MaxOpenFor, 400 ms |
func TestSharedBreakerOpenBacksOff(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	cfg := Config{Prefix: prefix(t)}
	// Two processes, 5 failures each: the fleet's sum trips, neither's own
	// window (MinCalls 10) does, so the probes go through.
	bc := breaker.Config{MinCalls: 10, OpenFor: 100 * time.Millisecond, MaxOpenFor: 400 * time.Millisecond, Probes: 1, ProbeLease: 5 * time.Second}
	ps := []*proc{newProc(t, "p1", c, cfg, bc), newProc(t, "p2", c, cfg, bc)}
	key := breakerKeys(cfg.Prefix, "g")[0]
	openFor := func() time.Duration { t.Helper(); return openTime(t, c, key) }
	trip := func() {
		t.Helper()
		for _, p := range ps {
			p.f.syncAll() // learns the generation
		}
		for _, p := range ps {
			p.calls(5, errFail)
		}
		for _, p := range ps {
			p.f.syncAll()
		}
		ps[0].f.syncAll() // p1 reads what p2's counts did
		if ps[0].fleetState() != "open" {
			t.Fatalf("10 failures in the fleet: %s, want open", ps[0].fleetState())
		}
	}
	// probe waits out the open; p1 takes the lease and makes the probe.
	probe := func(err error) {
		t.Helper()
		p := ps[0]
		for p.fleetState() == "open" {
			time.Sleep(10 * time.Millisecond)
			p.f.syncAll()
		}
		if p.fleetState() != "half-open" {
			t.Fatalf("after the open: fleet %s, want half-open", p.fleetState())
		}
		if reached, _ := p.calls(1, err); reached != 1 {
			t.Fatal("the prober's probe did not reach fn")
		}
		p.f.syncAll()
	}
	var got []time.Duration
	trip()
	got = append(got, openFor())
	for range 3 {
		probe(errFail)
		if ps[0].fleetState() != "open" {
			t.Fatalf("a failed probe: fleet %s, want open", ps[0].fleetState())
		}
		got = append(got, openFor())
	}
	probe(nil)
	if ps[0].fleetState() != "closed" {
		t.Fatalf("a successful probe: fleet %s, want closed", ps[0].fleetState())
	}
	trip()
	got = append(got, openFor())
	const ms = time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 400 * ms, 100 * ms}
	t.Logf("open times %v", got)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("open times %v, want %v", got, want)
			break
		}
	}
	// A planted length is brought into [OpenFor, MaxOpenFor] when doubled:
	// 2 × min(10⁶ ms, MaxOpenFor), at most MaxOpenFor (unclamped, until −
	// since would read 2 × 10⁶ ms).
	probe(errFail)
	c.HSet(ctx, key, "dur", "1000000")
	probe(errFail)
	if d := openFor(); d != bc.MaxOpenFor {
		t.Errorf("a planted dur of 10⁶ ms: open %v, want MaxOpenFor (%v)", d, bc.MaxOpenFor)
	}
}

// Processes with other breaker settings do not rewrite each other's open
// time: p1 (OpenFor 100 ms, MaxOpenFor 400 ms) trips the fleet, p2 (1 s,
// 4 s) syncs during the open, and p1's failed probe doubles p1's 100 ms.
// Found by review: each sync brought dur into the syncing process's range,
// so p2's sync made it 1 s and p1's next open 400 ms.
//
//	| after p1's failed probe | open   |
//	|---|--:|
//	| dur rewritten by p2's sync (before) | 400 ms |
//	| dur kept                            | 200 ms |
func TestSharedBreakerOpenMixedSettings(t *testing.T) {
	c := newClient(t, redisAddr(t))
	cfg := Config{Prefix: prefix(t)}
	p1 := newProc(t, "p1", c, cfg, breaker.Config{MinCalls: 10, OpenFor: 100 * time.Millisecond, MaxOpenFor: 400 * time.Millisecond, Probes: 1, ProbeLease: 5 * time.Second})
	p2 := newProc(t, "p2", c, cfg, breaker.Config{MinCalls: 10, OpenFor: time.Second, MaxOpenFor: 4 * time.Second, Probes: 1, ProbeLease: 5 * time.Second})
	key := breakerKeys(cfg.Prefix, "g")[0]
	openFor := func() time.Duration { t.Helper(); return openTime(t, c, key) }
	p2.f.syncAll()
	p1.f.syncAll()
	p2.calls(5, errFail)
	p1.calls(5, errFail)
	p2.f.syncAll()
	p1.f.syncAll() // p1's counts make 10 failures: p1 trips it
	if p1.fleetState() != "open" || openFor() != 100*time.Millisecond {
		t.Fatalf("p1's trip: fleet %s, open %v; want open, 100ms", p1.fleetState(), openFor())
	}
	p2.f.syncAll() // during the open
	for p1.fleetState() == "open" {
		time.Sleep(10 * time.Millisecond)
		p1.f.syncAll()
	}
	if reached, _ := p1.calls(1, errFail); reached != 1 || p1.fleetState() != "half-open" {
		t.Fatalf("p1's probe: reached %d, fleet %s; want 1, half-open", reached, p1.fleetState())
	}
	p1.f.syncAll()
	if d := openFor(); p1.fleetState() != "open" || d != 200*time.Millisecond {
		t.Errorf("p1's failed probe: fleet %s, open %v; want open, 200ms (twice p1's 100 ms)", p1.fleetState(), d)
	}
}

// One process's own path is broken: its breaker trips alone, the fleet's
// stays closed on the healthy processes' successes, and they keep serving.
func TestSharedBreakerOnePathBroken(t *testing.T) {
	c := newClient(t, redisAddr(t))
	cfg := Config{Prefix: prefix(t)}
	bc := breaker.Config{MinCalls: 10}
	ps := []*proc{newProc(t, "p1", c, cfg, bc), newProc(t, "p2", c, cfg, bc), newProc(t, "p3", c, cfg, bc)}
	for _, p := range ps {
		p.f.syncAll()
	}
	for round := range 5 {
		ps[0].calls(6, errFail)
		ps[1].calls(6, nil)
		ps[2].calls(6, nil)
		for _, p := range ps {
			p.f.syncAll()
			if p.fleetState() != "closed" || p.g.Breaker().Held() {
				t.Fatalf("round %d: %s reads the fleet %s, held %v; want closed, not held", round, p.name, p.fleetState(), p.g.Breaker().Held())
			}
		}
	}
	if ps[0].g.Breaker().State() != breaker.Open {
		t.Errorf("p1's own breaker %v, want open", ps[0].g.Breaker().State())
	}
	for _, p := range ps[1:] {
		if reached, refused := p.calls(10, nil); reached != 10 || refused != 0 {
			t.Errorf("%s: %d of 10 calls reached fn, %d refused", p.name, reached, refused)
		}
	}
}

// A gate that is not attached has no breaker keys; corrupted breaker keys
// heal at the next sync; the keys carry KeyTTL.
func TestSharedBreakerKeys(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	p := prefix(t)
	f, _ := newFleet(t, c, Config{Prefix: p})
	f.syncAll()
	keys := breakerKeys(p, "g")
	if n, err := c.Exists(ctx, keys...).Result(); err != nil || n != 0 {
		t.Errorf("unattached gate: %d breaker keys (%v), want 0", n, err)
	}
	if _, ok := f.BreakerState("g"); ok {
		t.Error("BreakerState of an unattached gate: ok")
	}
	pr := newProc(t, "p1", c, Config{Prefix: p}, breaker.Config{})
	pr.f.syncAll()
	if pr.fleetState() != "closed" {
		t.Fatalf("first sync: %s", pr.fleetState())
	}
	for _, k := range keys[:2] {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil || ttl <= 9*time.Minute || ttl > DefaultKeyTTL {
			t.Errorf("%s: TTL %v (%v), want KeyTTL", k, ttl, err)
		}
	}
	for _, corrupt := range []func(){
		func() { c.Set(ctx, keys[0], "x", 0); c.Set(ctx, keys[1], "y", 0); c.HSet(ctx, keys[2], "a", "b") },
		func() { c.HSet(ctx, keys[0], "st", "9", "gen", "z"); c.HSet(ctx, keys[1], "other", "not counts") },
	} {
		corrupt()
		pr.f.syncAll()
		if pr.f.State() != Shared || pr.fleetState() != "closed" {
			t.Errorf("corrupted keys: state %v, fleet %s; want shared, closed", pr.f.State(), pr.fleetState())
		}
	}
	if n, _ := c.HLen(ctx, keys[1]).Result(); n != 1 {
		t.Errorf("counts hash holds %d fields after healing, want 1", n)
	}
}

// Redis killed while the fleet's breaker holds two started processes open:
// each releases its hold within one Interval (+ Timeout) and its own
// breaker decides (closed: calls reach fn). Redis back (empty): they share
// again, the fleet's breaker closed (their windows, kept through the
// outage, hold 5 failures of 15 calls each).
func TestSharedBreakerFallback(t *testing.T) {
	s := ownRedis(t)
	c := newClient(t, s.addr)
	cfg := Config{Prefix: prefix(t)}
	bc := breaker.Config{MinCalls: 10, OpenFor: time.Minute}
	ps := []*proc{newProc(t, "p1", c, cfg, bc), newProc(t, "p2", c, cfg, bc)}
	for _, p := range ps {
		if err := p.f.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, limit time.Duration, cond func() bool) time.Duration {
		t.Helper()
		began := time.Now()
		for !cond() {
			if time.Since(began) > limit {
				t.Fatalf("%s: not within %v", what, limit)
			}
			time.Sleep(time.Millisecond)
		}
		return time.Since(began)
	}
	waitFor("shared", 5*time.Second, func() bool { return ps[0].f.State() == Shared && ps[1].f.State() == Shared })
	time.Sleep(2 * DefaultInterval) // both have learned the generation
	ps[0].calls(5, errFail)
	ps[1].calls(5, errFail)
	waitFor("held", 5*time.Second, func() bool { return ps[0].g.Breaker().Held() && ps[1].g.Breaker().Held() })
	s.kill()
	killed := time.Now()
	for _, p := range ps {
		waitFor(p.name+" released", 5*time.Second, func() bool { return !p.g.Breaker().Held() })
		d := time.Since(killed)
		t.Logf("%s: released %v after the kill (Interval %v, Timeout %v)", p.name, d.Round(time.Millisecond), DefaultInterval, DefaultTimeout)
		if d > 2*DefaultInterval+DefaultTimeout {
			t.Errorf("%s: released %v after the kill, want within the next sync and its Timeout (+ an Interval of slack)", p.name, d)
		}
		if p.f.State() != Local || p.f.Fallbacks() != 1 {
			t.Errorf("%s: state %v, %d fallbacks; want local, 1", p.name, p.f.State(), p.f.Fallbacks())
		}
		// 10 successes: 5 failures in 15 calls, under FailureRatio once shared again
		if reached, refused := p.calls(10, nil); reached != 10 || refused != 0 {
			t.Errorf("%s local: %d of 10 calls reached fn, %d refused", p.name, reached, refused)
		}
	}
	s.start()
	for _, p := range ps {
		waitFor(p.name+" shared again", 5*time.Second, func() bool { return p.f.State() == Shared && p.fleetState() == "closed" })
		if p.g.Breaker().Held() {
			t.Errorf("%s held after Redis came back empty", p.name)
		}
	}
}

// Close releases the holds: the gates go on alone.
func TestSharedBreakerClose(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := newProc(t, "p1", c, Config{Prefix: prefix(t)}, breaker.Config{MinCalls: 5, OpenFor: time.Minute})
	p.f.syncAll()
	p.calls(5, errFail)
	p.f.syncAll()
	p.f.syncAll()
	if !p.g.Breaker().Held() {
		t.Fatal("not held with the fleet open")
	}
	p.f.Close()
	if p.g.Breaker().Held() {
		t.Error("held after Close")
	}
}

// Redis slow (an in-process toxiproxy adds 1 s to its answers) while the
// fleet's breaker holds a started process open: the next sync times out
// and releases the hold, within Interval + Timeout; healed, it is held
// again.
func TestSharedBreakerRedisSlow(t *testing.T) {
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(api, "redis", "127.0.0.1:0", redisAddr(t))
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	defer proxy.Stop()
	c := newClient(t, proxy.Listen)
	p := newProc(t, "p1", c, Config{Prefix: prefix(t)}, breaker.Config{MinCalls: 5, OpenFor: time.Minute})
	if err := p.f.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) time.Duration {
		t.Helper()
		began := time.Now()
		for !cond() {
			if time.Since(began) > 10*time.Second {
				t.Fatalf("%s: not within 10 s", what)
			}
			time.Sleep(time.Millisecond)
		}
		return time.Since(began)
	}
	waitFor("shared", func() bool { return p.f.State() == Shared })
	time.Sleep(2 * DefaultInterval)
	p.calls(5, errFail)
	waitFor("held", p.g.Breaker().Held)
	js := `{"name":"slow","type":"latency","stream":"downstream","attributes":{"latency":1000}}`
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Fatal(err)
	}
	d := waitFor("released", func() bool { return !p.g.Breaker().Held() })
	t.Logf("released %v after the latency began (Interval %v, Timeout %v)", d.Round(time.Millisecond), DefaultInterval, DefaultTimeout)
	if d > 2*DefaultInterval+DefaultTimeout || p.f.State() != Local {
		t.Errorf("released %v after Redis got slow, state %v; want within the next sync and its Timeout (+ an Interval of slack), local", d, p.f.State())
	}
	if err := proxy.Toxics.RemoveToxic(context.Background(), "slow"); err != nil {
		t.Fatal(err)
	}
	waitFor("held again", func() bool { return p.f.State() == Shared && p.g.Breaker().Held() })
}
