package sim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/floodgate-go/floodgate"
)

// Caller.Shed counts a call as shed ("p99 to shed") when the contender
// refused its last try itself, and not when the downstream answered it.
func TestShed(t *testing.T) {
	fg, fs, pl := &gate{}, &failsafeCaller{}, newPool(PoolSize, DefaultAttemptTimeout)
	for _, tc := range []struct {
		name   string
		caller Caller
		err    error
		want   bool
	}{
		{"floodgate: first attempt shed", fg, floodgate.ErrShed, true},
		{"floodgate: breaker open", fg, &floodgate.Error{Reason: floodgate.ErrOpen}, true},
		{"floodgate: retry shed after a 500", fg, &floodgate.Error{Reason: floodgate.ErrShed, Last: ErrServer, Attempts: 1}, true},
		{"floodgate: an inner gate's refusal, passed up (S7)", fg, &floodgate.Error{Reason: floodgate.ErrOpen, Attempts: 0}, true},
		{"floodgate: budget empty after a 500", fg, &floodgate.Error{Reason: floodgate.ErrBudgetExhausted, Last: ErrServer, Attempts: 1}, false},
		{"floodgate: attempts used up", fg, &floodgate.Error{Reason: floodgate.ErrAttemptsExhausted, Last: context.DeadlineExceeded, Attempts: 3}, false},
		{"floodgate: the downstream's 500", fg, ErrServer, false},
		{"failsafe-go: limiter", fs, adaptivelimiter.ErrExceeded, true},
		{"failsafe-go: breaker open", fs, circuitbreaker.ErrOpen, true},
		{"failsafe-go: retries exceeded, last one refused", fs, retrypolicy.ExceededError{LastError: circuitbreaker.ErrOpen}, true},
		{"failsafe-go: retries exceeded, last one a 500", fs, retrypolicy.ExceededError{LastError: ErrServer}, false},
		{"failsafe-go: budget", fs, budget.ErrExceeded, false},
		{"pool: never refuses", pl, context.DeadlineExceeded, false},
	} {
		if got := tc.caller.Shed(tc.err); got != tc.want {
			t.Errorf("%s: Shed(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// refuser refuses every call after 30 ms with its own error.
type refuser struct{}

var errRefused = errors.New("refused")

func (refuser) Call(context.Context, func(context.Context) error) error {
	time.Sleep(30 * time.Millisecond)
	return errRefused
}
func (refuser) Limit() int           { return 0 }
func (refuser) Shed(err error) bool  { return err == errRefused }
func newRefuser(Env) (Caller, error) { return refuser{}, nil }

// Run asks the outermost layer whether each failed call was shed: with
// three layers of a contender that refuses everything, every call is shed
// and its p99 is the outermost layer's time.
func TestRunCountsShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := Scenario{Name: "T", Seed: 1, Duration: 2 * time.Second, Rate: []RatePoint{{0, 50}}, Layers: 3,
			Phases: []Phase{{Workers: 10, Service: LogNormal{Median: 10 * time.Millisecond, P99: 20 * time.Millisecond}}}}
		r, err := Run(sc, Contender{Name: "refuser", New: newRefuser})
		if err != nil {
			t.Fatal(err)
		}
		if r.Calls == 0 || r.Shed != r.Calls || r.Failed != r.Calls {
			t.Errorf("Calls, Failed, Shed = %d, %d, %d, want all equal and > 0", r.Calls, r.Failed, r.Shed)
		}
		if r.P99Shed != 30*time.Millisecond {
			t.Errorf("P99Shed = %v, want 30ms", r.P99Shed)
		}
	})
}

// A floodgate contender whose attempt timeout is longer than the breaker's
// default slow-call threshold (1 s) counts calls as slow from the attempt
// timeout: answers of 2 s that the 3 s timeout waits for (S11) do not trip
// its breaker. With the default threshold every call after the first 20
// or so would be refused.
func TestFloodgateSlowCallAtAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := Scenario{Name: "T", Seed: 1, Duration: 30 * time.Second, Rate: []RatePoint{{0, 5}},
			AttemptTimeout: 3 * time.Second, SLO: 3 * time.Second,
			Phases: []Phase{{Workers: 100, Service: LogNormal{Median: 2 * time.Second, P99: 2 * time.Second}}}}
		for _, c := range Contenders() {
			if c.Name != "oracle" {
				continue
			}
			r, err := Run(sc, c)
			if err != nil {
				t.Fatal(err)
			}
			if r.Calls < 100 || r.Failed != 0 {
				t.Errorf("%s: %d of %d calls failed, want none", c.Name, r.Failed, r.Calls)
			}
		}
	})
}
