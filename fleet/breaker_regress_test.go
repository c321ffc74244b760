//go:build e2e

// Regression tests for the shared breaker's review (issue 15), numbered as
// the defects: 1 a process back from local mode publishing its old window
// into half-open, 2 first syncs ignored so a minority decides, 3 fields
// dropped on the syncing process's Interval, 4 fields that are Lua numbers
// but not integers, 5 concurrent Close racing on the breakers' state.
//
//	FLOODGATE_REDIS_ADDR=... go test -tags e2e -race -count=1 -run TestBreaker[0-9] -v ./fleet/

package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// brkLatency delays every command by d before sending it: a Redis that is
// slow but answers well within Timeout.
type brkLatency struct{ d time.Duration }

func (h brkLatency) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h brkLatency) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { time.Sleep(h.d); return next(ctx, cmd) }
}
func (h brkLatency) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Defect 1 of the review (was TestRABreakerProberStaleWindow in review-attack).
// A process back from local mode (it does not know the generation, so its
// window is not emptied at the change) that takes the probe lease
// publishes its whole local window as the half-open generation's counts
// at its next sync: the fleet's breaker closes (or reopens) on calls made
// before it, with no probe made. docs/fleet.md: "the counts summed from
// then on are the new generation's only: the prober's probes".
func TestBreaker1ReturningProberKeepsHalfOpen(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pFails     int // p's failures before the open
		localOK    int // p's successes while local
		wantBefore string
	}{
		{"closes-without-probe", 0, 20, "half-open"},
		{"reopens-without-probe", 4, 20, "half-open"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := redisAddr(t)
			h := &failHook{}
			pc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			pc.AddHook(h)
			t.Cleanup(func() { pc.Close() })
			qc := newClient(t, addr)
			bc := breaker.Config{MinCalls: 10, OpenFor: 300 * time.Millisecond, Probes: 3}
			cfg := Config{Prefix: shortPrefix()}
			p := newProc(t, "p", pc, cfg, bc)
			q := newProc(t, "q", qc, cfg, bc)
			p.f.syncAll()
			q.f.syncAll()
			p.calls(tc.pFails, errFail)
			q.calls(10, errFail)
			for range 2 {
				p.f.syncAll()
				q.f.syncAll()
			}
			if p.fleetState() != "open" || !p.g.Breaker().Held() {
				t.Fatalf("fleet %s, p held %v: want open, held", p.fleetState(), p.g.Breaker().Held())
			}
			h.armed.Store(true)
			p.f.syncAll() // fails: p local, released
			if p.f.State() != Local || p.g.Breaker().Held() {
				t.Fatalf("p %v held %v", p.f.State(), p.g.Breaker().Held())
			}
			if r, _ := p.calls(tc.localOK, nil); r != tc.localOK {
				t.Fatalf("local calls reached %d", r)
			}
			time.Sleep(350 * time.Millisecond) // open is over
			h.armed.Store(false)
			p.f.syncAll() // p moves it to half-open and takes the lease
			st1, held1, c1 := p.fleetState(), p.g.Breaker().Held(), p.g.Breaker().Counts()
			p.f.syncAll() // no call made since
			st2 := p.fleetState()
			if st1 != tc.wantBefore || st2 != "half-open" {
				t.Errorf("p back from local mode, prober (held %v) with its old window (%+v): fleet %s, then %s at its next sync with no probe made; want half-open until a probe reports",
					held1, c1, st1, st2)
			}
		})
	}
}

