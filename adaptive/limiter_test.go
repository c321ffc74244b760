package adaptive

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustNew(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func algorithms(t *testing.T) map[string]func() Algorithm {
	return map[string]func() Algorithm{
		"Gradient": func() Algorithm { a, _ := NewGradient(GradientConfig{}); return a },
		"AIMD":     func() Algorithm { a, _ := NewAIMD(AIMDConfig{}); return a },
		"Vegas":    func() Algorithm { a, _ := NewVegas(VegasConfig{}); return a },
		"Gradient2": func() Algorithm {
			a, _ := NewGradient2(Gradient2Config{})
			return a
		},
	}
}

// Scenario 1: a fixed limit is never exceeded, even when many goroutines
// race for the last slot, and a call over the limit is shed without waiting.
func TestFixedLimitNeverExceeded(t *testing.T) {
	for _, tc := range []struct {
		limit, callers int
		hold           time.Duration
	}{
		{limit: 10, callers: 64, hold: 50 * time.Millisecond},
		{limit: 1, callers: 64, hold: 50 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			l := mustNew(t, Config{Algorithm: Fixed{}, InitialLimit: tc.limit})
			var inside, peak, admitted, shed atomic.Int64
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range tc.callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					t0 := time.Now()
					if !l.Acquire() {
						if waited := time.Since(t0); waited != 0 {
							t.Errorf("shed after %v; want at once", waited)
						}
						shed.Add(1)
						return
					}
					admitted.Add(1)
					n := inside.Add(1)
					for {
						p := peak.Load()
						if n <= p || peak.CompareAndSwap(p, n) {
							break
						}
					}
					time.Sleep(tc.hold)
					inside.Add(-1)
					l.Release(t0, time.Since(t0), Success)
				}()
			}
			close(start)
			wg.Wait()
			if got := peak.Load(); got > int64(tc.limit) {
				t.Errorf("peak in-flight %d > limit %d", got, tc.limit)
			}
			if got := admitted.Load(); got != int64(tc.limit) {
				t.Errorf("admitted %d, want %d (all start at once and hold %v)", got, tc.limit, tc.hold)
			}
			if got := shed.Load(); got != int64(tc.callers-tc.limit) {
				t.Errorf("shed %d, want %d", got, tc.callers-tc.limit)
			}
			if l.InFlight() != 0 {
				t.Errorf("in-flight %d after all released", l.InFlight())
			}
		})
	}
}

// Scenario 2: when every call is dropped (timeouts) for 5 s, the limit falls
// window after window to its minimum. AIMD and Vegas fall more slowly (by
// ×0.9 and by log10(limit) per window); Gradient2 ignores drops (its known
// weakness), so it is pinned as unchanged.
func TestAllDropsLowerLimitToMinimum(t *testing.T) {
	const (
		toMin     = "falls every window to the minimum"
		lower     = "falls every window"
		unchanged = "unchanged"
	)
	for _, tc := range []struct {
		alg     string
		rate    int
		rtt     time.Duration // every call times out at timeout
		timeout time.Duration
		dur     time.Duration
		initial int
		min     int
		want    string
	}{
		{"Gradient", 100, 2 * time.Second, 100 * time.Millisecond, 5 * time.Second, 20, 1, toMin},
		{"AIMD", 100, 2 * time.Second, 100 * time.Millisecond, 5 * time.Second, 20, 1, lower},
		{"Vegas", 100, 2 * time.Second, 100 * time.Millisecond, 5 * time.Second, 20, 1, lower},
		{"Gradient2", 100, 2 * time.Second, 100 * time.Millisecond, 5 * time.Second, 20, 1, unchanged},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{Algorithm: algorithms(t)[tc.alg]()}
				l := mustNew(t, Config{Algorithm: rec, InitialLimit: tc.initial, MinLimit: tc.min})
				runOpenLoop(l, tc.rate, tc.timeout, []phase{{dur: tc.dur, rtt: tc.rtt}})
				if len(rec.limits) < 3 {
					t.Fatalf("only %d windows closed in %v of drops; want windows to close without successes", len(rec.limits), tc.dur)
				}
				falling := true
				prev := tc.initial
				for _, lim := range rec.limits {
					if lim >= prev && prev > tc.min {
						falling = false
					}
					prev = max(lim, tc.min)
				}
				t.Logf("limits per window: %v", rec.limits)
				switch tc.want {
				case toMin:
					if !falling || prev != tc.min {
						t.Errorf("limits per window %v: want strictly falling to %d", rec.limits, tc.min)
					}
				case lower:
					if !falling || prev >= tc.initial {
						t.Errorf("limits per window %v: want strictly falling", rec.limits)
					}
				case unchanged:
					if l.Limit() != tc.initial {
						t.Errorf("limit %d, want unchanged %d", l.Limit(), tc.initial)
					}
				}
			})
		})
	}
}

