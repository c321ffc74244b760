package metrics_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/metrics"
	"github.com/floodgate-go/floodgate/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newGate(t testing.TB, c *metrics.Collector, name string, opts ...floodgate.Option) *floodgate.Gate {
	t.Helper()
	g, err := floodgate.New(name, append(opts, c.Observe())...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ok(context.Context) error { return nil }

var errDown = errors.New("downstream down")

// value returns the value of the series of family name whose labels include
// want (a histogram's sample count), and whether there was one.
func value(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := find(mfs, name, want)
	switch {
	case m == nil:
		return 0, false
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount()), true
	}
	return 0, false
}

// find returns the first series of family name whose labels include want,
// or nil.
func find(mfs []*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metric
				}
			}
			return m
		}
	}
	return nil
}

// The exposition follows Prometheus's naming conventions (promlint finds
// nothing) and pre-creates every enum series at 0, so that dashboards and
// alert rules have a series from the first scrape.
func TestLintAndSeriesFromFirstScrape(t *testing.T) {
	c := metrics.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	newGate(t, c, "quote")
	newGate(t, c, "stock")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"floodgate_limit", map[string]string{"gate": "quote"}, 20},
		{"floodgate_in_flight", map[string]string{"gate": "stock"}, 0},
		{"floodgate_in_flight_peak", map[string]string{"gate": "stock"}, 0},
		{"floodgate_rtt_min_seconds", map[string]string{"gate": "quote"}, 0},
		{"floodgate_rtt_recent_seconds", map[string]string{"gate": "quote"}, 0},
		{"floodgate_rtt_baseline_seconds", map[string]string{"gate": "quote"}, 0},
		{"floodgate_breaker_state", map[string]string{"gate": "quote", "state": "closed"}, 1},
		{"floodgate_breaker_state", map[string]string{"gate": "quote", "state": "half_open"}, 0},
		{"floodgate_breaker_state", map[string]string{"gate": "quote", "state": "open"}, 0},
		{"floodgate_retry_budget_tokens", map[string]string{"gate": "quote"}, 20},
		{"floodgate_calls_total", map[string]string{"gate": "quote", "outcome": "budget_exhausted"}, 0},
		{"floodgate_calls_total", map[string]string{"gate": "stock", "outcome": "canceled"}, 0},
		{"floodgate_attempts_total", map[string]string{"gate": "quote", "attempt": "retry"}, 0},
		{"floodgate_breaker_transitions_total", map[string]string{"gate": "quote", "from": "half_open", "to": "open"}, 0},
		{"floodgate_call_duration_seconds", map[string]string{"gate": "quote"}, 0},
		{"floodgate_attempt_duration_seconds", map[string]string{"gate": "stock"}, 0},
	} {
		got, found := value(t, reg, tc.name, tc.labels)
		if !found || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, found, tc.want)
		}
	}
	// Per gate: 7 gauges and 3 breaker_state series, 7 outcomes, 2 attempt
	// kinds, 4 transitions, 2 histograms; nothing else, however many calls.
	if n, want := testutil.CollectAndCount(c), 2*(7+3+7+2+4+2); n != want {
		t.Errorf("series: %d, want %d", n, want)
	}
}

