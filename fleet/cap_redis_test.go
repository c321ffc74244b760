//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
)

// capWatch samples the caps of gates every 100 µs or so until stopped,
// and keeps the highest sum.
type capWatch struct {
	stop    atomic.Bool
	wg      sync.WaitGroup
	maxSum  atomic.Int64
	gates   []*floodgate.Gate
	samples atomic.Int64
}

func watchCaps(gates ...*floodgate.Gate) *capWatch {
	w := &capWatch{gates: gates}
	w.wg.Go(func() {
		for !w.stop.Load() {
			sum := 0
			for _, g := range w.gates {
				sum += g.Limiter().Cap()
			}
			raise64(&w.maxSum, int64(sum))
			w.samples.Add(1)
			time.Sleep(100 * time.Microsecond)
		}
	})
	return w
}

func (w *capWatch) end() int {
	w.stop.Store(true)
	w.wg.Wait()
	return int(w.maxSum.Load())
}

func raise64(v *atomic.Int64, n int64) {
	for m := v.Load(); n > m && !v.CompareAndSwap(m, n); m = v.Load() {
	}
}

// waitFor polls cond every millisecond for up to d and returns how long it
// took, failing the test if it never held.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(began)
}

// capsAre reports whether each gate's cap is want.
func capsAre(want int, gates ...*floodgate.Gate) func() bool {
	return func() bool {
		for _, g := range gates {
			if g.Limiter().Cap() != want {
				return false
			}
		}
		return true
	}
}

// In-process processes (one Fleet each, one client each) on one Redis,
// FleetLimit 30, HeartbeatTTL 300 ms: the first two start together and
// hold 1 each while the new record is younger than the TTL, then 15
// each; a third joins the full fleet: it starts at 1 (the sum is then at
// most 31, the documented bound of one call per joining process) and all
// three hold 10 within a few intervals; 31 → 30 is fixed by shares, never
// by a process giving up more than it must. A remainder: FleetLimit 31
// over 3 processes is 11 + 10 + 10.
func TestFleetCapJoin(t *testing.T) {
	addr := redisAddr(t)
	p := prefix(t)
	cfg := Config{Prefix: p, FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond}
	f1, g1 := capFleet(t, newClient(t, addr), cfg)
	f2, g2 := capFleet(t, newClient(t, addr), cfg)
	w := watchCaps(g1, g2)
	began := time.Now()
	for _, f := range []*Fleet{f1, f2} {
		if err := f.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "first sync", func() bool {
		_, _, ok1 := f1.Share("g")
		_, _, ok2 := f2.Share("g")
		return ok1 && ok2
	})
	if frozen := time.Since(began); frozen < 250*time.Millisecond && !capsAre(1, g1, g2)() {
		t.Errorf("caps %d %d %v after the start, want 1 1 (a new record holds the shares for HeartbeatTTL)",
			g1.Limiter().Cap(), g2.Limiter().Cap(), frozen)
	}
	waitFor(t, 5*time.Second, "15 each", capsAre(15, g1, g2))
	t.Logf("two processes: 15 each %.0f ms after the start (HeartbeatTTL 300 ms)", time.Since(began).Seconds()*1000)
	if time.Since(began) < 250*time.Millisecond {
		t.Errorf("15 each %v after the start, before HeartbeatTTL", time.Since(began))
	}
	if m := w.end(); m > 30 {
		t.Errorf("two processes: the sum of the caps reached %d, want ≤ 30", m)
	}

	f3, g3 := capFleet(t, newClient(t, addr), cfg)
	w = watchCaps(g1, g2, g3)
	if err := f3.Start(); err != nil {
		t.Fatal(err)
	}
	d := waitFor(t, 5*time.Second, "10 each", capsAre(10, g1, g2, g3))
	m := w.end()
	t.Logf("a third joins: 10 each %.0f ms after it started; highest sum of caps %d in %d samples", d.Seconds()*1000, m, w.samples.Load())
	if m > 31 {
		t.Errorf("a third joins: the sum of the caps reached %d, want ≤ 31 (FleetLimit + 1 joining)", m)
	}
	if s, n, ok := f3.Share("g"); s != 10 || n != 3 || !ok {
		t.Errorf("Share %d %d %v, want 10 3 true", s, n, ok)
	}

	// A remainder: 31 = 11 + 10 + 10, in id order.
	sum := 0
	cfg31 := cfg
	cfg31.Prefix = p + "-31"
	cfg31.FleetLimit = 31
	var gs []*floodgate.Gate
	for range 3 {
		f, g := capFleet(t, newClient(t, addr), cfg31)
		gs = append(gs, g)
		if err := f.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "shares of 31", func() bool {
		sum = 0
		for _, g := range gs {
			if c := g.Limiter().Cap(); c == 10 || c == 11 {
				sum += c
			}
		}
		return sum == 31
	})
}

