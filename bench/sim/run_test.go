package sim

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Covering finds the pause around t, including its first instant and not
// its end.
func TestPauseCovering(t *testing.T) {
	p := Pause{From: 10 * sec, Every: 2 * sec, For: 30 * time.Millisecond}
	for _, tc := range []struct {
		t          time.Duration
		start, end time.Duration
		ok         bool
	}{
		{9 * sec, 0, 0, false},
		{10 * sec, 10 * sec, 10*sec + 30*time.Millisecond, true},
		{10*sec + 29*time.Millisecond, 10 * sec, 10*sec + 30*time.Millisecond, true},
		{10*sec + 30*time.Millisecond, 0, 0, false},
		{13 * sec, 0, 0, false},
		{14*sec + time.Millisecond, 14 * sec, 14*sec + 30*time.Millisecond, true},
	} {
		start, end, ok := p.Covering(tc.t)
		if start != tc.start || end != tc.end || ok != tc.ok {
			t.Errorf("Covering(%v) = %v, %v, %v; want %v, %v, %v", tc.t, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
	if _, _, ok := (Pause{}).Covering(5 * sec); ok {
		t.Error("the zero Pause covers 5 s, want no pauses")
	}
}

// recorder passes every call through once, and records when each call
// reached it and when its attempt returned (since start), and how many
// calls it got.
type recorder struct {
	start time.Time
	env   Env
	mu    sync.Mutex
	in    []time.Duration // calls reaching the contender
	out   []time.Duration // attempts returning to it
	rtt   []time.Duration
}

func (r *recorder) Call(ctx context.Context, attempt func(context.Context) error) error {
	in := time.Since(r.start)
	err := attempt(ctx)
	out := time.Since(r.start)
	r.mu.Lock()
	r.in, r.out, r.rtt = append(r.in, in), append(r.out, out), append(r.rtt, out-in)
	r.mu.Unlock()
	return err
}
func (r *recorder) Limit() int      { return 3 }
func (r *recorder) Shed(error) bool { return false }

// recorders returns a Contender whose every gate is a recorder, and the
// recorders it built.
func recorders() (Contender, *[]*recorder) {
	var rs []*recorder
	return Contender{Name: "recorder", New: func(e Env) (Caller, error) {
		r := &recorder{start: time.Now(), env: e}
		rs = append(rs, r)
		return r, nil
	}}, &rs
}

// During a pause of the client no call reaches the contender and no attempt
// returns to it; an answer that lands in a pause is seen at its end, so
// its RTT includes the pause; and calls that arrived in it reach the
// contender 1 µs apart after it, in the order they arrived.
func TestRunPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Pause{From: sec, Every: sec, For: 300 * time.Millisecond}
		sc := Scenario{Name: "T", Seed: 1, Duration: 4 * sec, Rate: []RatePoint{{0, 200}}, Pause: p,
			Phases: fixedService(100, 50*time.Millisecond)}
		c, rs := recorders()
		r, err := Run(sc, c)
		if err != nil {
			t.Fatal(err)
		}
		rec := (*rs)[0]
		var burst []time.Duration // reaching the contender within 1 ms of a pause's end
		for i, in := range rec.in {
			if _, _, ok := p.Covering(in); ok {
				t.Fatalf("a call reached the contender at %v, in a pause", in)
			}
			if _, _, ok := p.Covering(rec.out[i]); ok {
				t.Fatalf("an attempt returned at %v, in a pause", rec.out[i])
			}
			if in >= 2*sec+300*time.Millisecond && in < 2*sec+301*time.Millisecond {
				burst = append(burst, in)
			}
		}
		// 200 calls/s for 300 ms: about 60 in the burst, 1 µs apart.
		if len(burst) < 30 {
			t.Fatalf("%d calls reached the contender in the 1 ms after the pause, want about 60", len(burst))
		}
		seen := map[time.Duration]bool{}
		for _, in := range burst {
			if seen[in] || (in-(2*sec+300*time.Millisecond))%time.Microsecond != 0 {
				t.Errorf("burst times %v: want distinct whole µs after the pause's end", burst)
				break
			}
			seen[in] = true
		}
		// An attempt sent less than 50 ms before a pause is answered in it:
		// its RTT is at least the rest of the pause.
		long := 0
		for _, rtt := range rec.rtt {
			if rtt > 250*time.Millisecond {
				long++
			}
		}
		if long == 0 {
			t.Error("no RTT over 250 ms, want those answered in a pause to include it")
		}
		if r.Failed != 0 || r.P99 < 250*time.Millisecond {
			t.Errorf("Failed %d, P99 %v; want 0, and the pauses in the latencies (≥ 250ms)", r.Failed, r.P99)
		}
	})
}