// Each outcome lands in its own series, attempts are split first vs retry,
// and the histograms count attempts and the calls that reached the
// downstream (not the shed ones).
func TestCountsByOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := metrics.NewCollector()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		g := newGate(t, c, "quote",
			floodgate.WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1, MaxLimit: 1}),
			floodgate.WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
		ctx := context.Background()
		slow := func(ctx context.Context) error { time.Sleep(100 * time.Millisecond); return nil }

		// 10 successes of 100 ms: they close the limiter's first window.
		for range 10 {
			if err := g.Guard(ctx, slow); err != nil {
				t.Fatal(err)
			}
		}
		// 1 call failing transiently 3 times: 1 first attempt, 2 retries.
		if err := g.Guard(ctx, func(context.Context) error { return retry.Transient(errDown) }); !errors.Is(err, floodgate.ErrAttemptsExhausted) {
			t.Fatalf("got %v, want attempts exhausted", err)
		}
		// 1 permanent failure.
		_ = g.Guard(ctx, func(context.Context) error { return retry.Permanent(errDown) })
		// 1 shed: the only slot is held.
		hold, release := make(chan struct{}), make(chan struct{})
		go g.Guard(ctx, func(context.Context) error { close(hold); <-release; return nil })
		<-hold
		if err := g.Guard(ctx, ok); !errors.Is(err, floodgate.ErrShed) {
			t.Fatalf("got %v, want ErrShed", err)
		}
		if got, _ := value(t, reg, "floodgate_in_flight", map[string]string{"gate": "quote"}); got != 1 {
			t.Errorf("in flight = %v, want 1", got)
		}
		if got, _ := value(t, reg, "floodgate_in_flight_peak", nil); got != 1 {
			t.Errorf("peak = %v, want 1", got) // each value() is a scrape: a new period each time
		}
		close(release)
		synctest.Wait()
		// 1 cancelled by the caller during its attempt (a context cancelled
		// before the call is refused before it reaches an attempt).
		cctx, cancel := context.WithCancel(ctx)
		_ = g.Guard(cctx, func(ctx context.Context) error { cancel(); return ctx.Err() })

		for _, tc := range []struct {
			name   string
			labels map[string]string
			want   float64
		}{
			{"floodgate_calls_total", map[string]string{"outcome": "success"}, 11},
			{"floodgate_calls_total", map[string]string{"outcome": "failure"}, 2},
			{"floodgate_calls_total", map[string]string{"outcome": "shed"}, 1},
			{"floodgate_calls_total", map[string]string{"outcome": "canceled"}, 1},
			{"floodgate_calls_total", map[string]string{"outcome": "open"}, 0},
			{"floodgate_attempts_total", map[string]string{"attempt": "first"}, 14},
			{"floodgate_attempts_total", map[string]string{"attempt": "retry"}, 2},
			{"floodgate_attempt_duration_seconds", nil, 16},
			{"floodgate_call_duration_seconds", nil, 14}, // 15 calls but the shed one
			{"floodgate_in_flight_peak", nil, 0},         // a period with no call
			{"floodgate_rtt_recent_seconds", nil, 0.1},
			{"floodgate_rtt_min_seconds", nil, 0.1},
			{"floodgate_rtt_baseline_seconds", nil, 0}, // Fixed keeps none
			// full (20) until the retries spend 2; then 4 calls earn 0.1 each
			{"floodgate_retry_budget_tokens", nil, 18.4},
		} {
			got, found := value(t, reg, tc.name, tc.labels)
			if !found || got != tc.want {
				t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, found, tc.want)
			}
		}
	})
}

// A breaker that trips, probes and closes shows up as one state series at 1
// and as transition counts.
func TestBreakerStateAndTransitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := metrics.NewCollector()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		g := newGate(t, c, "quote",
			floodgate.WithBreaker(breaker.Config{MinCalls: 5, OpenFor: 5 * time.Second, Probes: 1}),
			floodgate.WithRetry(retry.Config{MaxAttempts: 1}))
		ctx := context.Background()
		fail := func(context.Context) error { time.Sleep(10 * time.Millisecond); return retry.Transient(errDown) }
		for range 5 {
			_ = g.Guard(ctx, fail)
		}
		if err := g.Guard(ctx, ok); !errors.Is(err, floodgate.ErrOpen) {
			t.Fatalf("got %v, want ErrOpen", err)
		}
		check := func(step string, want map[string]float64) {
			t.Helper()
			synctest.Wait() // transitions are counted on the breaker's own goroutine
			for k, v := range want {
				parts := strings.Split(k, ":")
				var got float64
				if len(parts) == 1 {
					got, _ = value(t, reg, "floodgate_breaker_state", map[string]string{"state": k})
				} else {
					got, _ = value(t, reg, "floodgate_breaker_transitions_total", map[string]string{"from": parts[0], "to": parts[1]})
				}
				if got != v {
					t.Errorf("%s: %s = %v, want %v", step, k, got, v)
				}
			}
		}
		check("after 5 failures", map[string]float64{"closed": 0, "open": 1, "half_open": 0, "closed:open": 1})
		if got, _ := value(t, reg, "floodgate_calls_total", map[string]string{"outcome": "open"}); got != 1 {
			t.Errorf("calls refused by the open breaker = %v, want 1", got)
		}
		time.Sleep(5*time.Second + time.Millisecond)
		if err := g.Guard(ctx, ok); err != nil { // the probe
			t.Fatal(err)
		}
		check("after a good probe", map[string]float64{"closed": 1, "open": 0, "half_open": 0,
			"closed:open": 1, "open:half_open": 1, "half_open:closed": 1, "half_open:open": 0})
	})
}

