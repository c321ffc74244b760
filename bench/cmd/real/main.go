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
// -redis defaults to $FLOODGATE_REDIS_ADDR. The exit status is 0 whether or
// not floodgate meets the targets; 1 when a trial could not run.
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
	flag.Parse()
	f := real.Short
	if *full {
		f = real.Full
	}
	var results []*real.Result
	if *trial == "redis" || *trial == "all" {
		if *addr == "" {
			fmt.Fprintf(os.Stderr, "real: no Redis: pass -redis host:port or set %s (bash scripts/e2e-real.sh starts one)\n", real.RedisAddrEnv)
			os.Exit(1)
		}
		began := time.Now()
		r, err := real.RedisTrial(*addr, f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "real:", err)
			os.Exit(1)
		}
		fmt.Printf("### Redis (%s form, %.0f s)\n\n%s\n", f.Name, time.Since(began).Seconds(), r.Table())
		results = append(results, r)
	}
	if *trial == "http" || *trial == "all" {
		began := time.Now()
		r, err := real.HTTPTrial(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "real:", err)
			os.Exit(1)
		}
		fmt.Printf("### HTTP through toxiproxy (%s form, %.0f s)\n\n%s\n", f.Name, time.Since(began).Seconds(), r.Table())
		results = append(results, r)
	}
	if len(results) == 0 {
		fmt.Fprintf(os.Stderr, "real: -trial %q: want redis, http or all\n", *trial)
		os.Exit(2)
	}
	fmt.Print("### Targets (issue 12)\n\n| trial | target | measured | met |\n|---|---|---|---|\n")
	for _, r := range results {
		for _, tg := range real.Targets() {
			if tg.Trial != r.Trial {
				continue
			}
			m, ok := tg.Check(r)
			met := "no"
			if ok {
				met = "yes"
			}
			fmt.Printf("| %s | %s | %s | %s |\n", r.Trial, tg.Name, m, met)
		}
	}
}
