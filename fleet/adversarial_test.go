//go:build e2e

// Regression tests from an adversarial review of package fleet: each
// failed before its fix. Run by scripts/e2e-fleet.sh, or with a Redis:
//
//	FLOODGATE_REDIS_ADDR=127.0.0.1:PORT go test -tags e2e -race -count=1 -run TestAttack ./fleet/

package fleet

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// A gate's bucket key holding something that is not a number (another
// app's key, a wrong type, a hand-edited value): the script errored on
// that gate, and syncAll stops at the first failure, so every gate created
// after it never synced again and the whole process stayed local for as
// long as the key existed. Now the script takes such a key for a missing
// one (full) and overwrites it.
func TestAttackBadKeyBlocksOtherGates(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := prefix(t)
	f, _ := newFleet(t, c, Config{Prefix: p}) // gate "g"
	if _, err := f.Budget("other"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Set(ctx, budgetKey(p, "g"), "not-a-number", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.syncAll()
	}
	_, otherSynced := f.Tokens("other")
	n, _ := c.Exists(ctx, budgetKey(p, "other")).Result()
	if !otherSynced || n != 1 {
		t.Errorf("gate %q's key is corrupt; healthy gate %q: synced %v, key exists %d, state %v, fallbacks %d; "+
			"want the healthy gate still shared", "g", "other", otherSynced, n, f.State(), f.Fallbacks())
	}

	// Same with a wrong type (LPUSH).
	p2 := shortPrefix() + "-list"
	f2, _ := newFleet(t, c, Config{Prefix: p2})
	if _, err := f2.Budget("other"); err != nil {
		t.Fatal(err)
	}
	c.RPush(ctx, budgetKey(p2, "g"), "x")
	t.Cleanup(func() { c.Del(context.Background(), budgetKey(p2, "g")) })
	for range 5 {
		f2.syncAll()
	}
	if _, ok := f2.Tokens("other"); !ok {
		t.Errorf("WRONGTYPE key on gate g: healthy gate %q never synced (state %v)", "other", f2.State())
	}
	c.Del(ctx, budgetKey(p, "g"))
}

// Two different (Prefix, gate name) pairs mapped to the same Redis key, so
// two unrelated fleets shared (and drained) one bucket.
func TestAttackKeyCollisionAcrossPrefixes(t *testing.T) {
	// Prefix "svc:a" with gate "b" and Prefix "svc" with gate "a:b" had one
	// key, {svc:a:b}:budget: fleet A drained B's bucket (B found 0 of 9).
	// A Prefix may no longer hold ':'.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	if _, err := New(client, Config{Prefix: "svc:a", Logger: discard}); err == nil || !strings.Contains(err.Error(), "Prefix") {
		t.Errorf("New(Prefix %q) = %v, want an error naming Prefix", "svc:a", err)
	}
}

// Valid multiples of 0.001 were rejected once tokens×1000 exceeds about
// 2^24: the check allowed 1e-9 credit of float64 error, less than one ulp
// there. Max 16384.1 is a multiple of 0.001 in [1, 1e6]. The tolerance is
// now relative as well.
func TestAttackMaxPrecisionRejected(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	for _, cfg := range []Config{
		{Max: 16384.1},
		{Max: 16385.4, Lease: 2.5},
		{LocalMax: 16384.1},
	} {
		cfg.Logger = discard
		f, err := New(client, cfg)
		if err != nil {
			t.Errorf("New(%+v): %v; want accepted (a multiple of 0.001 in range)", cfg, err)
			continue
		}
		f.Close()
	}
	// The root module's retry.NewBudget has the same check.
	if _, err := retry.NewBudget(retry.BudgetConfig{Max: 16384.1}); err != nil {
		t.Errorf("retry.NewBudget(Max 16384.1): %v; want accepted", err)
	}
}

// shortPrefix returns a unique Prefix short enough to extend.
func shortPrefix() string { return "atk" + strconv.FormatInt(time.Now().UnixNano(), 36) }

