package breaker

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// transitions records the state changes a callback sees, safe to read from
// the test goroutine after synctest.Wait.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (r *transitions) add(from, to State) {
	r.mu.Lock()
	r.got = append(r.got, from.String()+">"+to.String())
	r.mu.Unlock()
}

func (r *transitions) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.got, " ")
}

// tryCall is one healthy call: served, refused, or (before issue 13's fix)
// panicking in Allow because the caller ran the state-change callback.
func tryCall(b *Breaker) (served, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	p, err := b.Allow()
	if err != nil {
		return false, false
	}
	b.Done(p, Success, time.Millisecond, time.Now())
	return true, false
}

// Issue 13, defect 1: an OnStateChange that panics once, on the move to
// half-open, lost the probe whose Allow ran it: with MinCalls 1 and OpenFor
// 5 ms, healthy calls were then refused until ProbeLease (10 s; the trial
// counted 1,860 refusals). The breaker must serve them right after OpenFor.
func TestPanickingCallbackKeepsTheProbe(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cfg           Config
		every, during time.Duration // one healthy call every, for during, from OpenFor on
	}{
		{"issue 13: MinCalls 1, OpenFor 5ms, default ProbeLease 10s", Config{MinCalls: 1, OpenFor: 5 * time.Millisecond},
			5 * time.Millisecond, 11 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen transitions
				panicked := false // touched by the callback only
				cfg := tc.cfg
				cfg.OnStateChange = func(_ string, from, to State) {
					seen.add(from, to)
					if to == HalfOpen && !panicked {
						panicked = true
						panic("callback")
					}
				}
				b := mustNew(t, cfg)
				p, _ := b.Allow()
				b.Done(p, Failure, time.Millisecond, time.Now()) // trips it
				time.Sleep(cfg.OpenFor + time.Millisecond)
				start := time.Now()
				var refused, callerPanics int
				var lastRefusal time.Duration
				for time.Since(start) < tc.during {
					served, panicked := tryCall(b)
					switch {
					case panicked:
						callerPanics++
					case !served:
						refused++
						lastRefusal = time.Since(start)
					}
					time.Sleep(tc.every)
				}
				synctest.Wait() // every state change delivered
				if refused != 0 || callerPanics != 0 {
					t.Errorf("%d healthy calls refused (the last %v after OpenFor) and %d panicked in the caller; want none",
						refused, lastRefusal, callerPanics)
				}
				if s := b.State(); s != Closed {
					t.Errorf("state %v after %v of healthy calls, want closed", s, tc.during)
				}
				if n := b.CallbackPanics(); n != 1 {
					t.Errorf("CallbackPanics() = %d, want 1", n)
				}
				if want := "closed>open open>half-open half-open>closed"; seen.String() != want {
					t.Errorf("callback saw %q, want %q (delivery goes on after the panic)", seen.String(), want)
				}
			})
		})
	}
}

// Issue 13, defect 2: an OnStateChange that blocks held the caller whose
// call tripped the breaker for as long as it blocked (10.0 s against the
// caller's 50 ms deadline in the trial). Now no Allow or Done waits for it:
// the caller trips the breaker, is refused while it is open, waits out
// OpenFor and closes it with three probes within its deadline (6 ms of
// fake time), while the callback still blocks; the changes
// are delivered in order once it returns.
func TestBlockingCallbackDelaysNoCall(t *testing.T) {
	const forever = -1
	for _, tc := range []struct {
		name     string
		block    time.Duration // how long the first callback blocks; forever: until the test ends
		deadline time.Duration // the caller's
	}{
		{"issue 13: blocks 10s, caller's deadline 50ms", 10 * time.Second, 50 * time.Millisecond},
		{"blocks until the test ends, caller's deadline 50ms", forever, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var seen transitions
				first := true // touched by the callback only
				cfg := Config{MinCalls: 1, OpenFor: 5 * time.Millisecond, OnStateChange: func(_ string, from, to State) {
					seen.add(from, to)
					if first {
						first = false
						if tc.block == forever {
							<-release
						} else {
							time.Sleep(tc.block)
						}
					}
				}}
				b := mustNew(t, cfg)
				took := make(chan time.Duration, 1)
				go func() {
					start := time.Now()
					p, _ := b.Allow()
					b.Done(p, Failure, time.Millisecond, time.Now()) // trips it: closed>open
					if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
						t.Errorf("Allow while open: %v, want ErrOpen", err)
					}
					time.Sleep(cfg.OpenFor + time.Millisecond)
					for range DefaultProbes {
						if served, _ := tryCall(b); !served {
							t.Errorf("probe refused %v after the trip, state %v", time.Since(start), b.State())
						}
					}
					took <- time.Since(start)
				}()
				select {
				case d := <-took:
					if s := b.State(); s != Closed {
						t.Errorf("state %v after the probes, want closed", s)
					}
					t.Logf("caller done in %v", d)
				case <-time.After(tc.deadline):
					close(release)
					release = nil
					t.Errorf("the caller was held past its %v deadline: it took %v", tc.deadline, <-took)
				}
				if release != nil {
					close(release)
				}
				if tc.block != forever {
					time.Sleep(tc.block) // the callback's sleep ends: time stops once this goroutine returns
				}
				synctest.Wait()
				if want := "closed>open open>half-open half-open>closed"; seen.String() != want {
					t.Errorf("callback saw %q, want %q", seen.String(), want)
				}
			})
		})
	}
}