// Redis killed under 2 processes holding 15 each: both fall back to local
// mode within Interval + Timeout, keep their caps (15), and go on serving.
// Then p2 is closed (a process that does not reach Redis again) and Redis
// restarted empty: p1 shares again, and the new record holds its cap at
// 15 for HeartbeatTTL (p2 could still be live and not have reported its
// cap yet) before it grows to 30. The sum of the caps never exceeds 30
// until p2 closes.
func TestFleetCapRedisRestart(t *testing.T) {
	s := ownRedis(t)
	p := prefix(t)
	cfg := Config{Prefix: p, FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond}
	f1, g1 := capFleet(t, newClient(t, s.addr), cfg)
	f2, g2 := capFleet(t, newClient(t, s.addr), cfg)
	w := watchCaps(g1, g2)
	for _, f := range []*Fleet{f1, f2} {
		if err := f.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "15 each", capsAre(15, g1, g2))
	s.kill()
	local := waitFor(t, 5*time.Second, "local", func() bool { return f1.State() == Local && f2.State() == Local })
	t.Logf("Redis killed: both local %.0f ms later", local.Seconds()*1000)
	if local > DefaultInterval+DefaultTimeout+200*time.Millisecond {
		t.Errorf("local %v after the kill, want ≤ Interval + Timeout (+200 ms of slack)", local)
	}
	time.Sleep(500 * time.Millisecond) // past HeartbeatTTL: nothing to count them by
	if !capsAre(15, g1, g2)() {
		t.Errorf("caps %d %d in local mode, want 15 15 (held)", g1.Limiter().Cap(), g2.Limiter().Cap())
	}
	if err := g1.Guard(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Errorf("Guard in local mode: %v", err)
	}
	if m := w.end(); m > 30 {
		t.Errorf("the sum of the caps reached %d, want ≤ 30", m)
	}
	f2.Close()
	if f1.Fallbacks() != 1 || f2.Fallbacks() != 1 {
		t.Errorf("fallbacks %d %d, want 1 1", f1.Fallbacks(), f2.Fallbacks())
	}
	s.start()
	back := waitFor(t, 10*time.Second, "shared", func() bool { return f1.State() == Shared })
	if g1.Limiter().Cap() != 15 {
		t.Errorf("cap %d once shared again, want 15 (held)", g1.Limiter().Cap())
	}
	waitFor(t, 5*time.Second, "30", capsAre(30, g1))
	// The hold, on Redis's clock: from the new record's creation to now.
	c := newClient(t, s.addr)
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	since, err := c.HGet(context.Background(), capKey(p, "g"), "+since").Int64()
	if err != nil {
		t.Fatal(err)
	}
	held := time.Duration(now.UnixMilli()-since) * time.Millisecond
	t.Logf("Redis restarted empty, p2 closed: p1 shared again %.0f ms after the restart returned; cap 15 held, 30 at most %.0f ms after the new record (HeartbeatTTL 300 ms)",
		back.Seconds()*1000, held.Seconds()*1000)
	if held < 300*time.Millisecond {
		t.Errorf("p1 grew %v after the new record, want ≥ HeartbeatTTL (the new record holds the caps)", held)
	}
}

