package fleet

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/floodgate-go/floodgate/breaker"
	"github.com/redis/go-redis/v9"
)

// breakerScript publishes one process's window counts of a gate's breaker
// and runs the fleet's breaker on the sum of every process's, atomically,
// on Redis's clock (TIME), so that the processes' clocks never matter.
//
// KEYS[1], a hash: the fleet breaker's state st (0 closed, 1 half-open, 2
// open), its generation gen (bumped at every change), until (ms, Redis
// time: the end of open), since (ms: the last change) and dur (ms: the
// length of the last open). KEYS[2], a hash:
// one field per process, "gen calls failures slow exp", the counts it
// published for generation gen, which count until exp (ms, Redis time: the
// publisher's own freshness after it published them). KEYS[3], a string: the probe lease,
// "process gen", PX ProbeLease. A key of the wrong type is dropped, and a
// field that is not a decimal integer of at most 15 characters (Lua's
// tonumber takes "nan", "inf", "1e300") counts as missing, so a corrupted
// key heals; an until past now + MaxOpenFor is cut to it, and a dur
// outside [OpenFor, MaxOpenFor] is brought into it when it is doubled
// (and kept as it is otherwise, so that processes with other settings do
// not rewrite each other's).
//
// ARGV: 1 process, 2 the generation its counts are for, 3-5 calls,
// failures, slow, 6 MinCalls, 7 FailureRatio, 8 SlowRatio, 9 MaxOpenFor (ms),
// 10 Probes, 11 ProbeLease (ms), 12 freshness (ms: how long these
// counts count), 13 KeyTTL (ms), 14 OpenFor (ms).
//
// Open lasts OpenFor after a trip from closed and twice the last open
// after a failed probe, at most MaxOpenFor, as a process's own breaker
// does. Open ends at until: half-open. Closed opens when the current
// generation's counts hold MinCalls calls and reach either ratio, and more
// than half of the processes that made calls reach a ratio on their own
// counts of the current generation (a process whose counts are for another
// generation, or for none yet, counts as one that does not: so a minority
// whose own path is broken, however busy or first to sync, does not open it
// for all); half-open
// opens again on a failed or slow call of the current generation (only
// the prober makes calls), and closes once Probes calls succeeded. In
// half-open the first process to sync takes the probe lease.
//
// It returns {st, gen, left, prober, fresh, age, calls, failures, slow}:
// left is the ms until open ends, or until the lease ends for the prober;
// prober 1 when this process holds the lease, fresh 1 when it took it in
// this call; age the ms since the last change; then the fleet's counts.
var breakerScript = redis.NewScript(`
local function heal(k)
  local ty = redis.call('TYPE', k).ok
  if ty ~= 'hash' and ty ~= 'none' then redis.call('DEL', k) end
end
heal(KEYS[1])
heal(KEYS[2])
local function int(x)
  if type(x) == 'string' and #x <= 15 and string.match(x, '^%-?%d+$') then return tonumber(x) end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HMGET', KEYS[1], 'st', 'gen', 'until', 'since', 'dur')
local st, gen, untl, since = int(v[1]) or 0, int(v[2]) or 0, int(v[3]) or 0, int(v[4]) or now
local maxo, open = tonumber(ARGV[9]), math.min(tonumber(ARGV[14]), tonumber(ARGV[9]))
local dur = int(v[5]) or open
if st ~= 0 and st ~= 1 and st ~= 2 then st = 0 end
untl, since = math.min(untl, now + maxo), math.min(since, now)
local function to(s)
  if s == 2 then
    if st == 1 then dur = math.min(2 * math.max(math.min(dur, maxo), open), maxo) else dur = open end
    untl = now + dur
  end
  st, gen, since = s, gen + 1, now
  redis.call('DEL', KEYS[3])
end
if st == 2 and now >= untl then to(1) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5] .. ' ' .. (now + tonumber(ARGV[12])))
local all = redis.call('HGETALL', KEYS[2])
local fr, sr = tonumber(ARGV[7]), tonumber(ARGV[8])
local function trips(c, f, s) return c > 0 and (f / c >= fr or s / c >= sr) end
local calls, fails, slows, procs, bad = 0, 0, 0, 0, 0
for i = 1, #all, 2 do
  local g, c, f, s, exp = string.match(all[i + 1], '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  g, c, f, s, exp = int(g), int(c), int(f), int(s), int(exp)
  if not (g and c and f and s and exp) or c < 0 or f < 0 or s < 0 or exp < now then
    redis.call('HDEL', KEYS[2], all[i])
  else
    if c > 0 then procs = procs + 1 end
    if g == gen then
      calls, fails, slows = calls + c, fails + f, slows + s
      if trips(c, f, s) then bad = bad + 1 end
    end
  end
end
if st == 0 then
  if calls >= tonumber(ARGV[6]) and trips(calls, fails, slows) and 2 * bad > procs then to(2) end
elseif st == 1 then
  if fails > 0 or slows > 0 then to(2) elseif calls >= tonumber(ARGV[10]) then to(0) end
end
local left, prober, fresh = 0, 0, 0
if st == 2 then left = untl - now end
if st == 1 then
  local mine = ARGV[1] .. ' ' .. gen
  local p = redis.pcall('GET', KEYS[3])
  if type(p) == 'table' then
    redis.call('DEL', KEYS[3])
    p = false
  end
  if not p then
    redis.call('SET', KEYS[3], mine, 'PX', ARGV[11])
    p, fresh = mine, 1
  end
  if p == mine then
    prober, left = 1, math.max(redis.call('PTTL', KEYS[3]), 0)
  end
end
redis.call('HSET', KEYS[1], 'st', st, 'gen', gen, 'until', untl, 'since', since, 'dur', dur)
redis.call('PEXPIRE', KEYS[1], ARGV[13])
redis.call('PEXPIRE', KEYS[2], ARGV[13])
return {st, gen, left, prober, fresh, now - since, calls, fails, slows}
`)

