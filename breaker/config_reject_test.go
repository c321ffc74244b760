package breaker

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rejectRow is a Config New must reject: the error must name field (as a
// word) and state rng, the valid range.
type rejectRow struct {
	name       string
	cfg        Config
	field, rng string
}

const (
	maxDur = time.Duration(math.MaxInt64)
	minDur = time.Duration(math.MinInt64)
)

// Every row is outside the range its field's doc states (breaker.Config):
// negatives, just past each end, the extremes of the type, NaN and
// infinities.
func TestConfigRejected(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	durations := func(field string, lo, hi time.Duration, rng string, set func(*Config, time.Duration)) []rejectRow {
		var rows []rejectRow
		for _, v := range []time.Duration{-1, lo - 1, hi + 1, minDur, maxDur} {
			var c Config
			set(&c, v)
			rows = append(rows, rejectRow{field + " " + v.String(), c, field, rng})
		}
		return rows
	}
	ratios := func(field string, set func(*Config, float64)) []rejectRow {
		var rows []rejectRow
		for _, v := range []float64{-0.5, 0.0009, 1.0001, math.SmallestNonzeroFloat64, math.MaxFloat64, nan, inf, -inf} {
			var c Config
			set(&c, v)
			rows = append(rows, rejectRow{field + " " + strconv.FormatFloat(v, 'g', -1, 64), c, field, "[0.001, 1]"})
		}
		return rows
	}
	ints := func(field string, hi int, rng string, set func(*Config, int)) []rejectRow {
		var rows []rejectRow
		for _, v := range []int{-1, hi + 1, math.MinInt, math.MaxInt} {
			var c Config
			set(&c, v)
			rows = append(rows, rejectRow{field + " " + strconv.Itoa(v), c, field, rng})
		}
		return rows
	}
	var rows []rejectRow
	rows = append(rows, durations("Window", 100*time.Millisecond, time.Hour, "[100ms, 1h]", func(c *Config, d time.Duration) { c.Window = d })...)
	rows = append(rows, ints("Buckets", 100, "[1, 100]", func(c *Config, n int) { c.Buckets = n })...)
	rows = append(rows,
		rejectRow{"Window/Buckets 100ms/11", Config{Window: 100 * time.Millisecond, Buckets: 11}, "Window/Buckets", "at least 10ms"},
		rejectRow{"Window/Buckets 999ms/100", Config{Window: 999 * time.Millisecond, Buckets: 100}, "Window/Buckets", "at least 10ms"})
	rows = append(rows, ints("MinCalls", 1e6, "[1, 1000000]", func(c *Config, n int) { c.MinCalls = n })...)
	rows = append(rows, ratios("FailureRatio", func(c *Config, r float64) { c.FailureRatio = r })...)
	rows = append(rows, durations("SlowCall", time.Millisecond, time.Hour, "[1ms, 1h]", func(c *Config, d time.Duration) { c.SlowCall = d })...)
	rows = append(rows, ratios("SlowRatio", func(c *Config, r float64) { c.SlowRatio = r })...)
	rows = append(rows, durations("OpenFor", time.Millisecond, time.Hour, "[1ms, 1h]", func(c *Config, d time.Duration) { c.OpenFor = d })...)
	for _, v := range []time.Duration{-1, 249 * time.Millisecond, time.Hour + 1, minDur, maxDur} {
		rows = append(rows, rejectRow{"MaxOpenFor " + v.String(), Config{MaxOpenFor: v}, "MaxOpenFor", "[OpenFor's default 250ms, 1h]"})
	}
	rows = append(rows, rejectRow{"MaxOpenFor under OpenFor", Config{OpenFor: time.Second, MaxOpenFor: time.Second - 1}, "MaxOpenFor", "[OpenFor=1s, 1h]"})
	rows = append(rows, ints("Probes", 1000, "[1, 1000]", func(c *Config, n int) { c.Probes = n })...)
	rows = append(rows, durations("ProbeLease", time.Millisecond, time.Hour, "[1ms, 1h]", func(c *Config, d time.Duration) { c.ProbeLease = d })...)

	for _, r := range rows {
		_, err := New("test", r.cfg)
		if err == nil {
			t.Errorf("%s: accepted, want an error naming %s %s", r.name, r.field, r.rng)
			continue
		}
		word := regexp.MustCompile(`(^|[^\w/])` + regexp.QuoteMeta(r.field) + `($|[^\w/])`)
		if !word.MatchString(err.Error()) || !strings.Contains(err.Error(), r.rng) {
			t.Errorf("%s: %q, want it to name %s and state %s", r.name, err, r.field, r.rng)
		}
	}
}

// A ratio in range is applied as given, not rounded to a whole number of
// thousandths: FailureRatio 0.0014 does not trip on 12 failures in 10,012
// calls (0.12%), nor SlowRatio 0.0014 on 12 slow calls. Today both are
// rounded to 0.001 (permille) and trip: an unknown defect (reported), the
// breaker's twin of defect 9 of issue 13 (the budget's Ratio). Rejecting
// such a ratio, naming it, is a fix too.
func TestConfigRatioNotRounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		bad  func() (Outcome, time.Duration)
	}{
		{"FailureRatio", Config{MinCalls: 1000, FailureRatio: 0.0014}, func() (Outcome, time.Duration) { return Failure, time.Millisecond }},
		{"SlowRatio", Config{MinCalls: 1000, SlowRatio: 0.0014}, func() (Outcome, time.Duration) { return Success, 2 * time.Second }},
	} {
		b, err := New("test", tc.cfg)
		if err != nil {
			if !strings.Contains(err.Error(), tc.name) {
				t.Errorf("%s 0.0014: %q, want it to name %s", tc.name, err, tc.name)
			}
			continue
		}
		report := func(o Outcome, rtt time.Duration) {
			p, err := b.Allow()
			if err != nil {
				return
			}
			b.Done(p, o, rtt, time.Now())
		}
		for range 10_000 {
			report(Success, time.Millisecond)
		}
		for range 12 {
			report(tc.bad())
		}
		if s := b.State(); s != Closed {
			t.Errorf("%s 0.0014: %v after 12 of 10012 calls (0.12%%), want closed", tc.name, s)
		}
	}
}
