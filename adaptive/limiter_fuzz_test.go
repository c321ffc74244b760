package adaptive

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// fuzzAlgorithms are the algorithms FuzzLimiter runs, each from its
// constructor; a new algorithm is one line here.
var fuzzAlgorithms = []struct {
	name string
	new  func() (Algorithm, error)
}{
	{"Gradient", func() (Algorithm, error) { a, err := NewGradient(GradientConfig{}); return a, err }},
	{"Gradient without timeout tolerance", func() (Algorithm, error) {
		a, err := NewGradient(GradientConfig{TimeoutTolerance: math.Inf(-1)})
		return a, err
	}},
	{"AIMD", func() (Algorithm, error) { a, err := NewAIMD(AIMDConfig{}); return a, err }},
	{"Gradient2", func() (Algorithm, error) { a, err := NewGradient2(Gradient2Config{}); return a, err }},
	{"Vegas", func() (Algorithm, error) { a, err := NewVegas(VegasConfig{}); return a, err }},
	{"Fixed", func() (Algorithm, error) { return Fixed{}, nil }},
}

// windowCheck wraps an Algorithm and checks every window and limit the
// Limiter hands it. It forwards Baseline, so the Limiter's baseline path
// runs too.
type windowCheck struct {
	alg      Algorithm
	cfg      Config // with defaults applied
	problems []string
	windows  int
}

func (c *windowCheck) Update(limit int, w Window) int {
	c.windows++
	switch {
	case limit < c.cfg.MinLimit || limit > c.cfg.MaxLimit:
		c.problems = append(c.problems, "Update given a limit outside [MinLimit, MaxLimit]")
	case w.Samples < 1:
		c.problems = append(c.problems, "a window without samples reached the algorithm")
	case w.Drops < 0 || w.Drops > w.Samples:
		c.problems = append(c.problems, "a window's Drops outside [0, Samples]")
	case w.Duration < c.cfg.WindowMin:
		c.problems = append(c.problems, "a window shorter than WindowMin")
	case w.MaxInFlight < 0 || w.MaxInFlight > c.cfg.MaxLimit:
		c.problems = append(c.problems, "a window's MaxInFlight outside [0, MaxLimit]")
	}
	return c.alg.Update(limit, w)
}

func (c *windowCheck) Baseline() time.Duration {
	if b, ok := c.alg.(Baseliner); ok {
		return b.Baseline()
	}
	return 0
}

// fuzzRTTs and fuzzSteps are the RTTs and clock steps an op picks from: 0,
// tiny, ordinary, huge (hours, 2^50 ns, MaxInt64/2) and, for RTTs, the
// time the call really held its slot (-1).
var (
	fuzzRTTs  = [...]time.Duration{-1, 0, 1, time.Microsecond, time.Millisecond, 50 * time.Millisecond, time.Second, time.Hour, 1 << 50, math.MaxInt64 / 2, -1, -1, 20 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second, -1}
	fuzzSteps = [...]time.Duration{0, 1, time.Microsecond, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, time.Second, time.Minute, time.Hour}
)