// Defect 1 of the review (was TestRABreakerReturningNonProberCloses in review-attack).
// The same root cause for a process that is not the prober: back from
// local mode while the fleet is half-open (another process holds the
// lease, no probe made yet), it publishes its local window into the
// half-open generation at its second sync, and the fleet closes.
func TestBreaker1ReturningNonProberKeepsHalfOpen(t *testing.T) {
	addr := redisAddr(t)
	h := &failHook{}
	pc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	pc.AddHook(h)
	t.Cleanup(func() { pc.Close() })
	bc := breaker.Config{MinCalls: 10, OpenFor: 300 * time.Millisecond, Probes: 3}
	cfg := Config{Prefix: shortPrefix()}
	p := newProc(t, "p", pc, cfg, bc)
	q := newProc(t, "q", newClient(t, addr), cfg, bc)
	p.f.syncAll()
	q.f.syncAll()
	q.calls(10, errFail)
	for range 2 {
		p.f.syncAll()
		q.f.syncAll()
	}
	if p.fleetState() != "open" {
		t.Fatalf("fleet %s", p.fleetState())
	}
	h.armed.Store(true)
	p.f.syncAll() // p local
	p.calls(20, nil)
	time.Sleep(350 * time.Millisecond)
	q.f.syncAll() // q: half-open, q takes the lease; makes no probe
	h.armed.Store(false)
	p.f.syncAll() // p back: generation -1, ignored; learns the half-open one
	st1 := p.fleetState()
	p.f.syncAll() // publishes its 20 local successes as the half-open generation's
	q.f.syncAll()
	if st1 != "half-open" || q.fleetState() != "half-open" {
		t.Errorf("q holds the lease and made no probe; p back from local mode: fleet %s, then %s after p's second sync; want half-open", st1, q.fleetState())
	}
}

// Defect 2 of the review (was TestRABreakerMinorityFirstSync in review-attack).
// The first sync of a process (at start, and after every failed sync)
// publishes its counts for generation -1, ignored; so for up to one
// Interval the first process to sync twice is the only one "with calls":
// a broken minority that gets there first opens the fleet for all.
func TestBreaker2MinorityCannotOpenAtFirstSync(t *testing.T) {
	addr := redisAddr(t)
	bc := breaker.Config{MinCalls: 10, OpenFor: time.Minute}
	for _, afterOutage := range []bool{false, true} {
		name := "start"
		if afterOutage {
			name = "after-outage"
		}
		t.Run(name, func(t *testing.T) {
			hp, hq := &failHook{}, &failHook{}
			pc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			pc.AddHook(hp)
			qc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			qc.AddHook(hq)
			t.Cleanup(func() { pc.Close(); qc.Close() })
			pfx := shortPrefix()
			p := newProc(t, "broken", pc, Config{Prefix: pfx}, bc)
			q := newProc(t, "healthy", qc, Config{Prefix: pfx}, bc)
			if afterOutage {
				p.f.syncAll()
				q.f.syncAll()
				hp.armed.Store(true)
				hq.armed.Store(true)
				p.f.syncAll() // Redis down for both
				q.f.syncAll()
				hp.armed.Store(false)
				hq.armed.Store(false)
			}
			q.calls(100, nil)
			p.calls(10, errFail)
			p.f.syncAll() // generation -1: ignored
			q.f.syncAll() // generation -1: ignored
			p.f.syncAll() // the broken one's second sync comes first
			q.f.syncAll()
			reached, _ := q.calls(10, nil)
			if st := q.fleetState(); st != "closed" || reached != 10 {
				t.Errorf("%s: one broken process of two, the healthy one with 100 successes: fleet breaker %s, healthy process held %v, 10 calls reached fn %d times; want closed, 10",
					name, st, q.g.Breaker().Held(), reached)
			}
		})
	}
}

// Defect 3 of the review (was TestRABreakerMinoritySlowRound in review-attack).
// The same with one Config for both: the healthy process has 12 attached
// gates and a Redis answering in 15 ms (Timeout 100 ms: every sync
// succeeds, no fallback), so a round takes 12 × 2 × 15 ms or more, over
// 3 × Interval; the broken process's syncs drop its field in the gap and
// open the fleet alone.
func TestBreaker3MinorityCannotOpenOnSlowRound(t *testing.T) {
	for _, lat := range []time.Duration{0, 15 * time.Millisecond} {
		t.Run(lat.String(), func(t *testing.T) { brkMinoritySlow(t, lat) })
	}
}

