package fleet

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/redis/go-redis/v9"
)

// The fleet-wide concurrency cap (Config.FleetLimit): each sync, each
// attached gate's process runs capScript, which refreshes its heartbeat,
// counts the live processes and grants its share; the process then caps
// its gate's limiter at the grant with adaptive.Limiter.SetCap.
//
// The invariant kept (docs/fleet.md has the argument): for every live
// process, the cap its limiter actually has is at most the cap Redis
// records for it, and the records of the live processes sum to at most
// FleetLimit, but for the floor of 1 (a process that joins a full fleet
// holds 1 until the others made room). A process raises its cap only
// after Redis recorded the higher value, and reports a lower one (its
// "held" cap) only after it applied it; a grant is at most what the
// other live and reserved records leave free. It holds while every
// process reaches Redis at least once every 2 of its lifetimes (live,
// then reserved): capLifetime makes that so for slow rounds.

// capScript is one process's heartbeat and share of a gate's fleet-wide
// cap. KEYS[1] is the gate's cap record, a hash: field <process id> =
// "<last seen> <cap> <expires> <FleetLimit>" (Redis ms, calls, Redis ms,
// calls: its heartbeat, the cap recorded for it, the end of the lifetime
// it declared, and its FleetLimit; "<last seen> <cap>" is read as
// expiring a lifetime after last seen), and field "+since" = the Redis ms the record was
// (re)started at: when created, or when none of its fields was live (no
// process reached Redis for its lifetime: the caps the processes hold are
// unknown). ARGV: process id, held (the cap its limiter has now, calls),
// FleetLimit (calls), lifetime (ms: capLifetime), KeyTTL (ms). A key that
// is not a hash is deleted first: a new record (with its hold), as the
// budget's script overwrites a value that is not a number.
//
// The clock is Redis's (TIME), so the processes' clocks never matter. A
// field is live until the expiry it declared; its cap stays reserved (it
// counts against the others' grants, not in n) for as long again, in
// case its process is live and about to come back (an outage for
// everyone, a slow round); then it is deleted. A field that does not
// parse (each number at most 15 digits: no nan, inf or 1e300), dated
// more than a second after now, or declaring a lifetime over KeyTTL, is
// deleted, and a "+since" that does not parse or is in the future
// restarts the record. With n live processes (this one included) its
// share is floor(FleetLimit/n), plus 1 for the first FleetLimit mod n of
// them in id order, so the shares sum to FleetLimit (the smallest
// FleetLimit of this process and of the live and reserved fields, so
// that processes configured with different ones keep to the smallest);
// the grant is the
// share, at most what the others' live and reserved records leave free,
// at most held while the record is younger than the lifetime since it
// (re)started (every live process reports its held cap before any
// grows), and at least 1. The record for this process is max(grant,
// held). It returns {grant, n}.
var capScript = redis.NewScript(`
local ty = redis.call('TYPE', KEYS[1]).ok
if ty ~= 'hash' and ty ~= 'none' then redis.call('DEL', KEYS[1]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id, held, limit, ttl, keyttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local function num(s)
  if s and #s <= 15 then return tonumber(s) end
  return nil
end
local all = redis.call('HGETALL', KEYS[1])
local since, n, others, rank, live, least = nil, 1, 0, 0, false, limit
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if f == '+since' then
    since = num(string.match(v, '^%d+$'))
    if since and since > now + 1000 then since = nil end
  else
    local a, b, c, d = string.match(v, '^(%d+) (%d+) (%d+) (%d+)$')
    if not a then a, b, c = string.match(v, '^(%d+) (%d+) (%d+)$') end
    if not a then a, b = string.match(v, '^(%d+) (%d+)$') end
    local seen, cap, expires, lim = num(a), num(b), num(c), num(d)
    if seen and not c then expires = seen + ttl end
    if not (seen and cap and expires) or seen > now + 1000 or cap > 1048576
        or expires < seen or expires - seen > keyttl or (d and not (lim and lim >= 1 and lim <= 1048576)) then
      redis.call('HDEL', KEYS[1], f)
    elseif f == id then
      if now < expires then live = true end
    elseif now < expires then
      live = true
      n = n + 1
      others = others + cap
      if f < id then rank = rank + 1 end
      if lim then least = math.min(least, lim) end
    elseif now < 2 * expires - seen then
      others = others + cap
      if lim then least = math.min(least, lim) end
    else
      redis.call('HDEL', KEYS[1], f)
    end
  end
end
if not since or not live then
  since = now
  redis.call('HSET', KEYS[1], '+since', string.format('%d', now))
end
local share = math.floor(least / n)
if rank < least % n then share = share + 1 end
local grant = math.min(share, least - others)
if now - since < ttl then grant = math.min(grant, held) end
grant = math.max(grant, 1)
redis.call('HSET', KEYS[1], id, string.format('%d %d %d %d', now, math.max(grant, held), now + ttl, limit))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {grant, n}
`)

