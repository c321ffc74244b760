package sim

import (
	"testing"
	"time"
)

const sec = time.Second

// series returns one sample every 100 ms from 0 with the given in-flight
// counts (calls) and capacity (workers).
func series(inFlight []int, capacity int) []Sample {
	out := make([]Sample, len(inFlight))
	for i, f := range inFlight {
		out[i] = Sample{T: time.Duration(i) * SampleEvery, InFlight: f, Capacity: capacity}
	}
	return out
}

// The time from the onset until the downstream is back at or under its
// worker count, as the tables print it ("onset → under capacity").
func TestUnderCapacity(t *testing.T) {
	for _, tc := range []struct {
		name       string
		inFlight   []int // every 100 ms from 0
		onset, end time.Duration
		want       time.Duration
	}{
		{"never over", []int{5, 10, 10, 9}, 100 * time.Millisecond, 400 * time.Millisecond, 0},
		{"at capacity is not over", []int{10, 10, 10, 10}, 0, 400 * time.Millisecond, 0},
		{"over, then under for good", []int{5, 12, 15, 11, 9, 8, 7}, 100 * time.Millisecond, 700 * time.Millisecond, 300 * time.Millisecond},
		{"over again later counts", []int{5, 12, 9, 8, 11, 9, 7}, 100 * time.Millisecond, 700 * time.Millisecond, 400 * time.Millisecond},
		{"still over at the end", []int{5, 12, 15, 11, 9, 8, 17}, 100 * time.Millisecond, 600 * time.Millisecond, Never},
		{"over before the onset is not counted", []int{50, 50, 9, 9}, 200 * time.Millisecond, 400 * time.Millisecond, 0},
		{"over at the onset's own sample counts", []int{5, 5, 12, 9}, 200 * time.Millisecond, 400 * time.Millisecond, 100 * time.Millisecond},
		{"over until the last sample period, which ends at the end", []int{5, 12, 12, 12}, 100 * time.Millisecond, 400 * time.Millisecond, 300 * time.Millisecond},
	} {
		if got := underCapacity(series(tc.inFlight, 10), tc.onset, tc.end); got != tc.want {
			t.Errorf("%s: underCapacity = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The time from the onset until every later limit sample is within ±20% of
// the worker count (S6's "limit settled ±20%").
func TestLimitSettled(t *testing.T) {
	mk := func(limits ...int) []Sample {
		out := make([]Sample, len(limits))
		for i, l := range limits {
			out[i] = Sample{T: time.Duration(i) * sec, Limit: l, Capacity: 20}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []Sample // one a second from 0, capacity 20; onset 1 s
		end     time.Duration
		want    time.Duration
	}{
		{"in band from the onset", mk(40, 20, 24, 16, 20), 5 * sec, 0},
		{"settles at 3 s", mk(40, 40, 30, 25, 24, 20, 19), 7 * sec, 3 * sec}, // 24 is the band's edge
		{"leaves the band at the end", mk(40, 20, 20, 20, 30), 5 * sec, Never},
		{"never in band", mk(40, 40, 40), 3 * sec, Never},
		{"a sample at the end is not counted", mk(40, 20, 20, 40), 3 * sec, 0},
	} {
		if got := limitSettled(tc.samples, sec, tc.end); got != tc.want {
			t.Errorf("%s: limitSettled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Recovery is the start of the first of three one-second bins in a row,
// from the recovery on, each with at least 95% of its calls good.
func TestRecovered(t *testing.T) {
	mk := func(good ...int) []Bin {
		out := make([]Bin, len(good))
		for i, g := range good {
			out[i] = Bin{T: time.Duration(i) * sec, Offered: 100, Good: g}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		bins []Bin // 100 offered a second
		want time.Duration
	}{
		{"at once", mk(0, 0, 95, 100, 99, 100), 0},
		{"a bad second restarts the run", mk(0, 0, 100, 94, 100, 100, 100), 2 * sec},
		{"the first second after recovery is partial", mk(0, 0, 40, 100, 100, 100), sec},
		{"not three good seconds before the end", mk(0, 0, 0, 0, 100, 100), Never},
		{"a second with no calls is not good", append(mk(0, 0, 100), Bin{T: 3 * sec}, Bin{T: 4 * sec, Offered: 1, Good: 1}, Bin{T: 5 * sec, Offered: 1, Good: 1}, Bin{T: 6 * sec, Offered: 1, Good: 1}), 2 * sec},
	} {
		if got := recovered(tc.bins, 2*sec); got != tc.want {
			t.Errorf("%s: recovered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// reduce: goodput counts successes within the SLO by arrival second;
// p99 to shed is taken over the calls the contender refused only, p99 to
// error over every failed call.
func TestReduce(t *testing.T) {
	sc := Scenario{Name: "T", Duration: 4 * sec}
	var calls []call
	for i := range 100 {
		calls = append(calls, call{at: time.Duration(i) * 10 * time.Millisecond, latency: 50 * time.Millisecond, ok: true})
	}
	calls = append(calls,
		call{at: 1 * sec, latency: 1500 * time.Millisecond, ok: true}, // a success over the SLO: not good
		call{at: 1 * sec, latency: DefaultSLO, ok: true},              // at the SLO: good
		call{at: 3 * sec, latency: 3 * sec},                           // the deadline: failed, not shed
		call{at: 3 * sec, latency: 5 * sec},                           // failed, not shed
	)
	// 200 refusals, arriving out of order of their latency, which goes
	// from 1 ms to 200 ms: by nearest rank the p99 is the 198th, 198 ms.
	for i := range 200 {
		ms := 1 + (i*7)%200
		calls = append(calls, call{at: 2 * sec, latency: time.Duration(ms) * time.Millisecond, shed: true})
	}
	ds := NewDownstream([]Phase{{Workers: 1}})
	r := reduce(sc, "c", calls, nil, ds)
	if r.Goodput != 25.25 { // 101 good calls over 4 s
		t.Errorf("Goodput = %v, want 25.25", r.Goodput)
	}
	if r.Bins[0].Good != 100 || r.Bins[1].Good != 1 || r.Bins[1].Offered != 2 {
		t.Errorf("bins 0 and 1 = %+v %+v, want 100 good; 2 offered, 1 good", r.Bins[0], r.Bins[1])
	}
	if r.Failed != 202 || r.Shed != 200 {
		t.Errorf("Failed, Shed = %d, %d, want 202, 200", r.Failed, r.Shed)
	}
	// p99 to error, over all 202 failures: the 200th (ceil(0.99·202)),
	// the largest refusal.
	if r.P99Shed != 198*time.Millisecond || r.P99Error != 200*time.Millisecond {
		t.Errorf("P99Shed, P99Error = %v, %v, want 198ms, 200ms", r.P99Shed, r.P99Error)
	}
	// 102 successes: by nearest rank the p99 is the 101st, the one at the
	// SLO; the one over it is beyond.
	if r.P99 != DefaultSLO || r.P50 != 50*time.Millisecond {
		t.Errorf("P50, P99 = %v, %v, want 50ms, 1s", r.P50, r.P99)
	}
	// No onset: every second from 2 s is healthy, so the 200 refusals
	// and the 2 failures at 3 s are healthy calls shed and lost.
	if r.HealthyShed != 200 || r.HealthyLost != 202 {
		t.Errorf("HealthyShed, HealthyLost = %d, %d, want 200, 202", r.HealthyShed, r.HealthyLost)
	}
	sc.Saturated = true
	if r := reduce(sc, "c", calls, nil, ds); r.HealthyShed != 0 || r.HealthyLost != 0 {
		t.Errorf("saturated: HealthyShed, HealthyLost = %d, %d, want 0, 0", r.HealthyShed, r.HealthyLost)
	}
	// A 2 s SLO makes the success at 1.5 s good too.
	sc.SLO = 2 * sec
	if r := reduce(sc, "c", calls, nil, ds); r.Goodput != 25.5 {
		t.Errorf("SLO 2 s: Goodput = %v, want 25.5", r.Goodput)
	}
}