// Gates are told apart by name; a name exported twice, or one Observe()
// option given to two gates, fails New instead of corrupting the series.
func TestGateNames(t *testing.T) {
	c := metrics.NewCollector()
	newGate(t, c, "quote")
	if _, err := floodgate.New("quote", c.Observe()); err == nil || !strings.Contains(err.Error(), `already exports a gate named "quote"`) {
		t.Errorf("second gate named quote: got %v", err)
	}
	opt := c.Observe()
	if _, err := floodgate.New("a", opt); err != nil {
		t.Fatal(err)
	}
	if _, err := floodgate.New("b", opt); err == nil || !strings.Contains(err.Error(), "once per gate") {
		t.Errorf("reused option: got %v", err)
	}
	if !c.Remove("quote") || c.Remove("quote") {
		t.Error("Remove: want true, then false")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, found := value(t, reg, "floodgate_calls_total", map[string]string{"gate": "quote"}); found {
		t.Error("removed gate still exported")
	}
	newGate(t, c, "quote") // the name is free again
	if got, found := value(t, reg, "floodgate_limit", map[string]string{"gate": "quote"}); !found || got != 20 {
		t.Errorf("re-added gate: limit %v, found %v", got, found)
	}
}

// Scrapes run concurrently with calls (the race detector checks the
// collector reads only atomics and its own lock), and the peak in-flight of
// a period is what 8 concurrent holders reached.
func TestScrapeDuringCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := metrics.NewCollector()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		g := newGate(t, c, "quote")
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				// 1 ms apart, so that no two Releases share an instant (one
				// racing the window's close could land its RTT and its count
				// in different windows) and the baseline below is exact
				time.Sleep(time.Duration(i) * time.Millisecond)
				_ = g.Guard(context.Background(), func(context.Context) error { time.Sleep(time.Second); return nil })
			})
		}
		time.Sleep(8 * time.Millisecond) // all 8 started
		synctest.Wait()
		if got, _ := value(t, reg, "floodgate_in_flight_peak", nil); got != 8 {
			t.Errorf("peak = %v, want 8", got)
		}
		if got, _ := value(t, reg, "floodgate_in_flight_peak", nil); got != 8 {
			t.Errorf("peak of the next period, 8 still in flight = %v, want 8", got)
		}
		wg.Wait()
		if got, _ := value(t, reg, "floodgate_rtt_baseline_seconds", nil); got != 1 {
			t.Errorf("Gradient's base after 1 s calls = %v s, want 1", got) // the window closed at its 1 s WindowMax
		}
		if got, _ := value(t, reg, "floodgate_in_flight_peak", nil); got != 0 {
			t.Errorf("peak, all returned before the baseline scrape = %v, want 0", got)
		}
		if got, _ := value(t, reg, "floodgate_in_flight_peak", nil); got != 0 {
			t.Errorf("peak of an idle period = %v, want 0", got)
		}
	})
}