// Scenario 3: after 300 calls at 10 ms RTT, every call is dropped with a
// 1 ms RTT (a downstream failing fast with 503): the limit falls. Gradient2
// is pinned as not falling: fast drops are invisible to it.
func TestFastDropsLowerLimit(t *testing.T) {
	for _, tc := range []struct {
		alg              string
		workers, okCalls int
		okRTT, dropRTT   time.Duration
		dropFor          time.Duration // drops go on this long, back to back
		wantFall         bool
	}{
		{"Gradient", 10, 300, 10 * time.Millisecond, time.Millisecond, time.Second, true},
		{"AIMD", 10, 300, 10 * time.Millisecond, time.Millisecond, time.Second, true},
		{"Vegas", 10, 300, 10 * time.Millisecond, time.Millisecond, time.Second, true},
		{"Gradient2", 10, 300, 10 * time.Millisecond, time.Millisecond, time.Second, false},
	} {
		t.Run(tc.alg, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, Config{Algorithm: algorithms(t)[tc.alg]()})
				// closedLoop runs calls back to back on tc.workers workers until
				// calls have been made or until is reached.
				closedLoop := func(calls int, until time.Duration, rtt time.Duration, o Outcome) {
					var wg sync.WaitGroup
					var left atomic.Int64
					left.Store(int64(calls))
					t0 := time.Now()
					for i := range tc.workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							// Staggered so that no two Releases share an
							// instant: one racing a window's close could land
							// its RTT in one window and its count in the next
							// (window.drain), and the means below are exact.
							time.Sleep(time.Duration(i) * rtt / time.Duration(2*tc.workers))
							for left.Add(-1) >= 0 && time.Since(t0) < until {
								if !l.Acquire() {
									time.Sleep(rtt)
									continue
								}
								s := time.Now()
								time.Sleep(rtt)
								l.Release(s, time.Since(s), o)
							}
						}()
					}
					wg.Wait()
				}
				closedLoop(tc.okCalls, time.Hour, tc.okRTT, Success)
				if l.RecentRTT() != tc.okRTT || l.MinRTT() != tc.okRTT {
					t.Errorf("RecentRTT %v, MinRTT %v after calls of %v", l.RecentRTT(), l.MinRTT(), tc.okRTT)
				}
				wantBase := tc.okRTT // AIMD keeps no baseline
				if tc.alg == "AIMD" {
					wantBase = 0
				}
				if got := l.BaselineRTT(); got != wantBase {
					t.Errorf("BaselineRTT %v after calls of %v, want %v", got, tc.okRTT, wantBase)
				}
				before := l.Limit()
				closedLoop(1<<30, tc.dropFor, tc.dropRTT, Drop)
				after := l.Limit()
				t.Logf("limit %d after successes, %d after drops", before, after)
				if fell := after < before; fell != tc.wantFall {
					t.Errorf("limit went %d -> %d; want fall=%v", before, after, tc.wantFall)
				}
			})
		})
	}
}