// A fleet: arrival n goes to gate n mod Gates, each gate is its own
// Caller, the sampled limit is the sum of the gates', and each gate's
// Env gives its share of the capacity, rounded to the nearest.
func TestRunFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := Scenario{Name: "T", Seed: 1, Duration: 3 * sec, Rate: []RatePoint{{0, 100}}, Gates: 4,
			Phases: fixedService(10, 10*time.Millisecond)}
		c, rs := recorders()
		r, err := Run(sc, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(*rs) != 4 {
			t.Fatalf("%d gates built, want 4", len(*rs))
		}
		for _, g := range *rs {
			if n := len(g.in); n < r.Calls/4 || n > r.Calls/4+1 {
				t.Errorf("a gate got %d of %d calls, want a quarter", n, r.Calls)
			}
			if got := g.env.Capacity(); got != 3 { // 10 workers / 4 = 2.5
				t.Errorf("Env.Capacity() = %d, want 3", got)
			}
			if g.env.Gates != 4 || g.env.AttemptTimeout != DefaultAttemptTimeout {
				t.Errorf("Env.Gates, AttemptTimeout = %d, %v; want 4, %v", g.env.Gates, g.env.AttemptTimeout, DefaultAttemptTimeout)
			}
		}
		for _, s := range r.Samples {
			if s.Limit != 12 {
				t.Fatalf("sampled limit %d at %v, want 12 (4 gates × 3)", s.Limit, s.T)
			}
		}
	})
}

// A scenario's attempt timeout reaches the contenders, its call deadline
// ends the call, and its SLO decides what is good: every call here takes
// 1.5 s, past the 1 s defaults.
func TestRunScenarioTimes(t *testing.T) {
	for _, tc := range []struct {
		name               string
		timeout, deadline  time.Duration
		slo                time.Duration
		wantGood, wantFail bool
	}{
		{"defaults: the 1 s SLO", 0, 0, 0, false, false},
		{"2 s SLO", 0, 0, 2 * sec, true, false},
		{"1 s deadline", 0, sec, 2 * sec, false, true},
	} {
		synctest.Test(t, func(t *testing.T) {
			sc := Scenario{Name: "T", Seed: 1, Duration: 2 * sec, Rate: []RatePoint{{0, 10}},
				AttemptTimeout: tc.timeout, CallDeadline: tc.deadline, SLO: tc.slo,
				Phases: fixedService(100, 1500*time.Millisecond)}
			c, rs := recorders()
			r, err := Run(sc, c)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := (*rs)[0].env.AttemptTimeout, orDefault(tc.timeout, DefaultAttemptTimeout); got != want {
				t.Errorf("%s: Env.AttemptTimeout = %v, want %v", tc.name, got, want)
			}
			if good := r.Goodput > 0; good != tc.wantGood {
				t.Errorf("%s: goodput %.1f calls/s, want good calls: %v", tc.name, r.Goodput, tc.wantGood)
			}
			if fail := r.Failed == r.Calls; fail != tc.wantFail {
				t.Errorf("%s: %d of %d calls failed, want all failed: %v", tc.name, r.Failed, r.Calls, tc.wantFail)
			}
		})
	}
}
