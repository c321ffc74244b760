package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// The child role of the multi-process tests: the test binary re-executed
// with these variables set runs child instead of the tests.
const (
	childEnv      = "FLEET_TEST_CHILD"  // the child's name
	childAddrEnv  = "FLEET_TEST_ADDR"   // Redis's address
	childPrefix   = "FLEET_TEST_PREFIX" // Config.Prefix
	childCallsEnv = "FLEET_TEST_CALLS"  // user calls to make
	childSpanEnv  = "FLEET_TEST_SPAN"   // time to spread them over, a time.Duration
	childGate     = "shared"            // the gate name every child uses
	childOutput   = "FLEETCHILD "       // starts the line of the child's report
	// childReady is the line runChild prints once its gate runs; it then
	// waits for its stdin to close, which execChildren does once every
	// child has printed it, and makes its first call.
	childReady = "FLEETCHILD-READY"
)

// childReport is what a child prints, as JSON after childOutput.
type childReport struct {
	Name      string
	Calls     int // user calls (Guard)
	Retries   int // attempts beyond the first
	Fallbacks uint64
	End       string // State at the end, before Close
	Bad       int    // Guard errors other than the downstream's, retries exhausted or budget exhausted
	FirstBad  string
	MaxGuard  time.Duration // slowest Guard call
	P99Guard  time.Duration
	Changes   []change // state changes, as they happened
	// After the last change to shared (0 if none): calls started, retries.
	CallsAfter, RetriesAfter int
}

// change is a state change at a wall-clock time (comparable between the
// processes of one machine).
type change struct {
	To   string
	Unix int64 // ns
}

var errDown = errors.New("downstream down")

// child makes FLEET_TEST_CALLS Guard calls, evenly spread over
// FLEET_TEST_SPAN, through a gate whose budget is the fleet's, against a
// downstream that fails every call with a transient error, and prints its
// childReport. Its breaker never trips (MinCalls 1e6): the budget alone
// limits the retries.
func child() int {
	run := runChild
	if os.Getenv(capChildEnv) != "" {
		run = runCapChild // cap_child_test.go
	}
	if os.Getenv(childModeEnv) == "breaker" {
		run = runBreakerChild
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func runChild() error {
	calls, err := strconv.Atoi(os.Getenv(childCallsEnv))
	if err != nil {
		return err
	}
	span, err := time.ParseDuration(os.Getenv(childSpanEnv))
	if err != nil {
		return err
	}
	r := childReport{Name: os.Getenv(childEnv)}
	var mu sync.Mutex
	client := redis.NewClient(&redis.Options{Addr: os.Getenv(childAddrEnv)})
	defer client.Close()
	f, err := New(client, Config{Prefix: os.Getenv(childPrefix), OnStateChange: func(s State) {
		mu.Lock()
		r.Changes = append(r.Changes, change{s.String(), time.Now().UnixNano()})
		mu.Unlock()
	}})
	if err != nil {
		return err
	}
	budget, err := f.Budget(childGate)
	if err != nil {
		return err
	}
	g, err := floodgate.New(childGate,
		floodgate.WithRetry(retry.Config{Budget: budget, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}),
		floodgate.WithBreaker(breaker.Config{MinCalls: 1e6}))
	if err != nil {
		return err
	}
	if err := f.Start(); err != nil {
		return err
	}
	fmt.Println(childReady)
	// Start with the others: execChildren closes stdin once all are ready.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	type sample struct {
		start   int64 // wall clock, ns
		retries int
	}
	samples := make([]sample, 0, calls)
	durations := make([]time.Duration, 0, calls)
	began := time.Now()
	for i := range calls {
		time.Sleep(time.Until(began.Add(span * time.Duration(i) / time.Duration(calls))))
		attempts := 0
		start := time.Now()
		err := g.Guard(context.Background(), func(context.Context) error {
			attempts++
			return retry.Transient(errDown)
		})
		d := time.Since(start)
		durations = append(durations, d)
		samples = append(samples, sample{start.UnixNano(), attempts - 1})
		r.Retries += attempts - 1
		var fe *floodgate.Error
		if !errors.As(err, &fe) || !errors.Is(err, errDown) ||
			(fe.Reason != floodgate.ErrAttemptsExhausted && fe.Reason != floodgate.ErrBudgetExhausted) {
			if r.Bad == 0 {
				r.FirstBad = fmt.Sprint(err)
			}
			r.Bad++
		}
	}
	r.End = f.State().String()
	f.Close()
	r.Calls, r.Fallbacks = calls, f.Fallbacks()
	slices.Sort(durations)
	r.MaxGuard, r.P99Guard = durations[len(durations)-1], durations[len(durations)*99/100]
	var lastShared int64
	for _, c := range r.Changes {
		if c.To == Shared.String() {
			lastShared = c.Unix
		}
	}
	for _, s := range samples {
		if lastShared != 0 && s.start >= lastShared {
			r.CallsAfter++
			r.RetriesAfter += s.retries
		}
	}
	out, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(childOutput + string(out))
	return nil
}