// A 20× slowdown (100 ms → 2 s for 5 min at 100 calls/s, unlimited
// capacity) and back. When every attempt times out (1 s), the limit falls
// to the minimum within 10 s and stays there while it lasts (a timed-out
// call held its slot for nothing); when every call still succeeds (no
// timeout), the slowdown is the downstream's new normal, not a queue of
// ours: the cut that suspects a queue is an experiment that costs a few
// RTTs (measured: the last call shed 14.08 s after the onset), and from 10
// RTTs (20 s) after the onset nothing is shed (the Hybrid this replaced
// held the limit down for the whole 5 min). After the heal, nothing is
// shed from 1.5 s on: at limit 1, a call let in just before the heal holds
// the only slot until its 1 s timeout, and a window of 250 ms follows
// (measured: 0.87 s in a 60 s slowdown).
func TestSustainedSlowdownThenRecovery(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		served  bool // the slowdown is served (no timeout) rather than cut
	}{
		{"every call times out", time.Second, false},
		{"every call succeeds after 2 s", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const (
					warmup, slowFor, recoverFor = 30 * time.Second, 5 * time.Minute, 80 * time.Second
				)
				l := mustNew(t, Config{Algorithm: algorithms(t)["Gradient"]()})
				arr := runOpenLoop(l, 100, tc.timeout, []phase{
					{dur: warmup, rtt: 100 * time.Millisecond},
					{dur: slowFor, rtt: 2 * time.Second},
					{dur: recoverFor, rtt: 100 * time.Millisecond},
				})
				healed := warmup + slowFor
				reachedMin := time.Duration(-1)
				var shedSlow, shedAfter int
				lastShed := time.Duration(-1)
				for _, a := range arr {
					switch {
					case a.at < warmup:
					case a.at < healed:
						if reachedMin < 0 && a.limit == 1 {
							reachedMin = a.at - warmup
						}
						if !tc.served && reachedMin >= 0 && a.at-warmup > 10*time.Second && a.limit != 1 {
							t.Fatalf("at %v into the slowdown the limit is %d; want it held at 1", a.at-warmup, a.limit)
						}
						if a.shed {
							lastShed = a.at - warmup
						}
						if tc.served && a.shed && a.at-warmup > 20*time.Second {
							shedSlow++
						}
					case a.at-healed > 1500*time.Millisecond && a.shed:
						shedAfter++
					}
				}
				t.Logf("%d arrivals; limit at 1 %v after onset; last shed %v after onset; %d shed from 20 s into the slowdown, %d from 1.5 s after the heal; final limit %d",
					len(arr), reachedMin, lastShed, shedSlow, shedAfter, l.Limit())
				if !tc.served && (reachedMin < 0 || reachedMin > 10*time.Second) {
					t.Errorf("limit reached 1 after %v; want within 10s", reachedMin)
				}
				if shedSlow > 0 {
					t.Errorf("%d calls shed from 20 s into a slowdown that every call survives; want 0", shedSlow)
				}
				if shedAfter > 0 {
					t.Errorf("%d calls shed from 1.5 s after the heal; want 0", shedAfter)
				}
			})
		})
	}
}

// wrapped is a user's Algorithm around a Gradient.
type wrapped struct{ *Gradient }

// A stateful Algorithm runs in one Limiter: its Update is not safe for
// concurrent use (two limiters would race on it) and it would mix two
// downstreams' RTTs. New refuses the second Limiter, also when both are
// built at once; a stateless one (AIMD, Fixed) may be shared.
func TestAlgorithmRunsInOneLimiter(t *testing.T) {
	h, _ := NewGradient(GradientConfig{})
	g, _ := NewGradient2(Gradient2Config{})
	v, _ := NewVegas(VegasConfig{})
	a, _ := NewAIMD(AIMDConfig{})
	const n = 8
	for _, tc := range []struct {
		alg  Algorithm
		want int // limiters built of n
	}{{h, 1}, {g, 1}, {v, 1}, {a, n}, {Fixed{}, n}, {wrapped{h}, 0 /* h is claimed above */}} {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			oks  int
			errs []error
		)
		start := make(chan struct{}) // all n call New at once
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := New(Config{Algorithm: tc.alg})
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					oks++
				} else {
					errs = append(errs, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if oks != tc.want {
			t.Errorf("%T: %d of %d limiters built, want %d (errors: %v)", tc.alg, oks, n, tc.want, errs)
		}
		for _, err := range errs {
			if !strings.Contains(err.Error(), "Config.Algorithm") || !strings.Contains(err.Error(), "already run by another Limiter") {
				t.Errorf("%T: error %q does not name Config.Algorithm and the reason", tc.alg, err)
			}
		}
	}
	// An invalid Config does not claim the Algorithm.
	h2, _ := NewGradient(GradientConfig{})
	if _, err := New(Config{Algorithm: h2, MinLimit: -1}); err == nil {
		t.Fatal("New with MinLimit -1 succeeded")
	}
	if _, err := New(Config{Algorithm: h2}); err != nil {
		t.Errorf("New after a failed New: %v, want the Algorithm still free", err)
	}
}

