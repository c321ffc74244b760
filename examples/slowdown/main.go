// Command slowdown shows floodgate keeping a service alive through a
// downstream slowdown. A "shipping quote" downstream (a real HTTP server on
// 127.0.0.1) normally answers in 100 ms; partway through it answers in 2 s,
// without errors, then heals. User calls arrive at 100/s, open loop, twice
// side by side, each contender against its own copy of the downstream: once
// through a naive client (a fixed pool of 50 connections, a per-attempt
// timeout, 3 attempts at each of 3 nested layers with a fixed backoff) and
// once through floodgate's Guard. It prints a line per second and, at the
// end, a table comparing the two.
//
//	go run ./examples/slowdown            # defaults: about 50 s
//	go run ./examples/slowdown -h         # the flags
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/metrics"
	"github.com/floodgate-go/floodgate/retry"
)

type options struct {
	rate                   int
	fast, slow             time.Duration
	slowAt, healAt, runFor time.Duration
	pool                   int
	attemptTimeout         time.Duration
	deadline               time.Duration
	backoff                time.Duration
	drain                  time.Duration
	metricsAddr            string
	verbose                bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("slowdown", flag.ContinueOnError)
	fs.IntVar(&o.rate, "rate", 100, "user calls offered per second, to each contender (1..2000)")
	fs.DurationVar(&o.fast, "fast", 100*time.Millisecond, "downstream latency when healthy")
	fs.DurationVar(&o.slow, "slow", 2*time.Second, "downstream latency during the slowdown")
	fs.DurationVar(&o.slowAt, "slow-at", 10*time.Second, "when the slowdown starts, from the start of the run")
	fs.DurationVar(&o.healAt, "heal-at", 30*time.Second, "when the downstream heals, from the start of the run")
	fs.DurationVar(&o.runFor, "duration", 48*time.Second, "how long user calls are offered")
	fs.IntVar(&o.pool, "pool", 50, "connections each client may hold to its downstream")
	fs.DurationVar(&o.attemptTimeout, "attempt-timeout", time.Second, "timeout of one attempt, both contenders")
	fs.DurationVar(&o.deadline, "deadline", 2*time.Second, "floodgate's overall deadline per user call (the naive client has none)")
	fs.DurationVar(&o.backoff, "backoff", 100*time.Millisecond, "naive: fixed wait between attempts; floodgate: backoff base")
	fs.DurationVar(&o.drain, "drain", 2*time.Second, "how long calls still in progress at the end may finish before they are cancelled")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "if set, serve floodgate's Prometheus metrics at http://ADDR/metrics while the demo runs (e.g. 127.0.0.1:9464)")
	fs.BoolVar(&o.verbose, "v", false, "log floodgate's events (breaker state and limit changes) to stderr with log/slog")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.rate < 1 || o.rate > 2000:
		return o, fmt.Errorf("-rate must be in [1, 2000], got %d", o.rate)
	case o.fast <= 0 || o.slow <= 0:
		return o, fmt.Errorf("-fast and -slow must be > 0")
	case o.slowAt < 0 || o.healAt < o.slowAt || o.runFor < o.healAt:
		return o, fmt.Errorf("want 0 <= -slow-at <= -heal-at <= -duration, got %v, %v, %v", o.slowAt, o.healAt, o.runFor)
	case o.runFor > 10*time.Minute:
		return o, fmt.Errorf("-duration must be at most 10m, got %v", o.runFor)
	case o.pool < 1:
		return o, fmt.Errorf("-pool must be at least 1, got %d", o.pool)
	case o.attemptTimeout < time.Millisecond || o.deadline < time.Millisecond || o.backoff < time.Millisecond:
		return o, fmt.Errorf("-attempt-timeout, -deadline and -backoff must be at least 1ms")
	case o.drain < 0:
		return o, fmt.Errorf("-drain must be >= 0, got %v", o.drain)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == flag.ErrHelp {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if err := run(o, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(o options, w io.Writer) error {
	start := time.Now()
	latency := func() time.Duration {
		if t := time.Since(start); t >= o.slowAt && t < o.healAt {
			return o.slow
		}
		return o.fast
	}
	dNaive, err := startDownstream(latency)
	if err != nil {
		return err
	}
	defer dNaive.close()
	dGuard, err := startDownstream(latency)
	if err != nil {
		return err
	}
	defer dGuard.close()

	transitions := make(chan string, 16)
	opts := []floodgate.Option{}
	var collector *metrics.Collector
	if o.metricsAddr != "" {
		stop, c, err := serveMetrics(o.metricsAddr, w)
		if err != nil {
			return err
		}
		defer stop()
		collector = c
		opts = append(opts, c.Observe())
	}
	if o.verbose {
		opts = append(opts, floodgate.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	gate, err := floodgate.New("shipping-quote", append(opts,
		floodgate.WithRetry(retry.Config{MaxAttempts: 3, BaseDelay: o.backoff,
			AttemptTimeout: o.attemptTimeout, Timeout: o.deadline}),
		floodgate.WithBreaker(breaker.Config{OnStateChange: func(_ string, from, to breaker.State) {
			select {
			case transitions <- fmt.Sprintf("%s -> %s at %.1fs", from, to, time.Since(start).Seconds()):
			default:
			}
		}}))...)
	if err != nil {
		return err
	}
	if collector != nil {
		if err := observeIdleTransport(collector, gate); err != nil {
			return err
		}
	}
	nv := &naive{client: newHTTPClient(o.pool), url: dNaive.url, timeout: o.attemptTimeout, backoff: o.backoff}
	defer nv.client.CloseIdleConnections()
	gd := &guarded{gate: gate, client: newHTTPClient(o.pool), url: dGuard.url}
	defer gd.client.CloseIdleConnections()

	seconds := int(o.runFor / time.Second)
	recN, recG := newRecord(seconds), newRecord(seconds)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	offer := func(rec *record, call func(context.Context) error, sec int) {
		rec.offer(sec)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			err := call(ctx)
			rec.end(sec, time.Since(start), time.Since(t0), err)
		}()
	}

	fmt.Fprintf(w, "slowdown: %d calls/s; downstream %v, %v from %v to %v; pool %d; attempt timeout %v; floodgate deadline %v\n",
		o.rate, o.fast, o.slow, o.slowAt, o.healAt, o.pool, o.attemptTimeout, o.deadline)
	fmt.Fprintf(w, "%4s %-5s %7s | %-68s | %s\n", "t", "phase", "offered", "floodgate: ok refused fail in-flight(down) limit breaker budget p99", "naive: ok fail in-flight(user/down) p99")
	fmt.Fprintf(w, "     naive = a pool of %d connections, %v per attempt, 3 attempts at each of 3 nested layers (up to 27), no deadline;\n", o.pool, o.attemptTimeout)
	fmt.Fprintf(w, "     floodgate = one Guard: 3 attempts, %v per attempt, %v deadline, budgeted retries, breaker, adaptive limit\n", o.attemptTimeout, o.deadline)
	fmt.Fprintf(w, "     phase = the downstream's latency that second: fast (%v) or SLOW (%v); offered = user calls started that second;\n", o.fast, o.slow)
	fmt.Fprintln(w, "     ok, refused, fail = user calls that ended that second (a call refused on a")
	fmt.Fprintln(w, "     retry ends a second after it started, so refused can exceed offered);")
	fmt.Fprintln(w, "     refused = shed by the limiter or refused by the open breaker, at once; in-flight(down) = requests the downstream is")
	fmt.Fprintln(w, "     working on, including those whose client gave up (it finishes them anyway); user = naive user calls in progress;")
	fmt.Fprintln(w, "     limit, breaker = floodgate's concurrency limit and breaker state (closed, open, half-open) at the end of that second;")
	fmt.Fprintln(w, "     the limit grows on demand until a window judges the slowdown, so it can rise (20 -> 40) as a slowdown starts;")
	fmt.Fprintln(w, "     budget = retry tokens left; p99 = of that second's successes (- = none);")
	fmt.Fprintln(w, "     a naive call fails only when its 27 attempts are spent, so its failures show up about 30 s late")
	every := time.Second / time.Duration(o.rate)
	next := start
	lastPrinted := 0
	for time.Since(start) < o.runFor {
		sec := int(time.Since(start) / time.Second)
		offer(recN, nv.call, sec)
		offer(recG, gd.call, sec)
		if done := int(time.Since(start) / time.Second); done > lastPrinted {
			for ; lastPrinted < done; lastPrinted++ {
				printSecond(w, o, lastPrinted, recG, recN, gate, dGuard, dNaive, transitions)
			}
		}
		next = next.Add(every)
		time.Sleep(time.Until(next))
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(o.drain):
		cancel() // calls still in progress at the end are cancelled and count as failed
		<-waited
	}
	printSecond(w, o, lastPrinted, recG, recN, gate, dGuard, dNaive, transitions)
	report(w, o, recN, recG, dNaive, dGuard, seconds)
	return nil
}

func phase(o options, s int) string {
	t := time.Duration(s) * time.Second
	if t >= o.slowAt && t < o.healAt {
		return "SLOW"
	}
	return "fast"
}

func ms(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func printSecond(w io.Writer, o options, s int, recG, recN *record, g *floodgate.Gate, dG, dN *downstream, transitions chan string) {
	tg, _ := recG.second(s)
	tn, userN := recN.second(s)
	st := g.Stats()
	fmt.Fprintf(w, "%3ds %-5s %7d | ok %3d refused %3d fail %3d in-flight %3d limit %3d %-9s budget %4.1f p99 %6s | ok %3d fail %3d in-flight %4d/%3d p99 %6s\n",
		s, phase(o, s), recG.offered(s), tg.ok, tg.refused, tg.failed, dG.inFlight.Load(), st.Limit, st.Breaker, st.BudgetTokens, ms(quantile(tg.okLat, 0.99)),
		tn.ok, tn.failed+tn.refused, userN, dN.inFlight.Load(), ms(quantile(tn.okLat, 0.99)))
	for {
		select {
		case m := <-transitions:
			fmt.Fprintf(w, "     breaker %s\n", m)
		default:
			return
		}
	}
}

func report(w io.Writer, o options, recN, recG *record, dN, dG *downstream, seconds int) {
	type row struct {
		name         string
		naive, guard string
	}
	users := func(r *record) int {
		n := 0
		for _, t := range r.byStart {
			n += t.offered
		}
		return n
	}
	oks := func(r *record) int { return len(r.okLat) }
	secs := func(d time.Duration) string {
		if d < 0 {
			return "never"
		}
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	recov := func(r *record) string {
		n := r.recovered(o.healAt, seconds-1)
		if n < 0 {
			return "never"
		}
		return fmt.Sprintf("%d s", n)
	}
	un, ug := users(recN), users(recG)
	rows := []row{
		{"user calls", fmt.Sprint(un), fmt.Sprint(ug)},
		{"successes", fmt.Sprintf("%d (%.1f%%)", oks(recN), 100*float64(oks(recN))/float64(un)), fmt.Sprintf("%d (%.1f%%)", oks(recG), 100*float64(oks(recG))/float64(ug))},
		{"failed or refused (*)", fmt.Sprint(len(recN.failLat)), fmt.Sprint(len(recG.failLat))},
		{"downstream attempts per user call", fmt.Sprintf("%.2f", float64(dN.attempts.Load())/float64(un)), fmt.Sprintf("%.2f", float64(dG.attempts.Load())/float64(ug))},
		{"peak downstream in-flight", fmt.Sprint(dN.peak.Load()), fmt.Sprint(dG.peak.Load())},
		{"p50 latency of successes", ms(quantile(recN.okLat, 0.5)), ms(quantile(recG.okLat, 0.5))},
		{"p99 latency of successes", ms(quantile(recN.okLat, 0.99)), ms(quantile(recG.okLat, 0.99))},
		{"p99 time to fail", ms(quantile(recN.failLat, 0.99)), ms(quantile(recG.failLat, 0.99))},
		{"slowdown onset -> load shed", secs(recN.firstRefusal(o.slowAt)), secs(recG.firstRefusal(o.slowAt))},
		{"recovery -> full throughput", recov(recN), recov(recG)},
	}
	fmt.Fprintf(w, "\n%-36s %18s %18s\n", "", "naive", "floodgate")
	for _, r := range rows {
		fmt.Fprintf(w, "%-36s %18s %18s\n", r.name, r.naive, r.guard)
	}
	fmt.Fprintln(w, "\nfull throughput: every second from then on had at least 95% of its offered calls succeed.")
	fmt.Fprintf(w, "(*) including the calls still in progress %v after the last second, cancelled then and not in the per-second rows.\n", o.drain)
	if o.slow > o.attemptTimeout {
		fmt.Fprintf(w, "naive's peak in flight passes its pool of %d: an attempt's %v timeout includes its wait for a connection, so most attempts\n"+
			"  go out with milliseconds left and are abandoned at once, while the downstream works on each for %v; each user call\n"+
			"  makes up to 27 attempts. Its backlog of retries keeps the pool full after the heal, so its new calls time out waiting.\n",
			o.pool, o.attemptTimeout, o.slow)
	}
	fmt.Fprintf(w, "floodgate's breaker opens late in the slowdown, not at its onset: it opens once %.0f%% of the calls in its %v window are slow (%v or more)\n"+
		"  or %.0f%% failed (breaker defaults), and the fast calls from before the slowdown take a while to leave that window;\n"+
		"  until then the limiter alone bounds what the downstream is sent.\n",
		100*breaker.DefaultSlowRatio, breaker.DefaultWindow, breaker.DefaultSlowCall, 100*breaker.DefaultFailureRatio)
}