// sharedBreaker is a gate's part in the fleet's breaker.
type sharedBreaker struct {
	keys  []string     // breakerKeys
	state atomic.Int32 // the fleet breaker's breaker.State + 1 at the last sync; 0 before one

	// Used by the sync goroutine only (and by Close once it has ended;
	// written there under Fleet.mu).
	gen    int64 // the fleet generation the published counts are for; -1: none yet
	known  bool  // gen is set
	prober bool  // the breaker holds the probe allowance of the current lease
	// probeFrom is the breaker's own state when it took the lease: one
	// that closes while probing has seen Probes successes
	probeFrom breaker.State
}

// breakerKeys are a gate's breaker keys, under its hash tag.
func breakerKeys(prefix, name string) []string {
	tag := "{" + prefix + ":" + name + "}:breaker"
	return []string{tag, tag + ":counts", tag + ":probe"}
}

// holdFor is how long a hold outlives the sync that set it, unrenewed: it
// lasts until the next sync's answer with room for a late one, and lapses
// by itself if the sync goroutine stops (Redis failing releases it at
// once).
func (f *Fleet) holdFor() time.Duration { return 4*f.s.Interval + f.s.Timeout }

// freshness is how long the counts a sync publishes count in the fleet's
// sum: until well past this process's next sync of the gate, however slow
// its round of syncs (many gates, a slow Redis) or long its Interval.
func (f *Fleet) freshness() time.Duration {
	return max(time.Second, 10*f.s.Interval, 3*f.round)
}