func TestConfigErrors(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"MinLimit", func() error { _, err := New(Config{MinLimit: -1}); return err }, "MinLimit must be in [1, 1048576], got -1"},
		{"MaxLimit", func() error { _, err := New(Config{MinLimit: 10, MaxLimit: 5}); return err }, "MaxLimit must be in [MinLimit=10, 1048576], got 5"},
		{"InitialLimit", func() error { _, err := New(Config{InitialLimit: 5000}); return err }, "InitialLimit must be in [MinLimit=1, MaxLimit=1000], got 5000"},
		{"WindowMin", func() error { _, err := New(Config{WindowMin: 2 * time.Minute}); return err }, "WindowMin must be in [1ms, 1m], got 2m0s"},
		{"WindowMax", func() error { _, err := New(Config{WindowMin: time.Second, WindowMax: time.Millisecond}); return err }, "WindowMax must be in [WindowMin=1s, 1m], got 1ms"},
		{"MinSamples", func() error { _, err := New(Config{MinSamples: -3}); return err }, "MinSamples must be in [1, 1000000], got -3"},
		{"Gradient Tolerance NaN", func() error { _, err := NewGradient(GradientConfig{Tolerance: nan}); return err }, "Gradient Tolerance must be in [1.05, 10]"},
		{"Gradient NoiseFloor", func() error { _, err := NewGradient(GradientConfig{NoiseFloor: -1}); return err }, "Gradient NoiseFloor must be in [0, 1s], got -1ns"},
		{"Gradient TimeoutTolerance", func() error { _, err := NewGradient(GradientConfig{TimeoutTolerance: 0.6}); return err }, "Gradient TimeoutTolerance must be in [0, 0.5] (negative: 0), got 0.6"},
		{"AIMD BackoffRatio", func() error { _, err := NewAIMD(AIMDConfig{BackoffRatio: 0.2}); return err }, "AIMD BackoffRatio must be in [0.5, 1), got 0.2"},
		{"AIMD Timeout", func() error { _, err := NewAIMD(AIMDConfig{Timeout: -1}); return err }, "AIMD Timeout must be in [1ms, 1h], got -1ns"},
		{"Gradient2 Smoothing", func() error { _, err := NewGradient2(Gradient2Config{Smoothing: 2}); return err }, "Gradient2 Smoothing must be in (0, 1], got 2"},
		{"Vegas Smoothing", func() error { _, err := NewVegas(VegasConfig{Smoothing: -1}); return err }, "Vegas Smoothing must be in (0, 1], got -1"},
		{"Vegas ProbeMultiplier", func() error { _, err := NewVegas(VegasConfig{ProbeMultiplier: -1}); return err }, "Vegas ProbeMultiplier must be in [1, 1000000], got -1"},
		{"Gradient2 QueueSize", func() error { _, err := NewGradient2(Gradient2Config{QueueSize: -1}); return err }, "Gradient2 QueueSize must be in [1, 1000], got -1"},
		{"nil *Gradient", func() error { var h *Gradient; _, err := New(Config{Algorithm: h}); return err }, "Config.Algorithm is a nil *adaptive.Gradient"},
		{"nil *AIMD", func() error { var a *AIMD; _, err := New(Config{Algorithm: a}); return err }, "Config.Algorithm is a nil *adaptive.AIMD"},
		{"a user's type around a nil *Gradient", func() error { _, err := New(Config{Algorithm: wrapped{}}); return err }, "Config.Algorithm (adaptive.wrapped) holds a nil"},
	} {
		if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want error containing %q", tc.name, err, tc.want)
		}
	}
}

// stepOnce is a Fixed algorithm that moves the limit by `by` at its first
// window and records every window.
type stepOnce struct {
	Fixed
	by int
	ws []Window
}

func (g *stepOnce) Update(limit int, w Window) int {
	g.ws = append(g.ws, w)
	if len(g.ws) == 1 {
		return limit + g.by
	}
	return limit
}

