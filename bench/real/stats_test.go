package real

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate-go/floodgate/retry"
)

// TestStats checks the per-phase numbers on a hand-made timeline: a
// healthy phase of 1 s, a fault of 1.5 s, and a heal whose first 300 ms
// fail, with calls of every outcome.
func TestStats(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	phases := []Phase{{Name: "healthy", Healthy: true}, {Name: "fault"}, {Name: "heal", Healthy: true}}
	tl := &timeline{phases: phases, bounds: []time.Duration{0, ms(1000), ms(2500), ms(4500)}}
	lr := &laneRun{peaks: make([]atomic.Int64, 3), limitLo: make([]int, 3), limitHi: make([]int, 3)}
	add := func(start, took int, c call) {
		c.start, c.end, c.issued = ms(start), ms(start+took), true
		lr.calls = append(lr.calls, c)
	}
	// healthy: 98 successes of 1..98 ms (the 7 started at 910 ms or later
	// end after the phase), one refusal of 0 attempts (shed while healthy)
	// and one failure.
	for i := range 98 {
		add(i*10, i+1, call{attempts: 1})
	}
	add(985, 0, call{err: true, refused: true})
	add(990, 5, call{attempts: 1, err: true, errText: "boom"})
	// fault: a success after the deadline; two within it, one ending at
	// the phase's bound (not OKAfter) and one 1 ms after it (OKAfter); a
	// refusal; a failure after two attempts, the second refused (counted
	// as failed).
	add(1000, 2500, call{attempts: 1})
	add(1900, 600, call{attempts: 1})
	add(1950, 551, call{attempts: 1})
	add(1100, 0, call{err: true, refused: true})
	add(1200, 1000, call{attempts: 1, err: true, refused: true})
	// heal: bins 0..2 fail, bin 3 has 20 of 21 OK (95%) and a refusal,
	// then a refusal in bin 4 (after the recovery: shed while healthy);
	// the refusals in bin 1 and in bin 3, the one in which full
	// throughput came back, are the recovery's: not counted.
	for b := range 3 {
		add(2500+b*100, 10, call{attempts: 1, err: true, errText: "down"})
	}
	add(2650, 0, call{err: true, refused: true})
	for i := range 20 {
		add(2800+i, 1, call{attempts: 1})
	}
	add(2850, 0, call{err: true, refused: true})
	add(2950, 0, call{err: true, refused: true})
	tl.lanes = []*laneRun{lr}
	got := tl.stats(0)

	want := []PhaseStats{
		{Offered: 100, OK: 98, OKAfter: 7, Refused: 1, Failed: 1, P99: ms(98), P99OK: ms(98), HealthyShed: 1, FirstError: "boom"},
		{Offered: 5, OK: 2, OKAfter: 1, Late: 1, Refused: 1, Failed: 1, P99: ms(2500), P99OK: ms(2500)},
		{Offered: 26, OK: 20, Refused: 3, Failed: 3, P99: ms(10), P99OK: ms(1), Recovery: ms(300), HealthyShed: 1, FirstError: "down"},
	}
	for k := range want {
		if got[k] != want[k] {
			t.Errorf("phase %s:\n got %+v\nwant %+v", phases[k].Name, got[k], want[k])
		}
	}
	r := &Result{Phases: phases, Contenders: []string{"floodgate"}, Stats: [][]PhaseStats{got}}
	if n := r.HealthyShed("floodgate"); n != 2 {
		t.Errorf("HealthyShed = %d, want 2", n)
	}
}

// TestRecoveryNever: a heal whose bins never reach 95% OK has Recovery
// Never, and its refusals after HealGrace count as shed while healthy.
func TestRecoveryNever(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tl := &timeline{phases: []Phase{{Name: "fault"}, {Name: "heal", Healthy: true}}, bounds: []time.Duration{0, ms(100), ms(3100)}}
	lr := &laneRun{peaks: make([]atomic.Int64, 2), limitLo: make([]int, 2), limitHi: make([]int, 2)}
	for i := range 30 { // one refusal every 100 ms
		lr.calls = append(lr.calls, call{start: ms(100 + 100*i), end: ms(100 + 100*i), err: true, refused: true, issued: true})
	}
	tl.lanes = []*laneRun{lr}
	s := tl.stats(0)[1]
	if s.Recovery != Never || s.HealthyShed != 20 {
		t.Errorf("Recovery %v, HealthyShed %d; want Never, 20 (the refusals after HealGrace)", s.Recovery, s.HealthyShed)
	}
}