// With the cap on, Redis commands per process per second still do not
// depend on the call rate: three EVALSHA per attached gate per Interval
// (the budget's, the breaker's and the cap's, 30/s), counted by the
// server at 100 and 10,000 calls/s for 1 s each.
func TestCapCommandsIndependentOfRate(t *testing.T) {
	s := ownRedis(t)
	c := newClient(t, s.addr)
	f, g := capFleet(t, c, Config{Prefix: prefix(t), FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the share", capsAre(30, g))
	for _, rate := range []int{100, 10000} {
		n := evalshaIn1s(t, c, g, rate)
		if n < 24 || n > 36 {
			t.Errorf("%d calls/s: %d EVALSHA in 1 s, want 30 ± 6", rate, n)
		}
	}
}

// Guard's success path with the fleet-wide cap on (attached, share
// granted) against the same gate options without fleet mode, same run:
//
//	go test -tags e2e -run '^$' -bench BenchmarkGuardFleetCap -count 6 ./   # with FLOODGATE_REDIS_ADDR set
func BenchmarkGuardFleetCap(b *testing.B) {
	local, err := floodgate.New("g")
	if err != nil {
		b.Fatal(err)
	}
	f, capped := capFleet(b, newClient(b, redisAddr(b)), Config{Prefix: prefix(b), FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond})
	if err := f.Start(); err != nil {
		b.Fatal(err)
	}
	for capped.Limiter().Cap() != 30 {
		time.Sleep(time.Millisecond)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		g    *floodgate.Gate
	}{{"local", local}, {"fleetcap", capped}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.g.Guard(ctx, ok)
			}
		})
	}
}

// The cap adds no allocation to Guard's success path.
func TestGuardFleetCapAllocations(t *testing.T) {
	local, err := floodgate.New("g")
	if err != nil {
		t.Fatal(err)
	}
	f, capped := capFleet(t, newClient(t, redisAddr(t)), Config{Prefix: prefix(t), FleetLimit: 30, HeartbeatTTL: 300 * time.Millisecond})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the share", capsAre(30, capped))
	ctx := context.Background()
	l := testing.AllocsPerRun(1000, func() { _ = local.Guard(ctx, ok) })
	s := testing.AllocsPerRun(1000, func() { _ = capped.Guard(ctx, ok) })
	if s > l {
		t.Errorf("Guard's success path: %v allocations per call with the fleet cap, %v without", s, l)
	}
}

