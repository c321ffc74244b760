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
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// The breaker child of the multi-process tests (childModeEnv=breaker):
// besides childEnv, childAddrEnv, childPrefix and childSpanEnv, these.
const (
	childModeEnv    = "FLEET_TEST_MODE"     // "breaker"; unset: the budget child
	childRateEnv    = "FLEET_TEST_RATE"     // calls per second
	childBeginEnv   = "FLEET_TEST_BEGIN"    // when to make the first call, Unix ns (the same for every child)
	childHealEnv    = "FLEET_TEST_HEAL"     // the downstream fails until then, Unix ns; 0: never fails
	childOpenForEnv = "FLEET_TEST_OPEN_FOR" // breaker.Config.OpenFor
	childMinCalls   = 40                    // breaker.Config.MinCalls
)

// breakerReport is what a breaker child prints, as JSON after childOutput.
type breakerReport struct {
	Name                     string
	Calls                    int // Guard calls
	Reached                  int // fn calls
	OK, Down, Open, Bad      int // Guard answers: nil, the downstream's error, ErrOpen, anything else
	FirstBad                 string
	OpenReached              int     // ErrOpen answers whose call reached fn (should be 0)
	LocalOpens               int     // times the process's own breaker opened
	Fallbacks                uint64  // the Fleet's
	FleetOpen, Held, Refused int64   // first seen: fleet breaker open, breaker held, an ErrOpen answer (Unix ns; 0 never)
	Reaches                  []int64 // fn calls (Unix ns)
	Changes                  []change
	Holds                    []change // "held" and "free", as polled every millisecond
}

// runBreakerChild makes rate Guard calls per second for span from begin
// through a gate attached to the fleet (MinCalls 40, one attempt per
// call), its downstream an in-process fn failing until heal, and prints
// its breakerReport. A goroutine polls the fleet breaker's state and the
// hold every millisecond.
func runBreakerChild() error {
	rate, err := strconv.Atoi(os.Getenv(childRateEnv))
	if err != nil {
		return err
	}
	span, err := time.ParseDuration(os.Getenv(childSpanEnv))
	if err != nil {
		return err
	}
	openFor, err := time.ParseDuration(os.Getenv(childOpenForEnv))
	if err != nil {
		return err
	}
	begin, err := strconv.ParseInt(os.Getenv(childBeginEnv), 10, 64)
	if err != nil {
		return err
	}
	heal, err := strconv.ParseInt(os.Getenv(childHealEnv), 10, 64)
	if err != nil {
		return err
	}
	r := breakerReport{Name: os.Getenv(childEnv)}
	var mu sync.Mutex
	client := redis.NewClient(&redis.Options{Addr: os.Getenv(childAddrEnv)})
	defer client.Close()
	f, err := New(client, Config{Prefix: os.Getenv(childPrefix)})
	if err != nil {
		return err
	}
	budget, err := f.Budget(childGate)
	if err != nil {
		return err
	}
	var localOpens atomic.Int64
	g, err := floodgate.New(childGate, floodgate.WithRetry(retry.Config{Budget: budget, MaxAttempts: 1}),
		floodgate.WithBreaker(breaker.Config{MinCalls: childMinCalls, OpenFor: openFor, OnStateChange: func(_ string, _, to breaker.State) {
			if to == breaker.Open {
				localOpens.Add(1)
			}
		}}))
	if err != nil {
		return err
	}
	if err := f.Attach(g); err != nil {
		return err
	}
	if err := f.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		last, held := "", false
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			now := time.Now().UnixNano()
			mu.Lock()
			if st, ok := f.BreakerState(childGate); ok && st.String() != last {
				last = st.String()
				r.Changes = append(r.Changes, change{last, now})
				if st == breaker.Open && r.FleetOpen == 0 {
					r.FleetOpen = now
				}
			}
			if h := g.Breaker().Held(); h != held {
				held = h
				to := "free"
				if h {
					to = "held"
					if r.Held == 0 {
						r.Held = now
					}
				}
				r.Holds = append(r.Holds, change{to, now})
			}
			mu.Unlock()
		}
	}()
	n := int(int64(rate) * int64(span) / int64(time.Second))
	for i := range n {
		time.Sleep(time.Until(time.Unix(0, begin).Add(time.Second * time.Duration(i) / time.Duration(rate))))
		reached := false
		err := g.Guard(context.Background(), func(context.Context) error {
			reached = true
			now := time.Now().UnixNano()
			mu.Lock()
			r.Reaches = append(r.Reaches, now)
			mu.Unlock()
			if now < heal {
				return retry.Transient(errDown)
			}
			return nil
		})
		r.Calls++
		if reached {
			r.Reached++
		}
		switch {
		case err == nil:
			r.OK++
		case errors.Is(err, breaker.ErrOpen):
			r.Open++
			if reached {
				r.OpenReached++
			}
			mu.Lock()
			if r.Refused == 0 {
				r.Refused = time.Now().UnixNano()
			}
			mu.Unlock()
		case errors.Is(err, errDown):
			r.Down++
		default:
			if r.Bad == 0 {
				r.FirstBad = err.Error()
			}
			r.Bad++
		}
	}
	close(done)
	<-polled
	f.Close()
	r.Fallbacks, r.LocalOpens = f.Fallbacks(), int(localOpens.Load())
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(childOutput + string(out))
	return nil
}
