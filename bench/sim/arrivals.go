package sim

import (
	"math/rand/v2"
	"time"
)

// RatePoint is one point of the offered-load script: the arrival rate is
// PerSecond at time At, linearly interpolated between points and constant
// after the last one.
type RatePoint struct {
	// At is the time since the start of the run.
	At time.Duration
	// PerSecond is the arrival rate at At (calls per second).
	PerSecond float64
}

// RateAt returns the scripted arrival rate at elapsed time t (calls per
// second).
func RateAt(points []RatePoint, t time.Duration) float64 {
	if t <= points[0].At {
		return points[0].PerSecond
	}
	for i := 1; i < len(points); i++ {
		a, b := points[i-1], points[i]
		if t < b.At {
			f := float64(t-a.At) / float64(b.At-a.At)
			return a.PerSecond + f*(b.PerSecond-a.PerSecond)
		}
	}
	return points[len(points)-1].PerSecond
}

// Arrivals generates an open-loop Poisson arrival process at a scripted
// rate: users do not slow down because the service does.
type Arrivals struct {
	points []RatePoint
	rng    *rand.Rand
}

// NewArrivals returns arrivals following points, with gaps drawn from a
// generator seeded with seed.
func NewArrivals(points []RatePoint, seed uint64) *Arrivals {
	return &Arrivals{points: points, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Next returns the gap until the next arrival after elapsed time t: an
// exponential draw at the rate in force at t (the rate changes slowly next
// to the gaps, so this is close to a non-homogeneous Poisson process).
func (a *Arrivals) Next(t time.Duration) time.Duration {
	rate := RateAt(a.points, t)
	return time.Duration(a.rng.ExpFloat64() / rate * float64(time.Second))
}