// The cap script, case by case, on a record set up by hand (times relative
// to Redis's clock; HeartbeatTTL 1 s): the share, the remainder by id
// order, the room the others leave, the hold of a young record, the floor
// of 1, dead processes reserved for one more lifetime then deleted, fields
// that are garbage or from the future deleted, and what is recorded.
func TestCapScript(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	const ttl = 1000 // ms
	type rec struct {
		id       string
		ago, cap int64 // ms before now, calls
	}
	for _, tc := range []struct {
		name     string
		since    int64 // ms before now; -1: no record
		others   []rec
		id       string
		held     int
		limit    int
		grant, n int64
		recorded int64    // the caller's recorded cap
		deleted  []string // others deleted as dead
	}{
		{"new record holds", -1, nil, "m", 1, 30, 1, 1, 1, nil},
		{"young record holds", 500, nil, "m", 7, 30, 7, 1, 7, nil},
		{"no heartbeat restarts", 2000, nil, "m", 1, 30, 1, 1, 1, nil},
		{"alone", 2000, []rec{{"m", 100, 1}}, "m", 1, 30, 30, 1, 30, nil},
		{"three even", 2000, []rec{{"a", 10, 10}, {"z", 10, 10}}, "m", 10, 30, 10, 3, 10, nil},
		{"remainder first", 2000, []rec{{"b", 10, 10}, {"c", 10, 10}}, "a", 10, 31, 11, 3, 11, nil},
		{"remainder first grows", 2000, []rec{{"b", 10, 10}, {"c", 10, 10}}, "a", 10, 32, 11, 3, 11, nil},
		{"remainder not last", 2000, []rec{{"a", 10, 11}, {"b", 10, 10}}, "c", 10, 31, 10, 3, 10, nil},
		{"no room yet", 2000, []rec{{"a", 10, 15}, {"b", 10, 15}}, "m", 1, 30, 1, 3, 1, nil},
		{"some room", 2000, []rec{{"a", 10, 10}, {"b", 10, 15}}, "m", 1, 30, 5, 3, 5, nil},
		{"shrinks to share, records held", 2000, []rec{{"a", 10, 1}}, "m", 30, 30, 15, 2, 30, nil},
		{"dead reserved, then deleted", 2000, []rec{{"a", 1000, 15}, {"b", 900, 5}, {"x", 2000, 1}}, "m", 10, 30, 10, 2, 10, []string{"x"}},
		{"garbage deleted", 2000, []rec{{"a", -1, 0}, {"b", 100, 10}}, "m", 10, 30, 15, 2, 15, []string{"a"}},
		{"stale record restarts and holds", 5000, []rec{{"a", 1000, 15}, {"m", 1500, 15}}, "m", 15, 30, 15, 1, 15, nil},
		{"own stale heartbeat restarts", 5000, []rec{{"m", 1000, 10}}, "m", 10, 30, 10, 1, 10, nil},
		{"own fresh heartbeat does not", 5000, []rec{{"m", 100, 10}}, "m", 10, 30, 30, 1, 30, nil},
		{"one fresh other does not", 5000, []rec{{"a", 1000, 10}, {"b", 100, 10}}, "m", 1, 30, 10, 2, 10, nil},
		{"ghost from the future deleted", 5000, []rec{{"m", 100, 10}, {"z", -2000, 1048576}}, "m", 10, 30, 30, 1, 30, []string{"z"}},
		{"declared lifetime honoured", 5000, []rec{{"m", 100, 10}, {"a", 1500, 15}}, "m", 10, 30, 15, 2, 15, nil},
		{"over KeyTTL deleted", 5000, []rec{{"m", 100, 10}, {"a", -1, 15}}, "m", 10, 30, 30, 1, 30, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := capKey(prefix(t), "g")
			now, err := c.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			ms := now.UnixMilli()
			if tc.since >= 0 {
				c.HSet(ctx, key, "+since", ms-tc.since)
			}
			for _, o := range tc.others {
				v := strconv.FormatInt(ms-o.ago, 10) + " " + strconv.FormatInt(o.cap, 10)
				switch {
				case tc.name == "declared lifetime honoured" && o.id == "a": // expires 1 s from now
					v += " " + strconv.FormatInt(ms+1000, 10)
				case tc.name == "over KeyTTL deleted" && o.id == "a": // a lifetime of 2 min
					v = strconv.FormatInt(ms, 10) + " 15 " + strconv.FormatInt(ms+120000, 10)
				case o.ago == -1:
					v = "not a record"
				}
				c.HSet(ctx, key, o.id, v)
			}
			v, err := capScript.Run(ctx, c, []string{key}, tc.id, tc.held, tc.limit, ttl, 60000).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			if v[0] != tc.grant || v[1] != tc.n {
				t.Errorf("grant %d of %d live, want %d of %d", v[0], v[1], tc.grant, tc.n)
			}
			mine, err := c.HGet(ctx, key, tc.id).Result()
			if err != nil {
				t.Fatal(err)
			}
			var seen, capped int64
			var expires, limit int64
			if _, err := fmt.Sscanf(mine, "%d %d %d %d", &seen, &capped, &expires, &limit); err != nil || expires != seen+ttl || limit != int64(tc.limit) || capped != tc.recorded || seen < ms || seen > ms+1000 {
				t.Errorf("recorded %q (%v), want cap %d seen at about %d", mine, err, tc.recorded, ms)
			}
			for _, id := range tc.deleted {
				if n, _ := c.HExists(ctx, key, id).Result(); n {
					t.Errorf("%s not deleted", id)
				}
			}
			if pttl, _ := c.PTTL(ctx, key).Result(); pttl <= 0 || pttl > time.Minute {
				t.Errorf("PTTL %v, want (0, 1m]", pttl)
			}
		})
	}
}
