// Command real runs the real-server trials of bench/real (issue 12) and
// prints their tables and issue 12's targets as Markdown: floodgate's
// default gate beside plain go-redis v9 and failsafe-go against a real
// Redis stalled by DEBUG SLEEP, and beside net/http and failsafe-go
// against a net/http server behind an in-process toxiproxy.
//
// Run it from bench/, with a Redis on 127.0.0.1 that accepts DEBUG:
//
//	bash ../scripts/e2e-real.sh -full             # starts a Redis, runs this with -full
//	go run ./cmd/real -full -redis 127.0.0.1:6379 # your own Redis
//	go run ./cmd/real -trial http                 # only HTTP (no Redis needed)
//
// The short form (the default) takes about 45 s, the full form about 90 s.
// -redis defaults to $FLOODGATE_REDIS_ADDR. -runs N (1 to 1000) runs the
// trials N times, one after the other, and prints a line per run and a
// summary (real.Summary) instead of the tables: one run of the full form's
// Redis stalls cannot rank two limiters (runs of one limiter served
// 155–978 calls within the deadline there). The exit status is 0 whether or not floodgate
// meets the targets; 1 when a trial could not run; 2 for a bad flag.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/floodgate-go/floodgate/bench/real"
)

func main() {
	real.SpinIfAsked() // the busy-client phase re-executes this binary to spin a core
	full := flag.Bool("full", false, "the full form (15 s of stalls, 10 s per toxic, ...) instead of the short one")
	addr := flag.String("redis", os.Getenv(real.RedisAddrEnv), "the Redis address, host:port on 127.0.0.1, with DEBUG enabled")
	trial := flag.String("trial", "all", "which trial: redis, http or all")
	runs := flag.Int("runs", 1, "how many times to run the trials (1 to 1000); above 1, a line per run and a summary")
	flag.Parse()
	f := real.Short
	if *full {
		f = real.Full
	}
	doRedis, doHTTP := *trial == "redis" || *trial == "all", *trial == "http" || *trial == "all"
	switch {
	case !doRedis && !doHTTP:
		fmt.Fprintf(os.Stderr, "real: -trial %q: want redis, http or all\n", *trial)
		os.Exit(2)
	case *runs < 1 || *runs > 1000:
		fmt.Fprintf(os.Stderr, "real: -runs %d: want 1 to 1000\n", *runs)
		os.Exit(2)
	case doRedis && *addr == "":
		fmt.Fprintf(os.Stderr, "real: no Redis: pass -redis host:port or set %s (bash scripts/e2e-real.sh starts one)\n", real.RedisAddrEnv)
		os.Exit(1)
	}
	var redisRuns, httpRuns []*real.Result
	for i := range *runs {
		if doRedis {
			redisRuns = append(redisRuns, run("Redis", f, i, *runs, func() (*real.Result, error) { return real.RedisTrial(*addr, f) }))
		}
		if doHTTP {
			httpRuns = append(httpRuns, run("HTTP through toxiproxy", f, i, *runs, func() (*real.Result, error) { return real.HTTPTrial(f) }))
		}
	}
	if *runs > 1 {
		for _, rs := range [][]*real.Result{redisRuns, httpRuns} {
			if len(rs) > 0 {
				fmt.Printf("### %s form, %s\n\n", f.Name, real.Summary(rs))
			}
		}
		return
	}
	fmt.Print("### Targets (issue 12)\n\n| trial | target | measured | met |\n|---|---|---|---|\n")
	for _, r := range append(redisRuns, httpRuns...) {
		for _, tg := range real.Targets() {
			if tg.Trial != r.Trial {
				continue
			}
			m, ok := tg.Check(r)
			fmt.Printf("| %s | %s | %s | %s |\n", r.Trial, tg.Name, m, yesNo(ok))
		}
	}
}

// run runs one trial (run i of n) with do and prints its table under the
// heading title (n == 1) or a line of its targets and of floodgate's limit
// range in each fault (n > 1); it exits with status 1 if the trial could
// not run.
func run(title string, f real.Form, i, n int, do func() (*real.Result, error)) *real.Result {
	began := time.Now()
	r, err := do()
	if err != nil {
		fmt.Fprintln(os.Stderr, "real:", err)
		os.Exit(1)
	}
	if n == 1 {
		fmt.Printf("### %s (%s form, %.0f s)\n\n%s\n", title, f.Name, time.Since(began).Seconds(), r.Table())
		return r
	}
	fmt.Printf("- %s, run %d of %d (%s form, %.0f s):", r.Trial, i+1, n, f.Name, time.Since(began).Seconds())
	for _, tg := range real.Targets() {
		if tg.Trial == r.Trial {
			m, ok := tg.Check(r)
			fmt.Printf(" %s (%s);", m, yesNo(ok))
		}
	}
	// The limit's range in each fault: the stalls' successes follow how
	// high it climbs (docs/benchmarks.md, "Real servers").
	for _, p := range r.Phases {
		if s, found := r.Stat("floodgate", p.Name); found && !p.Healthy {
			fmt.Printf(" floodgate's limit in %s %d–%d;", p.Name, s.LimitLo, s.LimitHi)
		}
	}
	fmt.Println()
	return r
}

// yesNo says whether a target was met.
func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
