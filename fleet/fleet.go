package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// State is a process's fleet mode.
type State int32

// The states of a [Fleet].
const (
	// Local: every gate spends its own local budget, as without fleet mode:
	// before the first sync, and from the first failed sync until one
	// succeeds again.
	Local State = iota
	// Shared: the last sync succeeded; each gate's local budget holds a
	// lease of the fleet's bucket.
	Shared
)

// String returns "local" or "shared".
func (s State) String() string {
	if s == Shared {
		return "shared"
	}
	return "local"
}

// Fleet shares the retry budgets of named gates between the processes of a
// fleet through Redis. Create one with [New], get each gate's budget with
// [Fleet.Budget], then [Fleet.Start] the background sync and [Fleet.Close]
// it at exit. Its methods are safe for concurrent use.
type Fleet struct {
	client redis.UniversalClient
	s      settings
	id     string // this process's name in its keys: random
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sync goroutine
	calls  sync.WaitGroup // a Redis call in flight

	mu      sync.Mutex
	gates   map[string]*gate
	order   []*gate // in creation order, synced in this order
	started bool
	closed  bool

	state     atomic.Int32  // a State
	fallbacks atomic.Uint64 // failed syncs that began a stretch of local mode

	// Used by the sync goroutine only.
	failing bool          // the last sync failed
	pending <-chan result // a Redis call that timed out and has not returned yet
	round   time.Duration // the last round of syncs that succeeded, first gate to last (the cap's and the breaker's field lifetimes)
}

// gate is one named gate's local budget and its keys.
type gate struct {
	name   string
	key    string // the fleet bucket
	seqKey string // this process's last sync of the gate
	budget *retry.Budget
	fg     atomic.Pointer[floodgate.Gate] // set by Attach; nil: the budget only
	level  atomic.Int64                   // credits in the fleet bucket after the last sync; -1 before
	seq    uint64                         // syncs sent; used by the sync goroutine only
	cap    capState                       // the fleet-wide cap (cap.go)
	brk    sharedBreaker                  // its part in the fleet's breaker, once attached
}

// New returns a Fleet syncing through client, or an error when client is
// nil or naming the first field of cfg that is out of range. It makes no
// Redis call: that is the sync's job, once started.
func New(client redis.UniversalClient, cfg Config) (*Fleet, error) {
	if client == nil {
		return nil, errors.New("fleet: client must not be nil")
	}
	s, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	f := &Fleet{client: client, s: s, gates: map[string]*gate{}, id: strconv.FormatUint(rand.Uint64(), 36)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f, nil
}

// Budget returns the retry budget of the gate named name, for
// retry.Config.Budget (floodgate.WithRetry): the same *retry.Budget for the
// same name, shared with every process of the fleet that uses that name
// and Prefix. Guard spends from it locally, one atomic per call as without
// fleet mode; the sync moves tokens between it and the fleet's bucket.
// It holds Lease tokens until the first sync. It returns an error when
// name is empty or holds '{' or '}', or when the Fleet is closed.
func (f *Fleet) Budget(name string) (*retry.Budget, error) {
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, fmt.Errorf("fleet: gate name must be non-empty without '{' or '}', got %q", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("fleet: Budget after Close")
	}
	if g, ok := f.gates[name]; ok {
		return g.budget, nil
	}
	b, err := retry.NewBudget(retry.BudgetConfig{Ratio: f.s.Ratio, Max: f.s.LocalMax})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err) // unreachable: validate checked both
	}
	b.Trim(f.s.lease)
	g := &gate{name: name, key: budgetKey(f.s.Prefix, name), seqKey: seqKey(f.s.Prefix, name, f.id), budget: b}
	g.level.Store(-1)
	g.brk.keys = breakerKeys(f.s.Prefix, name)
	f.gates[name] = g
	f.order = append(f.order, g)
	return b, nil
}

// Attach shares g's breaker and limiter with the fleet as well as its
// budget: g must have been made with the budget that [Fleet.Budget]
// returned for g.Name() (floodgate.WithRetry(retry.Config{Budget: b})).
// With Config.FleetLimit, the fleet also caps g's limiter at its share of
// the fleet-wide cap ([Fleet.Share]); Attach caps it at 1 until the first
// sync grants one. It returns an error when g is nil, when its budget is
// not that one, when g is attached already, or when the Fleet is closed.
func (f *Fleet) Attach(g *floodgate.Gate) error {
	if g == nil {
		return errors.New("fleet: Attach: gate must not be nil")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("fleet: Attach after Close")
	}
	fg, ok := f.gates[g.Name()]
	if !ok || fg.budget != g.Budget() {
		return fmt.Errorf("fleet: Attach: gate %q does not use the budget Fleet.Budget(%q) returned", g.Name(), g.Name())
	}
	if fg.fg.Load() == nil {
		f.attachCap(fg, g) // before the sync can see g
	}
	if !fg.fg.CompareAndSwap(nil, g) {
		return fmt.Errorf("fleet: Attach: gate %q is attached already", g.Name())
	}
	return nil
}

// budgetKey is the key of a gate's fleet bucket: its hash tag is
// {prefix:name}, shared by every key of the gate.
func budgetKey(prefix, name string) string { return "{" + prefix + ":" + name + "}:budget" }

// seqKey is the key holding the last sync of process id for a gate, so
// that a sync the client re-sends is applied once.
func seqKey(prefix, name, id string) string { return "{" + prefix + ":" + name + "}:sync:" + id }

// Start starts the background sync: one sync at once, then one every
// Interval. It returns an error if the Fleet was started or closed before.
func (f *Fleet) Start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return errors.New("fleet: Start after Close")
	case f.started:
		return errors.New("fleet: Start called twice")
	}
	f.started = true
	f.wg.Add(1)
	go f.run()
	return nil
}

// Close stops the sync and waits for its goroutine, and for a Redis call
// in flight at most Timeout more (a call stalled past that is left to the
// client: go-redis returns it at the client's ReadTimeout, 5 s by
// default, never with ReadTimeout -1, or at once if the client has
// ContextTimeoutEnabled). It must not be called from OnStateChange, which
// runs on the sync goroutine it waits for. The budgets keep working, locally: the state is
// Local from then on (OnStateChange is called if it was Shared); the
// lease a process holds is not given back (its tokens are lost to the
// fleet). Close does not close the client. It returns nil, and may be
// called more than once.
func (f *Fleet) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
	done := make(chan struct{})
	go func() { f.calls.Wait(); close(done) }()
	t := time.NewTimer(f.s.Timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	f.releaseBreakers()
	f.setState(Local)
	return nil
}

// State returns the process's mode now.
func (f *Fleet) State() State { return State(f.state.Load()) }

// Fallbacks returns how many times the process fell back to local mode
// because a sync failed (a stretch of failed syncs counts once).
func (f *Fleet) Fallbacks() uint64 { return f.fallbacks.Load() }

// Tokens returns the tokens in the fleet's bucket of the gate named name
// as of this process's last successful sync, and false if it has none
// (no such gate, or no sync succeeded yet).
func (f *Fleet) Tokens(name string) (float64, bool) {
	f.mu.Lock()
	g, ok := f.gates[name]
	f.mu.Unlock()
	if !ok {
		return 0, false
	}
	c := g.level.Load()
	return float64(c) / retry.CreditsPerToken, c >= 0
}
