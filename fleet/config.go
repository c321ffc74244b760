package fleet

import (
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/floodgate-go/floodgate/retry"
)

// Config configures a [Fleet]. Every field's zero value selects the
// default named in its doc; [New] rejects values outside the stated ranges
// with an error naming the field.
type Config struct {
	// Prefix starts every key: a gate's keys are "{Prefix:gate}:...", so
	// they share one hash tag (one Cluster slot). Default "floodgate";
	// at most 64 bytes, no '{', '}' or ':' (so that no two Prefix and gate
	// name pairs share a key).
	Prefix string

	// Interval is how often each process syncs with Redis: it sends the
	// deposits made since the last sync and gets its next lease. Default
	// 100 ms; range [10 ms, 10 s].
	Interval time.Duration

	// Timeout bounds each Redis call; a call that takes longer puts the
	// process in local mode (its answer, if it comes, is dropped). Default
	// 50 ms; range [1 ms, Interval].
	Timeout time.Duration

	// KeyTTL is how long a gate's keys live after the last sync of any
	// process: a fleet bucket unused that long is deleted, and starts full
	// when next used. Default 10 min; range [10·Interval, 30 days].
	KeyTTL time.Duration

	// Max is the most tokens the fleet's shared bucket holds (and holds
	// when created): the largest burst of retries of the whole fleet.
	// Default 20, one process's local budget: a fleet of n replicas then
	// bursts like one replica does today; set it to 20·n to keep each
	// replica's burst. Range [1, 1e6], a multiple of 0.001.
	Max float64

	// Ratio is the tokens each original call deposits, as
	// [retry.BudgetConfig].Ratio. Default 0.1; range [0.001, 1], a
	// multiple of 0.001.
	Ratio float64

	// Lease is the most tokens a process holds after a sync: each sync
	// tops its local budget up to Lease from the fleet bucket (as far as
	// the bucket has them) and returns what it holds above Lease. Between
	// syncs a process spends its lease and its own deposits. Default 2;
	// range [1, Max], a multiple of 0.001.
	Lease float64

	// LocalMax is the Max of each gate's local budget, so the most tokens
	// a process holds in local mode (Redis unreachable), and what its
	// deposits between two syncs can reach (more are lost). Default 20,
	// the local budget's default; range [Lease, 1e6], a multiple of 0.001.
	LocalMax float64

	// FleetLimit, if not 0, turns on the fleet-wide concurrency cap of
	// every gate given to [Fleet.Attach]: the most calls in flight to that
	// gate's downstream, summed over the processes of the fleet (those
	// sharing Prefix and the gate's name). It is divided among the live
	// processes, and each attached gate's limiter is capped at this
	// process's share
	// ([github.com/floodgate-go/floodgate/adaptive.Limiter.SetCap]);
	// docs/fleet.md has the model and its bounds. The fleet owns the cap
	// of an attached gate's limiter. Default 0 (off); range [0, 1<<20]
	// (calls); each process needs one call at least, so the bound holds
	// with at most FleetLimit processes.
	FleetLimit int

	// HeartbeatTTL is the least lifetime a process declares for its
	// heartbeat of the fleet-wide cap: it counts as live that long after
	// its last successful sync (longer, 2·(Interval + its last round of
	// syncs), if its rounds are slow), and its cap stays reserved for as
	// long again; so a process that exits (or stops reaching Redis) stops
	// counting a lifetime after, and the others divide its share a
	// lifetime later. It is also how long a new cap record (the first
	// process of a fleet, after Redis lost its keys, or after no process
	// reached Redis for its lifetime) keeps every share from growing. Used
	// only with FleetLimit. Default 1 s, at least 3·Interval, at most
	// KeyTTL; range [3·Interval, KeyTTL]. Give every process of a gate the
	// same Config (docs/fleet.md's failure modes).
	HeartbeatTTL time.Duration

	// Logger gets one line when the process falls back to local mode and
	// one when it shares again. nil uses slog.Default().
	Logger *slog.Logger

	// OnStateChange, if not nil, is called with the new state each time
	// the process changes mode, from the sync goroutine (keep it short:
	// syncs wait for it; it must not call [Fleet.Close]). For a metric.
	OnStateChange func(State)
}