// A callback that ends its goroutine (runtime.Goexit, as t.FailNow does)
// does not stop delivery: the next change still reaches the callback.
func TestGoexitInCallbackKeepsDelivering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen transitions
		b := mustNew(t, Config{MinCalls: 1, OpenFor: time.Second, Probes: 1, OnStateChange: func(_ string, from, to State) {
			seen.add(from, to)
			if to == Open {
				runtime.Goexit()
			}
		}})
		_ = call(t, b, time.Millisecond, Failure)
		time.Sleep(time.Second + time.Millisecond)
		_ = call(t, b, time.Millisecond, Success)
		synctest.Wait()
		if want := "closed>open open>half-open half-open>closed"; seen.String() != want {
			t.Errorf("callback saw %q, want %q", seen.String(), want)
		}
	})
}

// While the callback blocks, 1,024 changes wait for it and the rest are
// dropped and counted: 600 open/half-open cycles after a trip make 1,201
// changes, one being delivered, 1,024 queued, 176 dropped. The queued ones
// arrive in order once the callback returns.
func TestDroppedStateChanges(t *testing.T) {
	for _, tc := range []struct {
		cycles      int
		wantDropped int64
	}{
		{cycles: 600, wantDropped: 1 + 2*600 - 1 - 1024},
		{cycles: 100, wantDropped: 0},
	} {
		t.Run(fmt.Sprint(tc.cycles, " cycles"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var seen transitions
				first := true
				b := mustNew(t, Config{MinCalls: 1, OpenFor: time.Millisecond, Probes: 1, OnStateChange: func(_ string, from, to State) {
					seen.add(from, to)
					if first {
						first = false
						<-release
					}
				}})
				_ = call(t, b, 0, Failure)
				for range tc.cycles {
					time.Sleep(2 * time.Millisecond)
					if err := call(t, b, 0, Failure); err != nil { // the probe fails: half-open>open
						t.Fatal(err)
					}
				}
				if got := b.DroppedStateChanges(); got != tc.wantDropped {
					t.Errorf("DroppedStateChanges() = %d, want %d", got, tc.wantDropped)
				}
				close(release)
				synctest.Wait()
				got := strings.Fields(seen.String())
				if want := 1 + 2*tc.cycles - int(tc.wantDropped); len(got) != want {
					t.Fatalf("%d changes delivered, want %d", len(got), want)
				}
				for i, s := range got {
					want := [...]string{"open>half-open", "half-open>open"}[(i+1)%2]
					if i == 0 {
						want = "closed>open"
					}
					if s != want {
						t.Fatalf("change %d delivered %q, want %q", i, s, want)
					}
				}
			})
		})
	}
}

// Allow never panics, whatever the callback does: a callback that always
// panics leaves every call served and the probes counted right.
func TestAlwaysPanickingCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{MinCalls: 1, OpenFor: time.Second, Probes: 2, OnStateChange: func(string, State, State) {
			panic(errors.New("callback"))
		}})
		for cycle := range 3 {
			if served, panicked := tryCall(b); !served || panicked {
				t.Fatalf("cycle %d: a call while closed: served %v, panicked %v", cycle, served, panicked)
			}
			if err := call(t, b, time.Millisecond, Failure); err != nil {
				t.Fatal(err)
			}
			if s := b.State(); s != Open {
				t.Fatalf("cycle %d: state %v after a failure, want open", cycle, s)
			}
			time.Sleep(time.Second + time.Millisecond)
			for probe := range 2 {
				if served, panicked := tryCall(b); !served || panicked {
					t.Fatalf("cycle %d: probe %d served %v, panicked %v", cycle, probe, served, panicked)
				}
			}
			if s := b.State(); s != Closed {
				t.Fatalf("cycle %d: state %v after 2 good probes, want closed", cycle, s)
			}
		}
		synctest.Wait()
		if got := b.CallbackPanics(); got != 9 {
			t.Errorf("CallbackPanics() = %d, want 9 (3 cycles of 3 changes)", got)
		}
	})
}
