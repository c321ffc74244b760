package fleet

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// syncScript applies one process's deposits to a gate's fleet bucket and
// grants its next lease, atomically. KEYS[1] is the bucket (credits, a
// string; missing, or not a number: full, so a corrupted key heals);
// KEYS[2] holds this process's last sync of the gate, "seq grant left".
// ARGV: deposit, need, max (credits), TTL (ms), seq (per process and
// gate, rising). It returns {grant, credits left}. A sync whose seq was
// applied already (the client re-sent it after a lost reply) is not
// applied again: it returns the first answer.
var syncScript = redis.NewScript(`
local last = redis.pcall('GET', KEYS[2])
if type(last) == 'string' then
  local s, g, l = string.match(last, '^(%d+) (%d+) (%d+)$')
  if s == ARGV[5] then return {tonumber(g), tonumber(l)} end
end
local max = tonumber(ARGV[3])
local v = redis.pcall('GET', KEYS[1])
local b = (type(v) == 'string' and tonumber(v)) or max
b = math.min(max, math.max(0, b) + tonumber(ARGV[1]))
local grant = math.max(0, math.min(tonumber(ARGV[2]), b))
b = b - grant
redis.call('SET', KEYS[1], string.format('%d', b), 'PX', ARGV[4])
redis.call('SET', KEYS[2], ARGV[5] .. ' ' .. string.format('%d', grant) .. ' ' .. string.format('%d', b), 'PX', ARGV[4])
return {grant, b}
`)

// errPending: the last Redis call timed out and has not returned: no new
// one is sent until it does.
var errPending = errors.New("fleet: previous Redis call still in flight")

// result is a Redis call's answer.
type result struct {
	v   []int64
	err error
}

// run is the sync goroutine.
func (f *Fleet) run() {
	defer f.wg.Done()
	t := time.NewTicker(f.s.Interval)
	defer t.Stop()
	for {
		f.syncAll()
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncAll syncs every gate, in order, and sets the state: Local from the
// first failure (the gates after it wait for the next interval), Shared
// when all succeeded.
func (f *Fleet) syncAll() {
	f.mu.Lock()
	gates := f.order
	f.mu.Unlock()
	if len(gates) == 0 {
		return
	}
	start := time.Now()
	for _, g := range gates {
		err := f.syncGate(g)
		if err == nil {
			err = f.syncBreaker(g)
		}
		if err == nil {
			err = f.syncCap(g) // cap.go
		}
		if err != nil {
			if f.ctx.Err() == nil {
				f.fail(err)
			}
			return
		}
	}
	f.round = time.Since(start)
	f.recovered()
}

// syncGate runs the sync script for g. In shared mode it sends what g
// holds above the lease as its deposit; in local mode it sends none and,
// on success, drops what g holds above the lease (local earnings are not
// the fleet's). Either way it asks for what g lacks below the lease. On
// failure g keeps the credits it did not send: local mode goes on from
// them. A deposit sent in a call that failed is not given back: Redis may
// have applied it (a timeout, a lost reply), and counting it twice would
// let the fleet retry more than its bound; losing it lets it retry less.
func (f *Fleet) syncGate(g *gate) error {
	shared := f.State() == Shared
	var deposit, held int64
	if shared {
		deposit, held = g.budget.Trim(f.s.lease)
	} else {
		_, held = g.budget.Trim(math.MaxInt64)
	}
	need := max(f.s.lease-held, 0)
	g.seq++
	v, err := f.call(g, deposit, need)
	if err != nil {
		if err == errPending { // not sent
			g.budget.Add(deposit)
		}
		return err
	}
	if !shared {
		g.budget.Trim(f.s.lease)
	}
	g.budget.Add(v[0])
	g.level.Store(v[1])
	return nil
}

// call runs the script once with its own Timeout. The call runs in a
// goroutine of its own, so that a client that ignores the context's
// deadline (ContextTimeoutEnabled false) cannot hold the sync past the
// Timeout; a call that outlives it is left to finish, its answer dropped.
func (f *Fleet) call(g *gate, deposit, need int64) ([]int64, error) {
	seq := strconv.FormatUint(g.seq, 10)
	return f.do(2, func(ctx context.Context) *redis.Cmd {
		return syncScript.Run(ctx, f.client, []string{g.key, g.seqKey}, deposit, need, f.s.max, f.s.KeyTTL.Milliseconds(), seq)
	})
}

// do runs a script by run, as call does, and checks that it answered n
// integers.
func (f *Fleet) do(n int, run func(context.Context) *redis.Cmd) ([]int64, error) {
	if f.pending != nil {
		select {
		case <-f.pending:
			f.pending = nil
		default:
			return nil, errPending
		}
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.s.Timeout)
	done := make(chan result, 1)
	f.calls.Add(1)
	go func() {
		defer f.calls.Done()
		defer cancel()
		v, err := run(ctx).Int64Slice()
		if err == nil && len(v) != n {
			err = errors.New("fleet: a script answered a list of the wrong length")
		}
		done <- result{v, err}
	}()
	timer := time.NewTimer(f.s.Timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-timer.C:
		f.pending = done
		return nil, context.DeadlineExceeded
	}
}

// fail records a failed sync: local mode, logged and counted once per
// stretch of failures; every breaker held by the fleet is released.
func (f *Fleet) fail(err error) {
	f.releaseBreakers()
	if !f.failing {
		f.failing = true
		f.fallbacks.Add(1)
		f.s.Logger.Warn("fleet: Redis unreachable: retry budgets and breakers are local, caps held at their last share, until it answers again",
			"prefix", f.s.Prefix, "err", err)
	}
	f.setState(Local)
}

// recovered records a sync of every gate: shared mode.
func (f *Fleet) recovered() {
	if f.failing {
		f.failing = false
		f.s.Logger.Info("fleet: Redis answers again: retry budgets, breakers and caps are shared", "prefix", f.s.Prefix)
	}
	f.setState(Shared)
}

// setState sets the state and calls OnStateChange if it changed.
func (f *Fleet) setState(s State) {
	if State(f.state.Swap(int32(s))) != s && f.s.OnStateChange != nil {
		f.s.OnStateChange(s)
	}
}
