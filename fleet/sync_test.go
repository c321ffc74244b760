//go:build e2e

package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// newFleet returns an unstarted Fleet on client and the budget of gate
// "g", closed at the test's end; the tests sync it by hand (syncAll).
func newFleet(t *testing.T, client redis.UniversalClient, cfg Config) (*Fleet, *retry.Budget) {
	t.Helper()
	return testFleet(t, client, cfg)
}

// level returns the credits in the fleet bucket of gate "g" in Redis.
func level(t *testing.T, c *redis.Client, prefix string) int64 {
	t.Helper()
	n, err := c.Get(context.Background(), budgetKey(prefix, "g")).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// spend withdraws from b until it refuses, and returns the tokens taken.
func spend(b *retry.Budget) int {
	n := 0
	for b.Withdraw() {
		n++
	}
	return n
}

// One process, step by step: the first sync creates the bucket full (Max)
// and enters shared mode; each sync tops the local budget up to Lease from
// the bucket; deposits above the lease go to the bucket, up to Max; the
// key expires after KeyTTL; Close leaves the process local.
func TestSyncLease(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := prefix(t)
	f, b := newFleet(t, c, Config{Prefix: p, Max: 10, Lease: 2})
	for _, step := range []struct {
		name       string
		withdraw   int // before the sync (up to what the budget holds)
		deposits   int
		wantLocal  float64 // tokens after the sync
		wantBucket int64   // credits
	}{
		{"first sync: bucket created full", 0, 0, 2, 10000},
		{"lease spent, refilled", 2, 0, 2, 8000},
		{"spent again", 2, 0, 2, 6000},
		{"30 calls: 3 tokens above the lease deposited", 0, 30, 2, 9000},
		{"100 calls: bucket stops at Max", 0, 100, 2, 10000},
		{"everything spent", 1000, 0, 2, 8000},
	} {
		for range step.withdraw {
			b.Withdraw()
		}
		for range step.deposits {
			b.Deposit()
		}
		f.syncAll()
		if f.State() != Shared || b.Tokens() != step.wantLocal || level(t, c, p) != step.wantBucket {
			t.Errorf("%s: state %v, local %v tokens, bucket %d credits; want shared, %v, %d",
				step.name, f.State(), b.Tokens(), level(t, c, p), step.wantLocal, step.wantBucket)
		}
	}
	if tok, ok := f.Tokens("g"); !ok || tok != 8 {
		t.Errorf("Tokens = %v, %v; want 8, true", tok, ok)
	}
	ttl, err := c.PTTL(context.Background(), budgetKey(p, "g")).Result()
	if err != nil || ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("key TTL %v (%v), want in (9 min, 10 min]", ttl, err)
	}
	f.Close()
	if f.State() != Local {
		t.Errorf("after Close: state %v, want local (the budget is no longer synced)", f.State())
	}
}

// Two processes share one bucket: once it is empty, tokens one process
// deposits are the only ones the other can spend, and it spends them all.
func TestSyncShared(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := prefix(t)
	cfg := Config{Prefix: p, Max: 20, Lease: 2}
	fa, a := newFleet(t, c, cfg)
	fb, b := newFleet(t, c, cfg)
	fa.syncAll()
	fb.syncAll()
	a.Trim(0) // a spends its lease: only b draws from the bucket
	drained := 0
	for range 30 { // 20 tokens in the bucket, 2 per sync
		drained += spend(b)
		fb.syncAll()
	}
	drained += spend(b)
	if drained != 22 || level(t, c, p) != 0 {
		t.Fatalf("b drained %d tokens, bucket %d credits; want 22 (Max 20 + lease 2), 0", drained, level(t, c, p))
	}
	for range 150 { // 15 tokens: 13 above a's lease of 2
		a.Deposit()
	}
	fa.syncAll()
	got := 0
	for range 20 {
		fb.syncAll()
		got += spend(b)
	}
	if got != 13 || level(t, c, p) != 0 || a.Tokens() != 2 {
		t.Errorf("b spent %d tokens after a's 150 calls; bucket %d credits, a %v tokens; want 13, 0, 2",
			got, level(t, c, p), a.Tokens())
	}
}

// The script cache flushed (a Redis restart or failover does the same):
// the next sync loads it again and succeeds.
func TestSyncNoScript(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := prefix(t)
	f, b := newFleet(t, c, Config{Prefix: p})
	f.syncAll()
	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	b.Trim(0)
	f.syncAll()
	if f.State() != Shared || f.Fallbacks() != 0 || b.Tokens() != 2 {
		t.Errorf("after SCRIPT FLUSH: state %v, %d fallbacks, %v tokens; want shared, 0, 2", f.State(), f.Fallbacks(), b.Tokens())
	}
}

// Redis killed, then back: the next sync is in local mode (the budget
// loses the deposit its failed call carried: Redis may have applied it,
// and a lost reply must not let it count twice), logged and counted once however
// many fail; the budget earns up to LocalMax as without fleet mode; once
// Redis answers, the first sync shares again (logged once), holding no
// more than the lease.
func TestSyncFallbackResync(t *testing.T) {
	s := ownRedis(t)
	c := newClient(t, s.addr)
	var logs logCount
	var changes []State
	p := prefix(t)
	f, b := newFleet(t, c, Config{Prefix: p, Logger: logs.logger(), OnStateChange: func(st State) { changes = append(changes, st) }})
	f.syncAll()
	s.kill()
	for range 50 { // 5 tokens above the lease: the failed sync's deposit
		b.Deposit()
	}
	f.syncAll()
	if kept := b.Tokens(); kept != 2 {
		t.Errorf("a failed sync left %v tokens, want the lease, 2 (its deposit may have reached Redis)", kept)
	}
	for range 2 {
		f.syncAll()
	}
	for range 1000 {
		b.Deposit()
	}
	local := b.Tokens()
	if f.State() != Local || f.Fallbacks() != 1 || logs.n.Load() != 1 || local != 20 {
		t.Errorf("Redis down: state %v, %d fallbacks, %d log lines, %v tokens; want local, 1, 1, 20",
			f.State(), f.Fallbacks(), logs.n.Load(), local)
	}
	s.start()
	f.syncAll()
	if f.State() != Shared || logs.n.Load() != 2 || b.Tokens() != 2 || level(t, c, p) != 20000 {
		t.Errorf("Redis back: state %v, %d log lines, %v tokens, bucket %d credits; want shared, 2, 2, 20000",
			f.State(), logs.n.Load(), b.Tokens(), level(t, c, p))
	}
	if len(changes) != 3 || changes[0] != Shared || changes[1] != Local || changes[2] != Shared {
		t.Errorf("OnStateChange got %v, want [shared local shared]", changes)
	}
}