// FuzzLimiter drives a Limiter, for every algorithm of fuzzAlgorithms and
// a fuzzed Config, with a random single-goroutine sequence of Acquire,
// Release (random outcome, RTT and start time) and clock steps, and checks
// after every step: in-flight equals the calls holding a slot and is never
// negative; Acquire admits exactly when in-flight is under the limit read
// just before it, so that an admitted call leaves in-flight ≤ that limit;
// the limit stays in [MinLimit, MaxLimit]; every window the algorithm sees
// is well formed; nothing panics. Time is explicit: starts are base + a
// fuzzed offset, inside a synctest bubble so that the Limiter's own
// origin is base exactly and windows close deterministically; nothing
// sleeps.
//
// Each op is a byte (low two bits: Acquire 0 and 1, Release 2, clock step
// 3; the high six pick the call, the step or the start) and a Release
// reads one more byte (outcome and RTT).
func FuzzLimiter(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), []byte{0, 0, 0, 2, 0, 3 | 7<<2, 2, 1, 2, 2})
	f.Add(uint8(1), uint8(1), uint8(3), uint8(1), uint8(1), uint8(1), uint8(1), []byte{0, 0, 0, 0, 0, 2, 0x11, 2, 0x21, 3 | 3<<2, 2, 0x01, 0, 2, 0x31})
	f.Add(uint8(2), uint8(5), uint8(10), uint8(2), uint8(2), uint8(0), uint8(2), []byte{0, 1, 0, 1, 3 | 7<<2, 2, 0x61, 2, 0x71, 2, 0x81, 0, 0})
	f.Add(uint8(3), uint8(0), uint8(50), uint8(9), uint8(1), uint8(3), uint8(1), []byte{0, 0, 0, 0, 3 | 5<<2, 2, 0xf0, 2, 0xf3, 2, 0xe6, 3 | 9<<2, 0, 2, 0x06})
	f.Add(uint8(4), uint8(2), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), []byte{0, 0, 0, 0, 0, 0, 3 | 8<<2, 2, 0x00, 2, 0x00, 2, 0x10, 2, 0x00, 2, 0x00})
	f.Add(uint8(5), uint8(1), uint8(1), uint8(0), uint8(1), uint8(0), uint8(1), []byte{0, 0, 0, 2, 0x90, 3 | 4<<2, 2, 0x91, 0})
	f.Fuzz(func(t *testing.T, algIdx, minLimit, maxSpan, initial, winMinMs, winSpanMs, minSamples uint8, ops []byte) {
		ops = ops[:min(len(ops), 2048)]
		spec := fuzzAlgorithms[int(algIdx)%len(fuzzAlgorithms)]
		alg, err := spec.new()
		if err != nil {
			t.Fatalf("%s: %v", spec.name, err)
		}
		cfg := Config{
			MinLimit:   int(minLimit % 64),
			WindowMin:  time.Duration(winMinMs) * time.Millisecond,
			MinSamples: int(minSamples % 32),
		}
		if maxSpan != 0 {
			cfg.MaxLimit = max(cfg.MinLimit, 1) + int(maxSpan)%200
		}
		if cfg.WindowMin != 0 && winSpanMs != 0 {
			cfg.WindowMax = cfg.WindowMin + time.Duration(winSpanMs)*time.Millisecond
		}
		full, err := cfg.withDefaults()
		if err != nil {
			t.Fatalf("config %+v: %v", cfg, err)
		}
		if initial != 0 {
			cfg.InitialLimit = full.MinLimit + int(initial)%(full.MaxLimit-full.MinLimit+1)
			full.InitialLimit = cfg.InitialLimit
		}
		check := &windowCheck{alg: alg, cfg: full}
		cfg.Algorithm = check
		synctest.Test(t, func(t *testing.T) {
			base := time.Now() // constant in the bubble: the Limiter's origin too
			l, err := New(cfg)
			if err != nil {
				t.Fatalf("%s, config %+v: %v", spec.name, cfg, err)
			}
			var (
				now    time.Duration   // since base
				starts []time.Duration // the calls holding a slot
			)
			next := func(i *int) byte {
				if *i >= len(ops) {
					return 0
				}
				*i++
				return ops[*i-1]
			}
			for i, step := 0, 0; i < len(ops); step++ {
				op := next(&i)
				kind, arg := op&3, int(op>>2)
				switch kind {
				case 0, 1:
					limit, in := l.Limit(), l.InFlight()
					ok := l.Acquire()
					if ok != (in < limit) {
						t.Fatalf("%s step %d: Acquire() = %v with %d in flight and limit %d", spec.name, step, ok, in, limit)
					}
					if ok {
						starts = append(starts, now)
						if got := l.InFlight(); got > limit {
							t.Fatalf("%s step %d: admitted to %d in flight over the limit %d", spec.name, step, got, limit)
						}
					}
				case 2:
					b := next(&i)
					if len(starts) == 0 {
						continue
					}
					k := arg % len(starts)
					start := starts[k]
					starts = append(starts[:k], starts[k+1:]...)
					rtt := fuzzRTTs[b>>4]
					if rtt < 0 {
						rtt = now - start
					}
					switch b >> 2 & 3 {
					case 1:
						start = now // a start time later than the Acquire's
					case 2:
						start = -time.Hour // before the Limiter existed
					}
					l.Release(base.Add(start), rtt, Outcome(b&3%3))
				case 3:
					now += fuzzSteps[arg%len(fuzzSteps)]
				}
				if got, want := l.InFlight(), len(starts); got != want || got < 0 {
					t.Fatalf("%s step %d: InFlight() = %d, want %d (the calls holding a slot)", spec.name, step, got, want)
				}
				if lim := l.Limit(); lim < full.MinLimit || lim > full.MaxLimit {
					t.Fatalf("%s step %d: Limit() = %d, outside [MinLimit=%d, MaxLimit=%d]", spec.name, step, lim, full.MinLimit, full.MaxLimit)
				}
				if len(check.problems) > 0 {
					t.Fatalf("%s step %d: %s (config %+v)", spec.name, step, check.problems[0], full)
				}
			}
			if spec.name == "Fixed" && l.Limit() != full.InitialLimit {
				t.Errorf("Fixed: limit %d, want InitialLimit %d", l.Limit(), full.InitialLimit)
			}
		})
	})
}