func brkMinoritySlow(t *testing.T, lat time.Duration) {
	addr := redisAddr(t)
	slow := redis.NewClient(&redis.Options{Addr: addr})
	slow.AddHook(brkLatency{lat})
	t.Cleanup(func() { slow.Close() })
	bc := breaker.Config{MinCalls: 10, OpenFor: time.Minute}
	cfg := Config{Prefix: shortPrefix(), Timeout: 100 * time.Millisecond, Logger: discard}
	p := newProc(t, "broken", newClient(t, addr), cfg, bc)
	fq, err := New(slow, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fq.Close() })
	var q *floodgate.Gate
	for i := range 12 {
		name := fmt.Sprintf("h%d", i)
		if i == 0 {
			name = "g"
		}
		b, _ := fq.Budget(name)
		g, err := floodgate.New(name, floodgate.WithRetry(retry.Config{Budget: b, MaxAttempts: 1}), floodgate.WithBreaker(bc))
		if err != nil {
			t.Fatal(err)
		}
		if err := fq.Attach(g); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			q = g
		}
	}
	p.f.Start()
	fq.Start()
	stop := make(chan struct{})
	began := time.Now()
	var wg sync.WaitGroup
	var qRefused atomic.Int64
	wg.Add(2)
	go func() { // the healthy one: 1,000/s
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if err := q.Guard(context.Background(), func(context.Context) error { return nil }); errors.Is(err, breaker.ErrOpen) {
				if qRefused.Add(1) == 1 {
					t.Logf("first ErrOpen on the healthy process at %v", time.Since(began))
				}
			}
		}
	}()
	go func() { // the broken one: 200/s, broken from 1.5 s (after the first syncs)
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			p.g.Guard(context.Background(), func(context.Context) error {
				if time.Since(began) < 1500*time.Millisecond {
					return nil
				}
				return errFail
			})
		}
	}()
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	st, _ := fq.BreakerState("g")
	if qRefused.Load() > 0 {
		t.Errorf("one Config; healthy process (12 gates, Redis +%v, state %v, %d fallbacks) vs one broken: the healthy one got %d ErrOpen in 5 s (fleet breaker %v); want 0",
			lat, fq.State(), fq.Fallbacks(), qRefused.Load(), st)
	}
}

// Defect 3 of the review (was TestRABreakerMinorityMixedInterval in review-attack).
// A minority whose own path is broken must not open the fleet's breaker
// for healthy processes. But the staleness cut is the syncing process's
// 3·Interval: a broken process with Interval 100 ms drops the field of a
// healthy one with Interval 2 s (a rolling update changing Interval, or
// any process whose round of syncs takes longer than 3 Intervals), is
// then the only process "with calls", and opens the fleet alone: the
// healthy process is held at its next sync, fn not called.
func TestBreaker3MinorityCannotOpenWithMixedInterval(t *testing.T) {
	addr := redisAddr(t)
	bc := breaker.Config{MinCalls: 10, OpenFor: time.Minute}
	pfx := shortPrefix()
	p := newProc(t, "broken", newClient(t, addr), Config{Prefix: pfx, Interval: 100 * time.Millisecond}, bc)
	q := newProc(t, "healthy", newClient(t, addr), Config{Prefix: pfx, Interval: 2 * time.Second, Timeout: 50 * time.Millisecond}, bc)
	p.f.syncAll()
	q.f.syncAll()
	q.calls(100, nil) // healthy, busy
	p.calls(10, errFail)
	q.f.syncAll() // publishes 100 successes
	p.f.syncAll() // sum 110 calls, 10 failures: closed
	if st := p.fleetState(); st != "closed" {
		t.Fatalf("fleet %s with the healthy one's field fresh", st)
	}
	time.Sleep(350 * time.Millisecond) // > 3 × p's Interval, < q's Interval
	p.f.syncAll()
	q.f.syncAll() // q's next sync
	reached, refused := q.calls(10, nil)
	if st := q.fleetState(); st != "closed" || reached != 10 {
		t.Errorf("one broken process of two, the healthy one busy (100 successes) and syncing every 2 s: fleet breaker %s, healthy process held %v, its 10 calls reached fn %d times (refused %d); want closed, 10",
			st, q.g.Breaker().Held(), reached, refused)
	}
}

