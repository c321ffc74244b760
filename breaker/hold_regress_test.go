package breaker

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Defect 6 of the review (was TestRAHoldProbeGiveBackRace in review-attack).
// A probe of the hold that the breaker's own state refuses gives its place
// back (Hold's doc; TestHoldProbeRefusedGivesBack checks it serially).
// Concurrently, two callers that both read an allowance of 1 take it to
// -1: the refused one does not give its place back, the other's give-back
// brings it to 0, and the allowance is lost for good: once the breaker's
// own state lets probes through, the hold admits none.
//
// In a synctest bubble, so that the hammering takes no time on the
// breaker's clock: in real time, a 2-core CI machine under -race took
// longer than the 30 ms open, and a caller was admitted by the half-open
// that followed (round 5 of 20: "admitted while its own state is open").
func TestHold6ProbeGiveBackNotLost(t *testing.T) {
	synctest.Test(t, testHold6ProbeGiveBackNotLost)
}

func testHold6ProbeGiveBackNotLost(t *testing.T) {
	lost := 0
	for round := range 20 {
		b := mustNew(t, Config{MinCalls: 1, OpenFor: 30 * time.Millisecond, Probes: 5})
		if err := call(t, b, time.Millisecond, Failure); err != nil {
			t.Fatal(err)
		}
		if b.State() != Open {
			t.Fatalf("state %v", b.State())
		}
		b.Hold(time.Hour, 1)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 200 {
					if p, err := b.Allow(); err == nil { // own state open: refused, gives back
						b.Done(p, Success, time.Millisecond, time.Now())
						t.Errorf("round %d: admitted while its own state is open", round)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		time.Sleep(40 * time.Millisecond) // its own state half-open
		admitted := 0
		for range 5 {
			if p, err := b.Allow(); err == nil {
				admitted++
				b.Done(p, Success, time.Millisecond, time.Now())
			}
		}
		if admitted != 1 {
			lost++
			t.Logf("round %d: half-open under a hold of 1 probe admitted %d (allowance now %d)", round, admitted, b.holdProbes.Load())
		}
	}
	if lost > 0 {
		t.Errorf("the hold's 1-probe allowance was lost to concurrent refused probes in %d of 20 rounds; want a refused probe to give its place back", lost)
	}
}