// TestRecoveryCappedAtGrace: a heal whose bins reach 95% OK only after
// 2 s (10% refused until then) excuses the refusals of its first
// HealGrace, not of its whole recovery (a review at stop 28: 5 s of 10%
// refusals counted 0 before).
func TestRecoveryCappedAtGrace(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tl := &timeline{phases: []Phase{{Name: "fault"}, {Name: "heal", Healthy: true}}, bounds: []time.Duration{0, ms(100), ms(3100)}}
	lr := &laneRun{peaks: make([]atomic.Int64, 2), limitLo: make([]int, 2), limitHi: make([]int, 2)}
	for i := range 300 { // 10 calls every 100 ms; one in 10 refused for 2 s
		c := call{start: ms(100 + 10*i), end: ms(101 + 10*i), attempts: 1, issued: true}
		if i < 200 && i%10 == 0 {
			c = call{start: ms(100 + 10*i), end: ms(100 + 10*i), err: true, refused: true, issued: true}
		}
		lr.calls = append(lr.calls, c)
	}
	tl.lanes = []*laneRun{lr}
	s := tl.stats(0)[1]
	if s.Recovery != ms(2000) || s.HealthyShed != 10 {
		t.Errorf("Recovery %v, HealthyShed %d; want 2s, 10 (the refusals after HealGrace)", s.Recovery, s.HealthyShed)
	}
}

// fakeReply is an error reply of a Redis server.
type fakeReply string

func (e fakeReply) Error() string { return string(e) }
func (fakeReply) RedisError()     {}

// TestMark checks how the floodgate contenders mark the downstreams'
// errors: the class floodgate's default classifier gives the result.
func TestMark(t *testing.T) {
	for _, tc := range []struct {
		name string
		mark func(error) error
		err  error
		want retry.Class
	}{
		{"redis nil", MarkRedis, nil, retry.ClassSuccess},
		{"redis deadline", MarkRedis, fmt.Errorf("get: %w", context.DeadlineExceeded), retry.ClassOverload},
		{"redis pool timeout", MarkRedis, redis.ErrPoolTimeout, retry.ClassOverload},
		{"redis BUSY", MarkRedis, fakeReply("BUSY Redis is busy running a script"), retry.ClassOverload},
		{"redis LOADING", MarkRedis, fakeReply("LOADING Redis is loading the dataset in memory"), retry.ClassOverload},
		{"redis WRONGTYPE", MarkRedis, fakeReply("WRONGTYPE Operation against a key holding the wrong kind of value"), retry.ClassPermanent},
		{"redis EOF", MarkRedis, io.EOF, retry.ClassTransient},
		{"http 503", MarkHTTP, &StatusError{Code: 503}, retry.ClassOverload},
		{"http 429", MarkHTTP, &StatusError{Code: 429}, retry.ClassOverload},
		{"http 500", MarkHTTP, &StatusError{Code: 500}, retry.ClassTransient},
		{"http 404", MarkHTTP, &StatusError{Code: 404}, retry.ClassPermanent},
		{"http EOF", MarkHTTP, fmt.Errorf("Get: %w", io.EOF), retry.ClassTransient},
		{"http deadline", MarkHTTP, context.DeadlineExceeded, retry.ClassOverload},
	} {
		if got := retry.Classify(tc.mark(tc.err)); got != tc.want {
			t.Errorf("%s: class %v, want %v", tc.name, got, tc.want)
		}
	}
	if !permanentHTTP(&StatusError{Code: 404}) || permanentHTTP(&StatusError{Code: 429}) || permanentHTTP(&StatusError{Code: 503}) {
		t.Error("permanentHTTP: want 404 permanent, 429 and 503 not")
	}
	if !permanentRedis(fakeReply("ERR unknown command")) || permanentRedis(fakeReply("BUSY x")) || permanentRedis(io.EOF) {
		t.Error("permanentRedis: want ERR permanent, BUSY and EOF not")
	}
}
