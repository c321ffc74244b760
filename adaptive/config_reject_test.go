package adaptive

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// rejectRow is a configuration New or an algorithm's constructor must
// reject: the error must name field (as a word) and state rng, the valid
// range ("" when the error states none).
type rejectRow struct {
	name       string
	new        func() error
	field, rng string
}

func limiterRow(name string, cfg Config, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := New(cfg); return err }, field, rng}
}

func gradientRow(name string, cfg GradientConfig, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := NewGradient(cfg); return err }, "Gradient " + field, rng}
}

func aimdRow(name string, cfg AIMDConfig, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := NewAIMD(cfg); return err }, "AIMD " + field, rng}
}

func gradient2Row(name string, cfg Gradient2Config, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := NewGradient2(cfg); return err }, "Gradient2 " + field, rng}
}

func vegasRow(name string, cfg VegasConfig, field, rng string) rejectRow {
	return rejectRow{name, func() error { _, err := NewVegas(cfg); return err }, "Vegas " + field, rng}
}

func checkRejected(t *testing.T, rows []rejectRow) {
	t.Helper()
	for _, r := range rows {
		err := r.new()
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

const (
	maxDur = time.Duration(math.MaxInt64)
	minDur = time.Duration(math.MinInt64)
)

// A user's Algorithm around a nil pointer to each algorithm.
type (
	aroundGradient  struct{ *Gradient }
	aroundAIMD      struct{ *AIMD }
	aroundGradient2 struct{ *Gradient2 }
	aroundVegas     struct{ *Vegas }
)

// Every row is outside the range its field's doc states (Config and each
// algorithm's config; grouped per algorithm, so that an algorithm that
// replaces another is one group to swap): negatives, just past each end,
// the extremes of the type, NaN and infinities; and Algorithms that
// cannot run.
func TestConfigRejected(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	var (
		nilGradient  *Gradient
		nilAIMD      *AIMD
		nilGradient2 *Gradient2
		nilVegas     *Vegas
	)
	rows := []rejectRow{
		// MinLimit: [1, 1<<20]
		limiterRow("MinLimit -1", Config{MinLimit: -1}, "MinLimit", "[1, 1048576]"),
		limiterRow("MinLimit 1<<20+1", Config{MinLimit: 1<<20 + 1}, "MinLimit", "[1, 1048576]"),
		limiterRow("MinLimit MinInt", Config{MinLimit: math.MinInt}, "MinLimit", "[1, 1048576]"),
		limiterRow("MinLimit MaxInt", Config{MinLimit: math.MaxInt}, "MinLimit", "[1, 1048576]"),
		// MaxLimit: [MinLimit, 1<<20]
		limiterRow("MaxLimit -1", Config{MaxLimit: -1}, "MaxLimit", "[MinLimit=1, 1048576]"),
		limiterRow("MaxLimit under MinLimit", Config{MinLimit: 10, MaxLimit: 5}, "MaxLimit", "[MinLimit=10, 1048576]"),
		limiterRow("MaxLimit 1<<20+1", Config{MaxLimit: 1<<20 + 1}, "MaxLimit", "[MinLimit=1, 1048576]"),
		limiterRow("MaxLimit MinInt", Config{MaxLimit: math.MinInt}, "MaxLimit", "[MinLimit=1, 1048576]"),
		limiterRow("MaxLimit MaxInt", Config{MaxLimit: math.MaxInt}, "MaxLimit", "[MinLimit=1, 1048576]"),
		// InitialLimit: [MinLimit, MaxLimit]
		limiterRow("InitialLimit -1", Config{InitialLimit: -1}, "InitialLimit", "[MinLimit=1, MaxLimit=1000]"),
		limiterRow("InitialLimit 1001", Config{InitialLimit: 1001}, "InitialLimit", "[MinLimit=1, MaxLimit=1000]"),
		limiterRow("InitialLimit under MinLimit", Config{MinLimit: 10, InitialLimit: 5}, "InitialLimit", "[MinLimit=10, MaxLimit=1000]"),
		limiterRow("InitialLimit MinInt", Config{InitialLimit: math.MinInt}, "InitialLimit", "[MinLimit=1, MaxLimit=1000]"),
		limiterRow("InitialLimit MaxInt", Config{InitialLimit: math.MaxInt}, "InitialLimit", "[MinLimit=1, MaxLimit=1000]"),
		// WindowMin: [1 ms, 1 min]
		limiterRow("WindowMin -1ns", Config{WindowMin: -1}, "WindowMin", "[1ms, 1m]"),
		limiterRow("WindowMin 999µs", Config{WindowMin: 999 * time.Microsecond}, "WindowMin", "[1ms, 1m]"),
		limiterRow("WindowMin 1m+1ns", Config{WindowMin: time.Minute + 1}, "WindowMin", "[1ms, 1m]"),
		limiterRow("WindowMin MinInt64", Config{WindowMin: minDur}, "WindowMin", "[1ms, 1m]"),
		limiterRow("WindowMin MaxInt64", Config{WindowMin: maxDur}, "WindowMin", "[1ms, 1m]"),
		// WindowMax: [WindowMin, 1 min]
		limiterRow("WindowMax -1ns", Config{WindowMax: -1}, "WindowMax", "[WindowMin=250ms, 1m]"),
		limiterRow("WindowMax under WindowMin", Config{WindowMin: time.Second, WindowMax: 999 * time.Millisecond}, "WindowMax", "[WindowMin=1s, 1m]"),
		limiterRow("WindowMax 1m+1ns", Config{WindowMax: time.Minute + 1}, "WindowMax", "[WindowMin=250ms, 1m]"),
		limiterRow("WindowMax MinInt64", Config{WindowMax: minDur}, "WindowMax", "[WindowMin=250ms, 1m]"),
		limiterRow("WindowMax MaxInt64", Config{WindowMax: maxDur}, "WindowMax", "[WindowMin=250ms, 1m]"),
		// MinSamples: [1, 1e6]
		limiterRow("MinSamples -1", Config{MinSamples: -1}, "MinSamples", "[1, 1000000]"),
		limiterRow("MinSamples 1e6+1", Config{MinSamples: 1e6 + 1}, "MinSamples", "[1, 1000000]"),
		limiterRow("MinSamples MinInt", Config{MinSamples: math.MinInt}, "MinSamples", "[1, 1000000]"),
		limiterRow("MinSamples MaxInt", Config{MinSamples: math.MaxInt}, "MinSamples", "[1, 1000000]"),
		// Algorithm: a nil pointer, or a user's type around one
		limiterRow("nil *Gradient", Config{Algorithm: nilGradient}, "Algorithm", ""),
		limiterRow("a type around a nil *Gradient", Config{Algorithm: aroundGradient{}}, "Algorithm", ""),
		limiterRow("&Gradient{}", Config{Algorithm: &Gradient{}}, "Algorithm", ""),
		// Gradient
		gradientRow("Tolerance 1.04", GradientConfig{Tolerance: 1.04}, "Tolerance", "[1.05, 10]"),
		gradientRow("Tolerance -1", GradientConfig{Tolerance: -1}, "Tolerance", "[1.05, 10]"),
		gradientRow("Tolerance 10.01", GradientConfig{Tolerance: 10.01}, "Tolerance", "[1.05, 10]"),
		gradientRow("Tolerance NaN", GradientConfig{Tolerance: nan}, "Tolerance", "[1.05, 10]"),
		gradientRow("Tolerance +Inf", GradientConfig{Tolerance: inf}, "Tolerance", "[1.05, 10]"),
		gradientRow("NoiseFloor -1ns", GradientConfig{NoiseFloor: -1}, "NoiseFloor", "[0, 1s]"),
		gradientRow("NoiseFloor 1s+1ns", GradientConfig{NoiseFloor: time.Second + 1}, "NoiseFloor", "[0, 1s]"),
		gradientRow("NoiseFloor MaxInt64", GradientConfig{NoiseFloor: maxDur}, "NoiseFloor", "[0, 1s]"),
		gradientRow("TimeoutTolerance 0.51", GradientConfig{TimeoutTolerance: 0.51}, "TimeoutTolerance", "[0, 0.5]"),
		gradientRow("TimeoutTolerance NaN", GradientConfig{TimeoutTolerance: nan}, "TimeoutTolerance", "[0, 0.5]"),
		gradientRow("TimeoutTolerance +Inf", GradientConfig{TimeoutTolerance: inf}, "TimeoutTolerance", "[0, 0.5]"),
		limiterRow("nil *AIMD", Config{Algorithm: nilAIMD}, "Algorithm", ""),
		limiterRow("nil *Gradient2", Config{Algorithm: nilGradient2}, "Algorithm", ""),
		limiterRow("nil *Vegas", Config{Algorithm: nilVegas}, "Algorithm", ""),
		limiterRow("a type around a nil *Gradient2", Config{Algorithm: aroundGradient2{}}, "Algorithm", ""),
		limiterRow("a type around a nil *Vegas", Config{Algorithm: aroundVegas{}}, "Algorithm", ""),
		// unknown defect (reported): accepted today, and the first window
		// that closes panics in AIMD.Update
		limiterRow("a type around a nil *AIMD", Config{Algorithm: aroundAIMD{}}, "Algorithm", ""),

		// AIMD
		aimdRow("BackoffRatio 0.4999", AIMDConfig{BackoffRatio: 0.4999}, "BackoffRatio", "[0.5, 1)"),
		aimdRow("BackoffRatio 1", AIMDConfig{BackoffRatio: 1}, "BackoffRatio", "[0.5, 1)"),
		aimdRow("BackoffRatio -0.5", AIMDConfig{BackoffRatio: -0.5}, "BackoffRatio", "[0.5, 1)"),
		aimdRow("BackoffRatio NaN", AIMDConfig{BackoffRatio: nan}, "BackoffRatio", "[0.5, 1)"),
		aimdRow("BackoffRatio +Inf", AIMDConfig{BackoffRatio: inf}, "BackoffRatio", "[0.5, 1)"),
		aimdRow("BackoffRatio -Inf", AIMDConfig{BackoffRatio: -inf}, "BackoffRatio", "[0.5, 1)"),
		aimdRow("Timeout -1ns", AIMDConfig{Timeout: -1}, "Timeout", "[1ms, 1h]"),
		aimdRow("Timeout 999µs", AIMDConfig{Timeout: 999 * time.Microsecond}, "Timeout", "[1ms, 1h]"),
		aimdRow("Timeout 1h+1ns", AIMDConfig{Timeout: time.Hour + 1}, "Timeout", "[1ms, 1h]"),
		aimdRow("Timeout MinInt64", AIMDConfig{Timeout: minDur}, "Timeout", "[1ms, 1h]"),
		aimdRow("Timeout MaxInt64", AIMDConfig{Timeout: maxDur}, "Timeout", "[1ms, 1h]"),

		// Gradient2
		gradient2Row("Smoothing -0.1", Gradient2Config{Smoothing: -0.1}, "Smoothing", "(0, 1]"),
		gradient2Row("Smoothing 1.0001", Gradient2Config{Smoothing: 1.0001}, "Smoothing", "(0, 1]"),
		gradient2Row("Smoothing NaN", Gradient2Config{Smoothing: nan}, "Smoothing", "(0, 1]"),
		gradient2Row("Smoothing +Inf", Gradient2Config{Smoothing: inf}, "Smoothing", "(0, 1]"),
		gradient2Row("Smoothing -Inf", Gradient2Config{Smoothing: -inf}, "Smoothing", "(0, 1]"),
		gradient2Row("Tolerance 0.5", Gradient2Config{Tolerance: 0.5}, "Tolerance", "[1, 100]"),
		gradient2Row("Tolerance 100.1", Gradient2Config{Tolerance: 100.1}, "Tolerance", "[1, 100]"),
		gradient2Row("Tolerance NaN", Gradient2Config{Tolerance: nan}, "Tolerance", "[1, 100]"),
		gradient2Row("Tolerance +Inf", Gradient2Config{Tolerance: inf}, "Tolerance", "[1, 100]"),
		gradient2Row("Tolerance -Inf", Gradient2Config{Tolerance: -inf}, "Tolerance", "[1, 100]"),
		gradient2Row("LongWindow -1", Gradient2Config{LongWindow: -1}, "LongWindow", "[1, 1000000]"),
		gradient2Row("LongWindow 1e6+1", Gradient2Config{LongWindow: 1e6 + 1}, "LongWindow", "[1, 1000000]"),
		gradient2Row("LongWindow MinInt", Gradient2Config{LongWindow: math.MinInt}, "LongWindow", "[1, 1000000]"),
		gradient2Row("LongWindow MaxInt", Gradient2Config{LongWindow: math.MaxInt}, "LongWindow", "[1, 1000000]"),
		gradient2Row("QueueSize -1", Gradient2Config{QueueSize: -1}, "QueueSize", "[1, 1000]"),
		gradient2Row("QueueSize 1001", Gradient2Config{QueueSize: 1001}, "QueueSize", "[1, 1000]"),
		gradient2Row("QueueSize MinInt", Gradient2Config{QueueSize: math.MinInt}, "QueueSize", "[1, 1000]"),
		gradient2Row("QueueSize MaxInt", Gradient2Config{QueueSize: math.MaxInt}, "QueueSize", "[1, 1000]"),

		// Vegas
		vegasRow("Smoothing -0.1", VegasConfig{Smoothing: -0.1}, "Smoothing", "(0, 1]"),
		vegasRow("Smoothing 1.1", VegasConfig{Smoothing: 1.1}, "Smoothing", "(0, 1]"),
		vegasRow("Smoothing NaN", VegasConfig{Smoothing: nan}, "Smoothing", "(0, 1]"),
		vegasRow("Smoothing +Inf", VegasConfig{Smoothing: inf}, "Smoothing", "(0, 1]"),
		vegasRow("Smoothing -Inf", VegasConfig{Smoothing: -inf}, "Smoothing", "(0, 1]"),
		vegasRow("ProbeMultiplier -1", VegasConfig{ProbeMultiplier: -1}, "ProbeMultiplier", "[1, 1000000]"),
		vegasRow("ProbeMultiplier 1e6+1", VegasConfig{ProbeMultiplier: 1e6 + 1}, "ProbeMultiplier", "[1, 1000000]"),
		vegasRow("ProbeMultiplier MinInt", VegasConfig{ProbeMultiplier: math.MinInt}, "ProbeMultiplier", "[1, 1000000]"),
		vegasRow("ProbeMultiplier MaxInt", VegasConfig{ProbeMultiplier: math.MaxInt}, "ProbeMultiplier", "[1, 1000000]"),
	}
	checkRejected(t, rows)
}

// zeroAlgorithms are algorithm values not made by their constructor, each
// with the constructor's defaults to compare it with; grouped per
// algorithm like the rows above.
var zeroAlgorithms = []struct {
	name       string
	zero, dflt func() Algorithm
}{
	{"&Gradient{}", func() Algorithm { return &Gradient{} }, func() Algorithm { a, _ := NewGradient(GradientConfig{}); return a }},
	{"&AIMD{}", func() Algorithm { return &AIMD{} }, func() Algorithm { a, _ := NewAIMD(AIMDConfig{}); return a }},
	{"&Gradient2{}", func() Algorithm { return &Gradient2{} }, func() Algorithm { a, _ := NewGradient2(Gradient2Config{}); return a }},
	{"&Vegas{}", func() Algorithm { return &Vegas{} }, func() Algorithm { a, _ := NewVegas(VegasConfig{}); return a }},
}

// An algorithm's zero value (&Gradient{} and the like, not from its
// constructor) given to New: either New rejects it, naming Algorithm, or
// it moves the limit as the constructor's defaults do. Today New accepts
// each, and &Hybrid{} and &AIMD{} cut the limit to MinLimit on healthy
// windows while &Gradient2{} and &Vegas{} never move it (zero Smoothing):
// an unknown defect, reported. The windows: binding and healthy, then
// twice as slow, then with drops.
func TestConfigZeroAlgorithm(t *testing.T) {
	for _, za := range zeroAlgorithms {
		if _, err := New(Config{Algorithm: za.zero()}); err != nil {
			if !strings.Contains(err.Error(), "Algorithm") {
				t.Errorf("%s: %q, want it to name Algorithm", za.name, err)
			}
			continue
		}
		zero, dflt := za.zero(), za.dflt()
		lz, ld := 20, 20
		for i := range 30 {
			w := Window{Duration: 250 * time.Millisecond, Samples: 50, MeanRTT: 10 * time.Millisecond, MinRTT: 8 * time.Millisecond}
			switch {
			case i >= 20:
				w.Drops = 10
			case i >= 10:
				w.MeanRTT = 20 * time.Millisecond
			}
			w.MaxInFlight = ld
			lz, ld = max(zero.Update(lz, w), 1), max(dflt.Update(ld, w), 1)
			if lz != ld {
				t.Errorf("%s accepted by New: window %d moved the limit to %d, the constructor's defaults to %d", za.name, i, lz, ld)
				break
			}
		}
	}
}

// floodAlgorithm asks for a limit far above any MaxLimit.
type floodAlgorithm struct{}

func (floodAlgorithm) Update(int, Window) int { return 1 << 30 }

// The accepted-with-meaning cases of Config and GradientConfig: each is
// accepted and does what its doc says.
func TestConfigAcceptedWithMeaning(t *testing.T) {
	// MinLimit over a zero MaxLimit: MaxLimit = max(1000, MinLimit), and
	// InitialLimit defaults into the range.
	for _, tc := range []struct{ minLimit, wantMax, wantInitial int }{
		{2000, 2000, 2000},
		{5, 1000, 20},
	} {
		l, err := New(Config{MinLimit: tc.minLimit, Algorithm: floodAlgorithm{}, MinSamples: 1, WindowMin: time.Millisecond, WindowMax: time.Millisecond})
		if err != nil {
			t.Errorf("MinLimit %d, MaxLimit 0: %v, want accepted", tc.minLimit, err)
			continue
		}
		if got := l.Limit(); got != tc.wantInitial {
			t.Errorf("MinLimit %d, MaxLimit 0: initial limit %d, want %d", tc.minLimit, got, tc.wantInitial)
		}
		start := time.Now()
		if !l.Acquire() {
			t.Fatalf("MinLimit %d: first Acquire refused", tc.minLimit)
		}
		l.Release(start, 2*time.Millisecond, Success) // closes a window: the algorithm asks for 1<<30
		if got := l.Limit(); got != tc.wantMax {
			t.Errorf("MinLimit %d, MaxLimit 0: limit %d after asking for 1<<30, want MaxLimit %d", tc.minLimit, got, tc.wantMax)
		}
	}

	// A negative-infinite TimeoutTolerance: no tolerance, every timeout
	// cuts by its share (1 timeout in 100 calls: limit 100 → 99), where the
	// default 2% leaves the limit alone.
	w := Window{Duration: 250 * time.Millisecond, Samples: 100, Drops: 1, MeanRTT: 10 * time.Millisecond, MinRTT: 10 * time.Millisecond, MaxInFlight: 10}
	none, err := NewGradient(GradientConfig{TimeoutTolerance: math.Inf(-1)})
	if err != nil {
		t.Fatalf("TimeoutTolerance -Inf: %v, want accepted", err)
	}
	dflt, _ := NewGradient(GradientConfig{})
	if got := none.Update(100, w); got != 99 {
		t.Errorf("TimeoutTolerance -Inf: 1 timeout in 100 took the limit 100 to %d, want 99", got)
	}
	if got := dflt.Update(100, w); got != 100 {
		t.Errorf("default TimeoutTolerance: 1 timeout in 100 took the limit 100 to %d, want 100", got)
	}
}
