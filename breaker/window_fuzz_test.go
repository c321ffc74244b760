package breaker

import (
	"math"
	"testing"
)

// windowSample is one call the model of the rolling window keeps.
type windowSample struct {
	epoch        int64
	failed, slow bool
}

// FuzzWindow drives the breaker's rolling window with a random sequence of
// adds (at the current time, or late), clock steps and resets, and checks
// sum() after every op against a model that keeps every sample: the
// window holds the samples added since the last reset, at a time ≥ 0,
// whose epoch (time / period) is one of the n newest, (H−n, H], H the
// newest epoch ever added. (A late sample whose bucket has moved on is
// older than that, so the model need not drop it.) Counts are never
// negative, failed and slow never exceed calls.
//
// buckets and periodMs set the window (1..100 buckets of 1..256 ms). Each
// byte of ops is an op: low two bits add now (0), add late (1), step the
// clock (2), or reset or add at a far time (3); the high six are the
// outcome (failed, slow) and the distance.
func FuzzWindow(f *testing.F) {
	f.Add(uint8(10), uint8(100), []byte{0, 4, 8, 12, 2 | 5<<2, 0, 1 | 3<<2, 2 | 40<<2, 0, 3})
	f.Add(uint8(1), uint8(0), []byte{0, 0, 2 | 1<<2, 4, 1 | 1<<2, 3 | 1<<2, 0})
	f.Add(uint8(3), uint8(10), []byte{0, 2 | 10<<2, 4, 2 | 10<<2, 8, 1 | 20<<2, 1 | 30<<2, 1 | 63<<2, 0})
	f.Add(uint8(100), uint8(255), []byte{3 | 2<<2, 0, 3 | 3<<2, 12, 2 | 63<<2, 1, 3, 0})
	// after a reset, a late sample exactly n epochs behind the newest: out of the window
	f.Add(uint8(1), uint8(0), []byte{2 | 4<<2, 0, 3, 1 | 12<<2, 0})
	f.Fuzz(func(t *testing.T, buckets, periodMs uint8, ops []byte) {
		ops = ops[:min(len(ops), 512)] // the model is quadratic in the ops
		n := int64(buckets%100) + 1
		period := (int64(periodMs) + 1) * 1e6 // ns
		r := newRolling(int(n), period)
		var (
			now     int64 // ns
			samples []windowSample
			head    = int64(-1) // newest epoch ever added
		)
		add := func(at int64, failed, slow bool) {
			r.add(at, failed, slow)
			if at < 0 {
				return
			}
			e := at / period
			head = max(head, e)
			samples = append(samples, windowSample{e, failed, slow})
		}
		for i, op := range ops {
			arg := int64(op >> 2)
			failed, slow := arg&1 != 0, arg&2 != 0
			switch op & 3 {
			case 0:
				add(now, failed, slow)
			case 1: // late: up to 16 buckets back, possibly before 0
				add(now-(arg>>2)*period/2-1, failed, slow)
			case 2:
				now += arg * arg * period / 8
			case 3:
				switch arg % 4 {
				case 0:
					r.reset()
					samples = samples[:0]
				case 1:
					add(math.MaxInt64-arg, failed, slow) // the far future
				default:
					add(now+(arg>>2)*n*period, failed, slow) // a jump of whole windows
				}
			}
			var calls, fails, slows int64
			for _, s := range samples {
				if s.epoch > head-n && s.epoch <= head {
					calls++
					if s.failed {
						fails++
					}
					if s.slow {
						slows++
					}
				}
			}
			c, fl, sl := r.sum()
			if c != calls || fl != fails || sl != slows {
				t.Fatalf("op %d (%#x), %d buckets of %d ns, now %d: sum() = (%d, %d, %d), model (%d, %d, %d)",
					i, op, n, period, now, c, fl, sl, calls, fails, slows)
			}
			if c < 0 || fl < 0 || sl < 0 || fl > c || sl > c {
				t.Fatalf("op %d: sum() = (%d, %d, %d): negative, or failed/slow over calls", i, c, fl, sl)
			}
		}
	})
}