// Defect 4 of the review (was TestRABreakerPoisonedFields in review-attack).
// A breaker hash whose fields parse as Lua numbers but are not sane
// (nan, inf, a far-future until): docs/fleet.md says a field that does
// not parse is dropped and rebuilt. With until=nan the fleet stays open
// for ever (now >= nan is never true), every process held, fn never
// called, though Redis is healthy.
func TestBreaker4PoisonedUntilHeals(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		fields []any
	}{
		{"until-nan", []any{"st", "2", "gen", "7", "until", "nan", "since", "0"}},
		{"until-inf", []any{"st", "2", "gen", "7", "until", "inf", "since", "0"}},
		{"until-1e300", []any{"st", "2", "gen", "7", "until", "1e300", "since", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProc(t, "p", c, Config{Prefix: shortPrefix()}, breaker.Config{OpenFor: 100 * time.Millisecond})
			k := breakerKeys(p.f.s.Prefix, "g")[0]
			if err := c.HSet(ctx, k, tc.fields...).Err(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(1500 * time.Millisecond) // 15 × OpenFor
			for time.Now().Before(deadline) {
				p.f.syncAll()
				time.Sleep(20 * time.Millisecond)
			}
			reached, refused := p.calls(10, nil)
			v, _ := c.HGetAll(ctx, k).Result()
			if reached == 0 {
				t.Errorf("%s: 1.5 s (15 × OpenFor) after planting %v, state %v, fleet breaker %s, held %v: "+
					"10 calls reached fn %d times, refused %d; key now %v; want the key healed and the gate serving",
					tc.name, tc.fields, p.f.State(), p.fleetState(), p.g.Breaker().Held(), reached, refused, v)
			}
		})
	}
}

// Defect 4 of the review (was TestRABreakerGenNaNNeverOpens in review-attack).
// gen=nan: gen+1 is nan again, and tonumber(g) == gen never holds, so no
// process's counts are ever summed: the fleet's breaker can never open.
func TestBreaker4PoisonedGenHeals(t *testing.T) {
	c := newClient(t, redisAddr(t))
	ctx := context.Background()
	bc := breaker.Config{MinCalls: 10, OpenFor: time.Hour}
	p := newProc(t, "p", c, Config{Prefix: prefix(t)}, bc)
	q := newProc(t, "q", c, Config{Prefix: p.f.s.Prefix}, bc)
	k := breakerKeys(p.f.s.Prefix, "g")[0]
	if err := c.HSet(ctx, k, "st", "0", "gen", "nan", "until", "0", "since", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		// 6 failures each: under MinCalls alone, 12 summed: the fleet opens
		p.calls(6, errFail)
		q.calls(6, errFail)
		p.f.syncAll()
		q.f.syncAll()
	}
	v, _ := c.HGetAll(ctx, k).Result()
	if p.fleetState() != "open" {
		t.Errorf("gen planted as nan; both processes failing (12 failures summed, MinCalls 10): fleet breaker %s, key %v; want open (the field healed)",
			p.fleetState(), v)
	}
}

// Defect 5 of the review (was TestRAConcurrentClose in review-attack).
// Close "may be called more than once" and the Fleet's methods are safe
// for concurrent use: two Closes at once.
func TestBreaker5ConcurrentCloseNoRace(t *testing.T) {
	c := newClient(t, redisAddr(t))
	for range 20 {
		f, _ := capFleet(t, c, Config{Prefix: prefix(t), Interval: 10 * time.Millisecond, Timeout: 5 * time.Millisecond})
		f.Start()
		time.Sleep(15 * time.Millisecond)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); f.Close() }()
		}
		wg.Wait()
	}
}
