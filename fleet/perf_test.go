//go:build e2e

package fleet

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// gates returns a gate with a local budget and one with a budget of a
// started Fleet on client, attached to it (its breaker shared too), in
// shared mode once it synced, stopped at the test's end.
func gates(tb testing.TB, client redis.UniversalClient, p string) (local, shared *floodgate.Gate, f *Fleet) {
	tb.Helper()
	f, err := New(client, Config{Prefix: p, Logger: discard})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := f.Budget("g")
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	if local, err = floodgate.New("g"); err != nil {
		tb.Fatal(err)
	}
	if shared, err = floodgate.New("g", floodgate.WithRetry(retry.Config{Budget: b})); err != nil {
		tb.Fatal(err)
	}
	if err := f.Attach(shared); err != nil {
		tb.Fatal(err)
	}
	for f.State() != Shared {
		time.Sleep(time.Millisecond)
	}
	return local, shared, f
}

func ok(context.Context) error { return nil }

// Guard's success path costs the same with fleet mode on and off, same
// run: the budget is a *retry.Budget either way, the breaker's hold one
// more atomic load (set or not, fleet mode or not), and the sync runs
// beside.
//
//	go test -tags e2e -run '^$' -bench BenchmarkGuardFleet -count 6 ./   # with FLOODGATE_REDIS_ADDR set
func BenchmarkGuardFleet(b *testing.B) {
	local, shared, _ := gates(b, newClient(b, redisAddr(b)), prefix(b))
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		g    *floodgate.Gate
	}{{"local", local}, {"fleet", shared}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.g.Guard(ctx, ok)
			}
		})
	}
}

// Fleet mode adds no allocation to Guard's success path (0 either way;
// the race detector's own allocations are left out by comparing).
func TestGuardFleetAllocations(t *testing.T) {
	local, shared, _ := gates(t, newClient(t, redisAddr(t)), prefix(t))
	ctx := context.Background()
	l := testing.AllocsPerRun(1000, func() { _ = local.Guard(ctx, ok) })
	s := testing.AllocsPerRun(1000, func() { _ = shared.Guard(ctx, ok) })
	if s > l {
		t.Errorf("Guard's success path: %v allocations per call with fleet mode, %v without", s, l)
	}
}

// evalshaIn1s makes rate Guard calls of g, spread over 1 s in steps of
// 10 ms, and returns the EVALSHA calls the server c counted meanwhile
// (INFO commandstats), logged.
func evalshaIn1s(t *testing.T, c *redis.Client, g *floodgate.Gate, rate int) int {
	t.Helper()
	ctx := context.Background()
	evalsha := func() int {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	before := evalsha()
	began := time.Now()
	for i := range rate {
		if i%(rate/100) == 0 {
			time.Sleep(time.Until(began.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		}
		_ = g.Guard(ctx, ok)
	}
	time.Sleep(time.Until(began.Add(time.Second)))
	n := evalsha() - before
	t.Logf("%5d calls/s: %d EVALSHA in %.2f s", rate, n, time.Since(began).Seconds())
	return n
}

// Redis commands per process per second do not depend on the call rate:
// two EVALSHA per attached gate per Interval (the budget's script and the
// breaker's, 20/s), counted by the server (INFO commandstats) at 100 and
// 10,000 calls/s for 1 s each.
func TestCommandsIndependentOfRate(t *testing.T) {
	s := ownRedis(t)
	c := newClient(t, s.addr)
	_, shared, _ := gates(t, c, prefix(t))
	for _, rate := range []int{100, 10000} {
		n := evalshaIn1s(t, c, shared, rate)
		if n < 14 || n > 26 {
			t.Errorf("%d calls/s: %d EVALSHA in 1 s, want 20 ± 6", rate, n)
		}
	}
}
