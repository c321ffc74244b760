package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fixedService is a phase whose every request takes exactly d on one of
// workers workers.
func fixedService(workers int, d time.Duration) []Phase {
	return []Phase{{Workers: workers, Service: LogNormal{Median: d, P99: d}}}
}

// TestDownstreamQueue: with one worker, a second request waits for the
// first (latency = queueing + service).
func TestDownstreamQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDownstream(fixedService(1, 100*time.Millisecond))
		start := time.Now()
		done := make(chan time.Duration)
		for range 2 {
			go func() {
				_ = d.Serve(context.Background(), rand.New(rand.NewPCG(1, 2)))
				done <- time.Since(start)
			}()
		}
		a, b := <-done, <-done
		if a != 100*time.Millisecond || b != 200*time.Millisecond {
			t.Errorf("latencies %v, %v; want 100ms, 200ms", a, b)
		}
		if d.Peak() != 2 || d.Attempts() != 2 {
			t.Errorf("peak %d attempts %d; want 2, 2", d.Peak(), d.Attempts())
		}
	})
}

// TestDownstreamCancelWhileQueued: a request whose caller gives up while it
// waits leaves the queue at once, so it neither delays the next request
// nor counts as in flight.
func TestDownstreamCancelWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDownstream(fixedService(1, 100*time.Millisecond))
		start := time.Now()
		go func() { _ = d.Serve(context.Background(), rand.New(rand.NewPCG(1, 1))) }()
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := d.Serve(ctx, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued request: err %v, want deadline exceeded", err)
		}
		if n := d.InFlight(); n != 1 {
			t.Errorf("in flight after the queued caller gave up: %d, want 1", n)
		}
		_ = d.Serve(context.Background(), rand.New(rand.NewPCG(1, 3)))
		if el := time.Since(start); el != 200*time.Millisecond {
			t.Errorf("third request done at %v, want 200ms (the abandoned one took no worker)", el)
		}
	})
}

// TestDownstreamCancelInService: a request whose caller gives up while it
// is served keeps its worker busy until its service time ends.
func TestDownstreamCancelInService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDownstream(fixedService(1, 100*time.Millisecond))
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := d.Serve(ctx, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want deadline exceeded", err)
		}
		if n := d.InFlight(); n != 1 {
			t.Errorf("in flight after the caller gave up in service: %d, want 1", n)
		}
		_ = d.Serve(context.Background(), rand.New(rand.NewPCG(1, 2)))
		if el := time.Since(start); el != 200*time.Millisecond {
			t.Errorf("next request done at %v, want 200ms (behind the abandoned one)", el)
		}
	})
}

// TestDownstreamThrottle: a throttled answer comes after FastLatency with
// the phase's hint, and takes no worker.
func TestDownstreamThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ph := fixedService(1, time.Second)
		ph[0].Throttle, ph[0].RetryAfter = 1, 2*time.Second
		d := NewDownstream(ph)
		start := time.Now()
		err := d.Serve(context.Background(), rand.New(rand.NewPCG(1, 1)))
		var th *ThrottledError
		if !errors.As(err, &th) || th.RetryAfter != 2*time.Second || time.Since(start) != FastLatency {
			t.Errorf("err %v after %v; want a 429 with a 2s hint after %v", err, time.Since(start), FastLatency)
		}
	})
}

// TestLogNormal: the draws' median, 99th percentile and mean are those
// asked for (and Mean's), within 5% over 100,000 draws.
func TestLogNormal(t *testing.T) {
	d := LogNormal{Median: 50 * time.Millisecond, P99: 150 * time.Millisecond}
	r := rand.New(rand.NewPCG(1, 1))
	xs := make([]time.Duration, 100_000)
	var sum time.Duration
	for i := range xs {
		xs[i] = d.Draw(r)
		sum += xs[i]
	}
	mean := sum / time.Duration(len(xs))
	if diff := float64(mean-d.Mean()) / float64(d.Mean()); diff > 0.05 || diff < -0.05 {
		t.Errorf("mean = %v, want %v ± 5%%", mean, d.Mean())
	}
	slices.Sort(xs)
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, d.Median}, {0.99, d.P99}} {
		got := percentile(xs, c.q)
		if diff := float64(got-c.want) / float64(c.want); diff > 0.05 || diff < -0.05 {
			t.Errorf("p%v = %v, want %v ± 5%%", 100*c.q, got, c.want)
		}
	}
}

// TestRateAt: the arrival rate is interpolated between points and flat
// after the last.
func TestRateAt(t *testing.T) {
	pts := []RatePoint{{0, 400}, {60 * time.Second, 1600}}
	for _, c := range []struct {
		t    time.Duration
		want float64
	}{{0, 400}, {30 * time.Second, 1000}, {60 * time.Second, 1600}, {90 * time.Second, 1600}} {
		if got := RateAt(pts, c.t); got != c.want {
			t.Errorf("RateAt(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// TestDownstreamStall: in a phase of 0.5 s stalls, a request ends with the
// stall it started in (plus its service time), or with the next one when
// that stall slips; half of the first 1,000 stalls slip, for each Slips
// seed, and two seeds pick different stalls.
func TestDownstreamStall(t *testing.T) {
	const stall, svc = 500 * time.Millisecond, time.Millisecond
	for seed := range uint64(4) {
		slipped, same := 0, 0
		for k := range int64(1000) {
			if slips(k, seed) {
				slipped++
			}
			if slips(k, seed) == slips(k, seed+1) {
				same++
			}
		}
		if slipped < 450 || slipped > 550 || same < 400 || same > 600 {
			t.Errorf("seed %d: %d of 1000 stalls slip, %d agree with seed %d; want about half of each", seed, slipped, same, seed+1)
		}
	}
	for _, seed := range []uint64{0, 7} {
		testStallLatency(t, stall, svc, seed)
	}
}

// testStallLatency checks the latency of one request started 0.1 s into
// each of the first six stalls of a phase with Slips seed.
func testStallLatency(t *testing.T, stall, svc time.Duration, seed uint64) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		d := NewDownstream([]Phase{{Workers: 50, Service: LogNormal{Median: svc, P99: svc}, Stall: stall, Slips: seed}})
		got := make([]time.Duration, 6)
		var wg sync.WaitGroup
		for k := range got {
			wg.Go(func() {
				time.Sleep(time.Duration(k)*stall + 100*time.Millisecond) // 0.1 s into stall k
				began := time.Now()
				_ = d.Serve(context.Background(), rand.New(rand.NewPCG(1, uint64(k))))
				got[k] = time.Since(began)
			})
		}
		wg.Wait()
		for k, lat := range got {
			want := 400*time.Millisecond + svc
			if slips(int64(k), seed) {
				want += stall
			}
			if lat != want {
				t.Errorf("seed %d: request started 0.1 s into stall %d (slips: %v): latency %v, want %v", seed, k, slips(int64(k), seed), lat, want)
			}
		}
	})
}
