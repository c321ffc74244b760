package breaker

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// The open time backs off: OpenFor after a trip from closed, twice the last
// one after each failed probe, at most MaxOpenFor, and OpenFor again after
// the breaker closed. A trip that comes late, from calls that failed before
// a heal (the real HTTP trial's 2 s toxic, whose trip came at the heal),
// costs OpenFor, not MaxOpenFor. Each row's opens are the times from a
// trip to the first call admitted.
func TestOpenTimeBacksOff(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name string
		cfg  Config
		want []time.Duration // open times of trips 1, 2, ... (failed probes between), then after a close
	}{
		{"defaults", Config{}, []time.Duration{250 * ms, 500 * ms, 1000 * ms, 2000 * ms, 2000 * ms, 250 * ms}},
		{"OpenFor alone: fixed", Config{OpenFor: 300 * ms}, []time.Duration{300 * ms, 300 * ms, 300 * ms, 300 * ms}},
		{"OpenFor 100 ms, MaxOpenFor 700 ms", Config{OpenFor: 100 * ms, MaxOpenFor: 700 * ms}, []time.Duration{100 * ms, 200 * ms, 400 * ms, 700 * ms, 700 * ms, 100 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := tc.cfg
				cfg.MinCalls, cfg.Probes = 1, 1
				b := mustNew(t, cfg)
				_ = call(t, b, ms, Failure) // trips from closed
				var got []time.Duration
				for i := range tc.want {
					opened := time.Now()
					if d := b.RetryIn(); d != tc.want[i] {
						t.Errorf("open %d: RetryIn %v right after it opened, want %v", i+1, d, tc.want[i])
					}
					for {
						if b.State() != Open {
							break
						}
						if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
							t.Fatalf("open %d: Allow %v while State is open", i+1, err)
						}
						time.Sleep(ms)
					}
					got = append(got, time.Since(opened).Truncate(ms))
					if i == len(tc.want)-2 && len(tc.want) > 4 {
						// close it, then trip it again from closed
						if err := call(t, b, ms, Success); err != nil {
							t.Fatal(err)
						}
						if s := b.State(); s != Closed {
							t.Fatalf("state %v after a good probe", s)
						}
						_ = call(t, b, ms, Failure)
						continue
					}
					if err := call(t, b, ms, Failure); err != nil { // the probe fails
						t.Fatalf("open %d: the probe was refused: %v", i+1, err)
					}
				}
				for i := range tc.want {
					// the probe is admitted in the millisecond after the open time ends
					if got[i] != tc.want[i] && got[i] != tc.want[i]+ms {
						t.Errorf("open times %v, want %v", got, tc.want)
						break
					}
				}
			})
		})
	}
}