// Defaults of [Config].
const (
	DefaultPrefix   = "floodgate"
	DefaultInterval = 100 * time.Millisecond
	DefaultTimeout  = 50 * time.Millisecond
	DefaultKeyTTL   = 10 * time.Minute
	DefaultMax      = 20
	DefaultRatio    = retry.DefaultBudgetRatio
	DefaultLease    = 2
	DefaultLocalMax = retry.DefaultBudgetMax

	DefaultHeartbeatTTL = time.Second
)

// settings is a validated Config, in credits.
type settings struct {
	Config
	max, lease, localMax int64 // credits
}

// validate fills cfg's defaults and checks its ranges.
func validate(cfg Config) (settings, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = min(DefaultTimeout, cfg.Interval)
	}
	if cfg.KeyTTL == 0 {
		cfg.KeyTTL = max(DefaultKeyTTL, 10*cfg.Interval)
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Ratio == 0 {
		cfg.Ratio = DefaultRatio
	}
	if cfg.Lease == 0 {
		cfg.Lease = min(DefaultLease, cfg.Max)
	}
	if cfg.LocalMax == 0 {
		cfg.LocalMax = max(DefaultLocalMax, cfg.Lease)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HeartbeatTTL == 0 {
		cfg.HeartbeatTTL = min(max(DefaultHeartbeatTTL, 3*cfg.Interval), cfg.KeyTTL)
	}
	s := settings{Config: cfg}
	var ok bool
	switch {
	case len(cfg.Prefix) > 64 || strings.ContainsAny(cfg.Prefix, "{}:"):
		return s, fmt.Errorf("fleet: Prefix must be at most 64 bytes without '{', '}' or ':', got %q", cfg.Prefix)
	case cfg.Interval < 10*time.Millisecond || cfg.Interval > 10*time.Second:
		return s, fmt.Errorf("fleet: Interval must be in [10ms, 10s], got %v", cfg.Interval)
	case cfg.Timeout < time.Millisecond || cfg.Timeout > cfg.Interval:
		return s, fmt.Errorf("fleet: Timeout must be in [1ms, Interval=%v], got %v", cfg.Interval, cfg.Timeout)
	case cfg.KeyTTL < 10*cfg.Interval || cfg.KeyTTL > 30*24*time.Hour:
		return s, fmt.Errorf("fleet: KeyTTL must be in [10·Interval=%v, 720h], got %v", 10*cfg.Interval, cfg.KeyTTL)
	}
	if err := validateCap(cfg); err != nil {
		return s, err
	}
	if s.max, ok = credits(cfg.Max, 1, 1e6); !ok {
		return s, fmt.Errorf("fleet: Max must be a multiple of 0.001 in [1, 1000000], got %v", cfg.Max)
	}
	if _, ok = credits(cfg.Ratio, 0.001, 1); !ok {
		return s, fmt.Errorf("fleet: Ratio must be a multiple of 0.001 in [0.001, 1], got %v", cfg.Ratio)
	}
	if s.lease, ok = credits(cfg.Lease, 1, cfg.Max); !ok {
		return s, fmt.Errorf("fleet: Lease must be a multiple of 0.001 in [1, Max=%v], got %v", cfg.Max, cfg.Lease)
	}
	if s.localMax, ok = credits(cfg.LocalMax, cfg.Lease, 1e6); !ok {
		return s, fmt.Errorf("fleet: LocalMax must be a multiple of 0.001 in [Lease=%v, 1000000], got %v", cfg.Lease, cfg.LocalMax)
	}
	return s, nil
}

// credits returns tokens in credits, and whether tokens is in [lo, hi] and
// a whole number of credits (as retry.NewBudget checks).
func credits(tokens, lo, hi float64) (int64, bool) {
	if !(tokens >= lo && tokens <= hi) {
		return 0, false
	}
	c := math.Round(tokens * retry.CreditsPerToken)
	return int64(c), math.Abs(tokens*retry.CreditsPerToken-c) <= max(1e-9, 1e-12*c) // float64 error grows with c
}