// Released and ReleasedRTT count every outcome, Ignore included, per
// window; BackSinceGrowth counts the calls started since the last window
// that raised the limit, across windows, and restarts at each such window.
func TestWindowCountsWhatCameBack(t *testing.T) {
	alg := &stepOnce{by: 1}
	l := mustNew(t, Config{Algorithm: alg, MinSamples: 2, WindowMin: time.Second, WindowMax: time.Minute})
	const ms = time.Millisecond
	at := func(d time.Duration) time.Time { return l.base.Add(d) }
	for _, c := range []struct {
		start, rtt time.Duration
		o          Outcome
	}{
		// window 1, closed at 1.1 s, which raises the limit
		{0, 100 * ms, Ignore}, {0, 200 * ms, Success}, {0, 1100 * ms, Drop},
		// window 2, closed at 2.2 s: started at 0.5 s (before the growth),
		// 1.2 s and 1.5 s
		{500 * ms, time.Second, Success}, {1200 * ms, 300 * ms, Ignore}, {1500 * ms, 700 * ms, Success},
		// window 3, closed at 3.3 s: started at 2.0 s and 0.2 s
		{2000 * ms, 1200 * ms, Success}, {200 * ms, 3100 * ms, Success},
	} {
		if !l.Acquire() {
			t.Fatal("refused")
		}
		l.Release(at(c.start), c.rtt, c.o)
	}
	type got struct {
		released, back int
		rtt            time.Duration
	}
	want := []got{{3, 3, 1400 * ms}, {3, 2, 2000 * ms}, {2, 3, 4300 * ms}}
	if len(alg.ws) != len(want) {
		t.Fatalf("%d windows; want %d", len(alg.ws), len(want))
	}
	for i, w := range alg.ws {
		if g := (got{w.Released, w.BackSinceGrowth, w.ReleasedRTT}); g != want[i] {
			t.Errorf("window %d: Released %d, BackSinceGrowth %d, ReleasedRTT %v; want %d, %d, %v",
				i+1, g.released, g.back, g.rtt, want[i].released, want[i].back, want[i].rtt)
		}
	}
}

// CutDrained says when every call in flight at the last window close that
// lowered the limit has been released, whatever its outcome: true before
// any cut, false while one of those calls is out, true again once the
// last is back. Calls started after the cut do not count, nor does a call
// released with a zero start (no sample), wherever it started.
func TestWindowCutDrained(t *testing.T) {
	alg := &stepOnce{by: -1}
	l := mustNew(t, Config{Algorithm: alg, MinSamples: 2, WindowMin: time.Second, WindowMax: time.Minute})
	const ms = time.Millisecond
	at := func(d time.Duration) time.Time { return l.base.Add(d) }
	release := func(start, rtt time.Duration, o Outcome) {
		t.Helper()
		if !l.Acquire() {
			t.Fatal("refused")
		}
		l.Release(at(start), rtt, o)
	}
	for range 3 { // three calls in flight at the cut, started at 0, 0 and 0.1 s
		if !l.Acquire() {
			t.Fatal("refused")
		}
	}
	// window 1, closed at 1.1 s: the cut, with three calls in flight
	release(0, 200*ms, Success)
	release(0, 1100*ms, Success)
	// window 2, closed at 2.2 s: one of the three back (an Ignore), and two
	// calls started after the cut
	l.Release(at(0), 1500*ms, Ignore)
	release(1150*ms, 1000*ms, Success)
	release(1200*ms, 1000*ms, Success)
	// window 3, closed at 3.3 s: one more back, a call admitted after the
	// cut released with a zero start, and two started after the cut
	l.Release(at(0), 3*time.Second, Success)
	if !l.Acquire() {
		t.Fatal("refused")
	}
	l.Release(time.Time{}, time.Second, Success)
	release(2300*ms, 1000*ms, Success)
	release(2400*ms, 900*ms, Success)
	// window 4, closed at 4.4 s: the last one back
	l.Release(at(100*ms), 4300*ms, Drop)
	release(4000*ms, 400*ms, Success)
	want := []bool{true, false, false, true}
	if len(alg.ws) != len(want) {
		t.Fatalf("%d windows; want %d", len(alg.ws), len(want))
	}
	for i, w := range alg.ws {
		if w.CutDrained != want[i] {
			t.Errorf("window %d: CutDrained %v; want %v", i+1, w.CutDrained, want[i])
		}
	}
}
