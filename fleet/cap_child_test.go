package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// The cap child role of the multi-process cap test: with capChildEnv set
// (FleetLimit), the re-executed test binary runs runCapChild; childEnv,
// childAddrEnv, childPrefix and childSpanEnv as for child.
const (
	capChildEnv = "FLEET_TEST_CAP_LIMIT" // Config.FleetLimit
	capTTLEnv   = "FLEET_TEST_CAP_TTL"   // Config.HeartbeatTTL, a time.Duration
)

// capReport is what a cap child prints, as JSON after childOutput.
type capReport struct {
	Name       string
	Start, End int64         // wall clock, ns: Start before Attach, End after the last call ended
	Samples    []capSample   // the limit and the cap, each time either was seen to change
	Shares     []shareChange // the share, each time it changed
	Calls      int64         // Guard calls
	Shed       int64         // of which shed
	Bad        int           // Guard errors other than a shed
	FirstBad   string
	Fallbacks  uint64
	MaxLimit   int // highest Limit() seen
	EndLimit   int // Limit() at the end
	EndShare   int // Share at the end
	EndLive    int // live processes at the end
}

// capSample is a limit and a cap read at a wall-clock time (comparable
// between the processes of one machine).
type capSample struct {
	Unix       int64 // ns
	Limit, Cap int
}

// shareChange is a share seen at a wall-clock time.
type shareChange struct {
	Share, Live int
	Unix        int64 // ns
}

// runCapChild runs a gate of the fleet-wide cap under a demand above any
// share (32 goroutines calling Guard in a loop against a downstream that
// answers in 2 ms, the limiter's MaxLimit 200) for FLEET_TEST_SPAN,
// sampling its limit every 200 µs or so, and prints its capReport.
func runCapChild() error {
	limit, err := strconv.Atoi(os.Getenv(capChildEnv))
	if err != nil {
		return err
	}
	span, err := time.ParseDuration(os.Getenv(childSpanEnv))
	if err != nil {
		return err
	}
	ttl, _ := time.ParseDuration(os.Getenv(capTTLEnv)) // 0: the default
	r := capReport{Name: os.Getenv(childEnv)}
	client := redis.NewClient(&redis.Options{Addr: os.Getenv(childAddrEnv)})
	defer client.Close()
	f, err := New(client, Config{Prefix: os.Getenv(childPrefix), FleetLimit: limit, HeartbeatTTL: ttl})
	if err != nil {
		return err
	}
	budget, err := f.Budget(childGate)
	if err != nil {
		return err
	}
	g, err := floodgate.New(childGate,
		floodgate.WithRetry(retry.Config{Budget: budget}),
		floodgate.WithBreaker(breaker.Config{MinCalls: 1e6}),
		floodgate.WithLimiter(adaptive.Config{MaxLimit: 200}))
	if err != nil {
		return err
	}
	r.Start = time.Now().UnixNano()
	if err := f.Attach(g); err != nil {
		return err
	}
	if err := f.Start(); err != nil {
		return err
	}
	lim := g.Limiter()
	var stop atomic.Bool
	var calls, shed atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for !stop.Load() {
				calls.Add(1)
				err := g.Guard(context.Background(), func(context.Context) error {
					time.Sleep(2 * time.Millisecond)
					return nil
				})
				if err == nil {
					continue
				}
				if errors.Is(err, adaptive.ErrShed) {
					shed.Add(1)
					time.Sleep(2 * time.Millisecond) // a shed caller backs off a little
					continue
				}
				mu.Lock()
				if r.Bad == 0 {
					r.FirstBad = err.Error()
				}
				r.Bad++
				mu.Unlock()
			}
		})
	}
	// The sampler: the clock is read before the limit and the cap, so a
	// sample's values held at its time or later.
	began := time.Now()
	lastShare := 0
	sample := func() {
		now := time.Now().UnixNano()
		l, c := lim.Limit(), lim.Cap()
		if n := len(r.Samples); n == 0 || r.Samples[n-1].Limit != l || r.Samples[n-1].Cap != c {
			r.Samples = append(r.Samples, capSample{now, l, c})
		}
		r.MaxLimit = max(r.MaxLimit, l)
	}
	for time.Since(began) < span {
		sample()
		if s, live, ok := f.Share(childGate); ok && s != lastShare {
			lastShare = s
			r.Shares = append(r.Shares, shareChange{s, live, time.Now().UnixNano()})
		}
		time.Sleep(200 * time.Microsecond)
	}
	stop.Store(true)
	wg.Wait()
	sample() // the callers ended after the sampler's last round
	r.End = time.Now().UnixNano()
	r.EndLimit = lim.Limit()
	r.EndShare, r.EndLive, _ = f.Share(childGate)
	f.Close()
	r.Calls, r.Shed, r.Fallbacks = calls.Load(), shed.Load(), f.Fallbacks()
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(childOutput + string(out))
	return nil
}