// stalledServer accepts connections and reads, but never answers.
func stalledServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			cn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, cn)
			mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				buf := make([]byte, 4096)
				for {
					if _, err := cn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, cn := range open {
			cn.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	return ln.Addr().String()
}

// A stalled Redis (accepts, never answers) and a client with
// ContextTimeoutEnabled false and ReadTimeout -1 (no read deadline, a
// documented go-redis setting): Close waited for the abandoned call, which
// never returns, so Close never returned. Now it waits at most Timeout.
func TestAttackCloseHangsOnStalledServer(t *testing.T) {
	addr := stalledServer(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1, MaxRetries: -1, Protocol: 2,
		DisableIdentity: true})
	f, err := New(client, Config{Logger: discard, Interval: 50 * time.Millisecond, Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Budget("g")
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for range 1000 {
		b.Deposit()
		b.Withdraw()
	}
	closed := make(chan struct{})
	go func() { f.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Errorf("Close has not returned 2 s after it was called (Timeout 10 ms): it waits for a Redis call that never returns")
		client.Close() // unblock it, so the test can end
		<-closed
	}
	client.Close()
}

// Many fleets ("processes") and gates, Interval at its minimum, Lease =
// Max, everything hammered concurrently with Budget/Tokens/State/Close
// racing: no fleet-wide overspend beyond the bound unless a timeout
// occurred (reported).
func TestAttackConservationStress(t *testing.T) {
	addr := redisAddr(t)
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer c.Close()
	p := shortPrefix()
	const procs, gates = 4, 8
	cfg := Config{Prefix: p, Interval: 10 * time.Millisecond, Max: 5, Lease: 5, LocalMax: 20,
		Ratio: 0.1, Logger: discard}
	names := make([]string, gates)
	for i := range names {
		names[i] = string(rune('a'+i)) + "\x00\n\xff odd"
	}
	var calls, retries [gates]atomic.Int64
	var fleets []*Fleet
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range procs {
		f, err := New(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fleets = append(fleets, f)
		for gi, name := range names {
			b, err := f.Budget(name)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if i%2 == 0 { // an original call in 2
						b.Deposit()
						calls[gi].Add(1)
					} else if b.Withdraw() {
						retries[gi].Add(1)
					}
					if i%64 == 0 {
						f.Tokens(name)
						f.State()
						time.Sleep(50 * time.Microsecond)
					}
				}
			}()
		}
		if err := f.Start(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	var fallbacks uint64
	for _, f := range fleets {
		f.Close()
		f.Close()
		fallbacks += f.Fallbacks()
	}
	for gi := range names {
		bound := cfg.Ratio*float64(calls[gi].Load()) + cfg.Max + procs*cfg.Lease
		if float64(retries[gi].Load()) > bound {
			t.Errorf("gate %d: %d retries, %d calls: bound %v exceeded (fallbacks %d)", gi, retries[gi].Load(), calls[gi].Load(), bound, fallbacks)
		}
	}
	t.Logf("fallbacks %d; gate 0: %d calls %d retries", fallbacks, calls[0].Load(), retries[0].Load())
	for _, n := range names {
		c.Del(context.Background(), budgetKey(p, n))
	}
}

// slowReply delays the reply of the calls it is armed for, after Redis has
// run them: a client-side pause (GC, CPU starvation on a busy host, a
// slow network path back) longer than Timeout, no Redis fault.
type slowReply struct {
	armed atomic.Bool
	delay time.Duration
}

func (h *slowReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h.armed.Load() {
			time.Sleep(h.delay)
		}
		return err
	}
}
func (h *slowReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A shared-mode sync whose reply comes after Timeout though Redis applied
// it: the process kept the deposit it sent AND the bucket had it. With one
// late reply in two syncs, 1,800 calls gave 292 retries against a bound of
// 192. Now a failed call's deposit is not given back.
func TestAttackLateReplyMintsTokens(t *testing.T) {
	addr := redisAddr(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	h := &slowReply{delay: 30 * time.Millisecond}
	c.AddHook(h)
	cfg := Config{Prefix: shortPrefix(), Max: 10, Lease: 2, LocalMax: 20, Interval: 100 * time.Millisecond,
		Timeout: 20 * time.Millisecond, Logger: discard}
	f, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, _ := f.Budget("g")
	calls, retries := 0, 0
	f.syncAll()    // shared
	for range 10 { // drain the fleet bucket: Max + lease
		retries += spend(b)
		f.syncAll()
	}
	retries += spend(b)
	const cycles = 10
	for range cycles {
		for range 180 { // 18 tokens
			b.Deposit()
			calls++
		}
		h.armed.Store(true)
		f.syncAll() // shared: sends 16 above the lease; Redis applies it; the reply is late
		h.armed.Store(false)
		time.Sleep(40 * time.Millisecond) // the late call returns (its answer dropped)
		retries += spend(b)
		f.syncAll() // local mode, fast: shares again
		for range 5 {
			retries += spend(b)
			f.syncAll()
		}
		retries += spend(b)
	}
	bound := DefaultRatio*float64(calls) + cfg.Max + cfg.Lease
	if float64(retries) > bound {
		t.Errorf("one process, %d calls, %d syncs with a late reply: %d retries; bound Ratio×calls+Max+Lease = %v (fallbacks %d)",
			calls, cycles, retries, bound, f.Fallbacks())
	}
}

// Budget, Start, Close, Tokens and State from many goroutines at once,
// against a live Redis: no race, no panic; Start after Close and Budget
// after Close refuse; double Close is fine.
func TestAttackLifecycleRace(t *testing.T) {
	c := newClient(t, redisAddr(t))
	for round := range 20 {
		f, err := New(c, Config{Prefix: shortPrefix(), Interval: 10 * time.Millisecond, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 50 {
					name := strconv.Itoa(i*1000 + j%10)
					if b, err := f.Budget(name); err == nil {
						b.Deposit()
						b.Withdraw()
					}
					f.Tokens(name)
					f.State()
					if j == 10 {
						f.Start()
					}
					if j == 40 && i == round%4 {
						f.Close()
					}
				}
			}()
		}
		wg.Wait()
		f.Close()
		if err := f.Start(); err == nil {
			t.Errorf("Start after Close: nil error")
		}
		if _, err := f.Budget("zz"); err == nil {
			t.Errorf("Budget after Close: nil error")
		}
		if f.State() != Local {
			t.Errorf("state after Close %v", f.State())
		}
	}
}

// Guard with a fleet budget and Redis stalled (ContextTimeoutEnabled
// false, default ReadTimeout 5 s): Guard never waits on Redis. Close then
// waits at most Timeout.
func TestAttackGuardStalledRedis(t *testing.T) {
	addr := stalledServer(t)
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer client.Close()
	f, err := New(client, Config{Logger: discard, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Budget("g")
	g, err := floodgate.New("g", floodgate.WithRetry(retry.Config{Budget: b, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
		floodgate.WithBreaker(breaker.Config{MinCalls: 1e6}))
	if err != nil {
		t.Fatal(err)
	}
	f.Start()
	errDown := errors.New("down")
	var slowest time.Duration
	for range 500 {
		start := time.Now()
		g.Guard(context.Background(), func(context.Context) error { return retry.Transient(errDown) })
		slowest = max(slowest, time.Since(start))
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("slowest Guard %v with Redis stalled", slowest)
	}
	start := time.Now()
	f.Close()
	t.Logf("slowest Guard %v; Close took %v; state %v, fallbacks %d", slowest, time.Since(start), f.State(), f.Fallbacks())
}

// A stalled Redis and a default client (ReadTimeout 5 s in go-redis v9.23;
// the docs said 3 s): Close blocked about 5 s. Now it waits at most
// Timeout.
func TestAttackCloseStalledDefaultReadTimeout(t *testing.T) {
	addr := stalledServer(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	f, _ := New(client, Config{Logger: discard, Interval: 10 * time.Millisecond})
	f.Budget("g")
	f.Start()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	f.Close()
	if d := time.Since(start); d > 3*time.Second+200*time.Millisecond {
		t.Errorf("Close took %v with Redis stalled and a default client; docs say the call returns at ReadTimeout, default 3 s", d)
	}
}

// FLUSHALL mid-run (or the key's TTL ending): the next sync recreates the
// bucket full and stays shared (the documented extra burst of Max).
func TestAttackFlushAllMidRun(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := shortPrefix()
	f, b := newFleet(t, c, Config{Prefix: p, Max: 10})
	f.syncAll()
	b.Trim(0)
	c.Del(context.Background(), budgetKey(p, "g"))
	f.syncAll()
	if tok, _ := f.Tokens("g"); f.State() != Shared || f.Fallbacks() != 0 || b.Tokens() != 2 || tok != 8 {
		t.Errorf("after the key vanished: state %v, fallbacks %d, local %v, bucket %v", f.State(), f.Fallbacks(), b.Tokens(), tok)
	}
}

// Extreme Config values are refused with an error naming the field, none
// panics.
func TestAttackExtremeConfig(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	nan, inf := math.NaN(), math.Inf(1)
	for _, cfg := range []Config{
		{Max: nan}, {Max: inf}, {Max: -1}, {Max: 1e6 + 0.001}, {Ratio: nan}, {Ratio: -0.1}, {Ratio: 1.001}, {Ratio: 0.0015},
		{Lease: nan}, {Lease: 21}, {Lease: 0.5}, {Max: 1, Lease: 2}, {LocalMax: nan}, {LocalMax: 1}, {LocalMax: inf},
		{Interval: -time.Second}, {Interval: time.Millisecond}, {Interval: time.Hour}, {Timeout: -1}, {Timeout: time.Second},
		{KeyTTL: -1}, {KeyTTL: 999 * time.Millisecond}, {KeyTTL: 31 * 24 * time.Hour}, {Prefix: "a{b"}, {Prefix: strings.Repeat("x", 65)},
	} {
		if f, err := New(client, cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
			f.Close()
		}
	}
	f, err := New(client, Config{Max: 1e6, Lease: 1e6, LocalMax: 1e6, Ratio: 0.001, Interval: 10 * time.Millisecond, Timeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "{", "}", "a}b"} {
		if _, err := f.Budget(name); err == nil {
			t.Errorf("Budget(%q) accepted", name)
		}
	}
	f.Close()
	f.Close()
}

// Two processes with different Max for one gate: the bucket never holds
// more than the larger Max, and the smaller one clamps it (tokens lost,
// never gained).
func TestAttackMixedMax(t *testing.T) {
	c := newClient(t, redisAddr(t))
	p := shortPrefix()
	fs, _ := newFleet(t, c, Config{Prefix: p, Max: 5, Lease: 1})
	fb, bb := newFleet(t, c, Config{Prefix: p, Max: 100, Lease: 50, LocalMax: 100})
	fb.syncAll()
	fs.syncAll()
	got := spend(bb)
	for range 10 {
		fb.syncAll()
		fs.syncAll()
		got += spend(bb)
	}
	if got > 100+50 {
		t.Errorf("the big process spent %d tokens; bound 150", got)
	}
	t.Logf("big process spent %d (larger Max 100 + lease 50 = 150 possible; the small Max clamped the bucket)", got)
}

// dropReplyProxy forwards TCP to Redis; when armed, it closes the client
// connection instead of forwarding the next reply (once): the command ran,
// its reply is lost (a connection reset at the wrong moment).
type dropReplyProxy struct {
	armed atomic.Bool
	drops atomic.Int32
}

func (p *dropReplyProxy) start(t *testing.T, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			cn, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				cn.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, cn, up)
			mu.Unlock()
			wg.Add(2)
			go func() { // client -> redis
				defer wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := cn.Read(buf)
					if n > 0 {
						up.Write(buf[:n])
					}
					if err != nil {
						up.Close()
						return
					}
				}
			}()
			go func() { // redis -> client
				defer wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 && p.armed.CompareAndSwap(true, false) {
						p.drops.Add(1)
						cn.Close()
						up.Close()
						return
					}
					if n > 0 {
						cn.Write(buf[:n])
					}
					if err != nil {
						cn.Close()
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// The sync script was not idempotent and go-redis retries a command whose
// reply was lost (MaxRetries 3 by default): the script ran twice and the
// bucket got the deposit twice (36,000 credits for 18,000). Now each sync
// carries a sequence number, and the script applies one only once.
func TestAttackLostReplyRetryDoubleDeposit(t *testing.T) {
	addr := redisAddr(t)
	var px dropReplyProxy
	paddr := px.start(t, addr)
	direct := newClient(t, addr)
	c := redis.NewClient(&redis.Options{Addr: paddr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	p := shortPrefix()
	f, b := newFleet(t, c, Config{Prefix: p, Max: 100, Lease: 2})
	ctx := context.Background()
	f.syncAll() // loads the script, creates the bucket
	direct.Set(ctx, budgetKey(p, "g"), 0, time.Minute)
	for range 180 { // 18 tokens: the budget holds 20, 18 above the lease
		b.Deposit()
	}
	px.armed.Store(true)
	f.syncAll()
	lvl := level(t, direct, p)
	if f.State() == Shared && lvl != 18000 {
		t.Errorf("one sync depositing 18 tokens, its reply lost once (%d drops): sync succeeded, bucket %d credits, local %v tokens; want 18000 (the deposit applied once)",
			px.drops.Load(), lvl, b.Tokens())
	}
	t.Logf("state %v, drops %d, bucket %d, local %v", f.State(), px.drops.Load(), lvl, b.Tokens())
}
