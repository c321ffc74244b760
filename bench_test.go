package floodgate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/sony/gobreaker/v2"
)

func ok(context.Context) error { return nil }

// BenchmarkGuard is the success path of a Gate with default options.
func BenchmarkGuard(b *testing.B) {
	g := mustGate(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Guard(ctx, ok); err != nil {
			b.Fatal(err)
		}
	}
}

// nopObserver is an Observer that does nothing, to time Guard's observer
// calls themselves.
type nopObserver struct{}

func (nopObserver) Attach(*Gate) error                       { return nil }
func (nopObserver) Attempt(bool, time.Duration)              {}
func (nopObserver) Call(Outcome, int, time.Duration)         {}
func (nopObserver) StateChange(breaker.State, breaker.State) {}

// BenchmarkGuardObserved is the success path with an observer installed.
func BenchmarkGuardObserved(b *testing.B) {
	g := mustGate(b, WithObserver(nopObserver{}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Guard(ctx, ok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGuardParallel is the success path from every P at once.
func BenchmarkGuardParallel(b *testing.B) {
	g := mustGate(b, WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1 << 20, MaxLimit: 1 << 20}))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := g.Guard(ctx, ok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDo is the generic variant's success path.
func BenchmarkDo(b *testing.B) {
	g := mustGate(b)
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 42, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Do(ctx, g, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor is what the design cannot avoid: gobreaker's two-step
// Allow and done around a bare call, and one clock read pair for the RTT.
func BenchmarkFloor(b *testing.B) {
	cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		done, err := cb.Allow()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		err = ok(ctx)
		_ = time.Since(start)
		done(err)
	}
}

// BenchmarkShed is the time to return the gate's shared ErrShed *Error
// when the limit is full, and to test it with errors.Is.
func BenchmarkShed(b *testing.B) {
	g := mustGate(b, WithLimiter(adaptive.Config{Algorithm: adaptive.Fixed{}, InitialLimit: 1}))
	ctx := context.Background()
	g.Limiter().Acquire() // hold the only slot
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Guard(ctx, ok); !errors.Is(err, ErrShed) {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen is the time to refuse a call while the breaker is open.
func BenchmarkOpen(b *testing.B) {
	g := mustGate(b, WithBreaker(breaker.Config{MinCalls: 1, OpenFor: time.Hour}))
	ctx := context.Background()
	_ = g.Guard(ctx, func(context.Context) error { return context.DeadlineExceeded })
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Guard(ctx, ok); err == nil {
			b.Fatal("admitted while open")
		}
	}
}