// capLifetime is how long this process declares each of its cap
// heartbeats live: HeartbeatTTL, or twice Interval plus its last round of
// syncs if that is longer (a process with many gates or a slow Redis
// takes longer than HeartbeatTTL between two syncs of one gate: between
// two, at most Interval plus two rounds), at most KeyTTL.
func (f *Fleet) capLifetime() time.Duration {
	return min(max(f.s.HeartbeatTTL, 2*(f.s.Interval+f.round)), f.s.KeyTTL)
}

// capKey is the key of a gate's fleet-wide cap record.
func capKey(prefix, name string) string { return "{" + prefix + ":" + name + "}:cap" }

// maxFleetLimit is the largest FleetLimit, adaptive's largest cap.
const maxFleetLimit = 1 << 20

// validateCap checks the cap's fields of cfg, defaults filled.
func validateCap(cfg Config) error {
	switch {
	case cfg.FleetLimit < 0 || cfg.FleetLimit > maxFleetLimit:
		return fmt.Errorf("fleet: FleetLimit must be in [0, %d] (0: off), got %d", maxFleetLimit, cfg.FleetLimit)
	case cfg.HeartbeatTTL < 3*cfg.Interval || cfg.HeartbeatTTL > cfg.KeyTTL:
		return fmt.Errorf("fleet: HeartbeatTTL must be in [3·Interval=%v, KeyTTL=%v], got %v", 3*cfg.Interval, cfg.KeyTTL, cfg.HeartbeatTTL)
	}
	return nil
}

// capState is a gate's fleet-wide cap as of its last successful cap sync.
type capState struct {
	key   string       // capKey
	share atomic.Int64 // the grant applied (calls); 0 before the first
	live  atomic.Int64 // live processes counted, this one included
}

// attachCap caps a gate being attached at 1 call in flight when the
// fleet-wide cap is on: before its first sync a process knows no share,
// and 1 is the least that serves. Called by Attach under f.mu, before it
// publishes the gate to the sync.
func (f *Fleet) attachCap(g *gate, fg *floodgate.Gate) {
	if f.s.FleetLimit == 0 {
		return
	}
	g.cap.key = capKey(f.s.Prefix, g.name)
	_ = fg.Limiter().SetCap(1) // in range
}

// syncCap runs the cap script for g, if the cap is on and g attached,
// and caps g's limiter at the grant. On failure the limiter keeps the
// cap it has (the last share), so that a Redis outage does not raise
// the fleet's sum.
func (f *Fleet) syncCap(g *gate) error {
	fg := g.fg.Load()
	if f.s.FleetLimit == 0 || fg == nil {
		return nil
	}
	lim := fg.Limiter()
	held := lim.Cap()
	life := f.capLifetime().Milliseconds()
	v, err := f.do(2, func(ctx context.Context) *redis.Cmd {
		return capScript.Run(ctx, f.client, []string{g.cap.key}, f.id, held, f.s.FleetLimit,
			life, f.s.KeyTTL.Milliseconds())
	})
	if err != nil {
		return err
	}
	if v[0] < 1 || v[0] > maxFleetLimit {
		return fmt.Errorf("fleet: cap script answered %v", v)
	}
	if err := lim.SetCap(int(v[0])); err != nil {
		return err // unreachable: checked above
	}
	g.cap.share.Store(v[0])
	g.cap.live.Store(v[1])
	return nil
}

// Share returns the fleet-wide cap (calls in flight) this process's
// limiter of the gate named name holds as of its last successful sync,
// and the live processes that sync counted (this one included); false if
// it has none (the cap is off, no such gate or not attached, or no sync
// succeeded yet; the limiter's cap is then 1 from Attach until the first).
// The cap held while syncs fail is the last share.
func (f *Fleet) Share(name string) (share, live int, ok bool) {
	f.mu.Lock()
	g, found := f.gates[name]
	f.mu.Unlock()
	if !found {
		return 0, 0, false
	}
	s := g.cap.share.Load()
	return int(s), int(g.cap.live.Load()), s > 0
}