// syncBreaker publishes the counts of g's breaker and applies the fleet's
// breaker to it: closed, no hold; open, held for the rest of open; half-open,
// held, but for the prober, held with Probes calls let through. When the
// fleet's breaker changes to closed or half-open, the local window is
// emptied, so that the counts published from then on are the new
// generation's only (the prober's probes, or a fresh window); so is it
// when the process learns a half-open generation it did not know (at start,
// or back from local mode). It does nothing for a gate that is not
// attached.
func (f *Fleet) syncBreaker(g *gate) error {
	fg := g.fg.Load()
	if fg == nil {
		return nil
	}
	b := fg.Breaker()
	cfg := b.Config()
	c := b.Counts()
	sb := &g.brk
	if sb.prober && sb.probeFrom != breaker.Closed && b.State() == breaker.Closed {
		// its own breaker closed on Probes successes, and emptied its
		// window as it did: they are the probes' verdict
		c.Calls = max(c.Calls, int64(cfg.Probes))
	}
	gen := int64(-1)
	if sb.known {
		gen = sb.gen
	}
	args := []any{f.id, gen, c.Calls, c.Failures, c.Slow, cfg.MinCalls,
		strconv.FormatFloat(cfg.FailureRatio, 'g', -1, 64), strconv.FormatFloat(cfg.SlowRatio, 'g', -1, 64),
		cfg.MaxOpenFor.Milliseconds(), cfg.Probes, max(cfg.ProbeLease.Milliseconds(), 1),
		f.freshness().Milliseconds(), f.s.KeyTTL.Milliseconds(), max(cfg.OpenFor.Milliseconds(), 1)}
	v, err := f.do(9, func(ctx context.Context) *redis.Cmd {
		return breakerScript.Run(ctx, f.client, g.brk.keys, args...)
	})
	if err != nil {
		return err
	}
	st, newGen, left := breaker.State(v[0]), v[1], time.Duration(v[2])*time.Millisecond
	if (sb.known && newGen != sb.gen && st != breaker.Open) || (!sb.known && st == breaker.HalfOpen) {
		// a new generation, or a half-open one learned now (at start or
		// back from local mode): its window holds calls made before it,
		// and only the prober's probes may count in half-open
		b.ResetCounts()
	}
	if newGen != sb.gen {
		sb.prober = false
	}
	sb.gen, sb.known = newGen, true
	switch {
	case st == breaker.Closed:
		b.Release()
	case st == breaker.Open:
		b.Hold(left+f.holdFor(), 0)
	case v[3] == 1 && (v[4] == 1 || !sb.prober): // the prober, with a new lease
		b.Hold(left+f.holdFor(), cfg.Probes)
		sb.prober, sb.probeFrom = true, b.State()
	case v[3] == 1: // the prober: its hold runs on
	default:
		b.Hold(f.holdFor(), 0)
		sb.prober = false
	}
	sb.state.Store(int32(st) + 1)
	return nil
}

// releaseBreakers ends every hold at once: Redis failed (or the Fleet
// closed), so each breaker decides alone. The counts published at the
// next sync are ignored once (the process no longer knows the fleet's
// generation); its window is not emptied, unless that sync finds the
// fleet's breaker half-open.
//
// It runs on the sync goroutine, or in Close once that has ended; under
// f.mu, so that two Closes at once do not race on the gates' state.
func (f *Fleet) releaseBreakers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.order {
		if fg := g.fg.Load(); fg != nil {
			fg.Breaker().Release()
		}
		g.brk.known, g.brk.prober = false, false
	}
}

// BreakerState returns the state of the fleet's breaker of the gate named
// name as this process read it at its last successful sync, and false if
// it has none (no such gate, a gate not attached, or no sync yet). While
// the process is in local mode ([Fleet.State]) it is not applied: each
// breaker decides alone.
func (f *Fleet) BreakerState(name string) (breaker.State, bool) {
	f.mu.Lock()
	g, ok := f.gates[name]
	f.mu.Unlock()
	if !ok {
		return 0, false
	}
	s := g.brk.state.Load()
	return breaker.State(max(s-1, 0)), s > 0
}
