// Command fleet runs 3 replicas of a service (this program, re-executed)
// that share one gate's retry budget through Redis (package fleet) while
// their downstream fails every call, and prints the fleet table: calls,
// retries and fallbacks per replica, and the bound the fleet stays within.
//
//	go run . [-redis 127.0.0.1:6379] [-replicas 3] [-calls 5000] [-span 3s] [-metrics-addrs A1,A2,A3]
//
// Without -redis it starts its own redis-server (it must be installed) on
// a free loopback port, with no persistence, and stops it at exit. With
// -metrics-addrs, one address per replica, each replica serves /metrics
// there while it runs: its gate's series (package metrics) and its fleet's
// (fleet.Collector); scripts/e2e-fleet.sh has a Prometheus scrape them.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/fleet"
	"github.com/floodgate-go/floodgate/metrics"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// options are the command line's.
type options struct {
	redis    string
	replicas int
	calls    int
	span     time.Duration
	limit    int      // -fleet-limit: Config.FleetLimit
	metrics  []string // with -metrics-addrs: one /metrics address per replica
	replica  string   // set in a replica: its name
	prefix   string   // the key prefix the replicas share
	addr     string   // set in a replica: its /metrics address, if any
}

// parseFlags reads args; flag's own messages and the usage go to out.
func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("fleet", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.redis, "redis", "", "Redis address; empty: start a redis-server")
	fs.IntVar(&o.replicas, "replicas", 3, "replicas to run, [1, 20]")
	fs.IntVar(&o.calls, "calls", 5000, "user calls in all, [1, 1e6]")
	fs.DurationVar(&o.span, "span", 3*time.Second, "time the calls are spread over, [0, 1m]")
	fs.IntVar(&o.limit, "fleet-limit", 30, "fleet-wide concurrency cap the replicas divide (Config.FleetLimit), [0, 1000]; 0: none")
	fs.StringVar(&o.replica, "replica", "", "internal: run as the replica of this name")
	fs.StringVar(&o.prefix, "prefix", "", "internal: the key prefix")
	addrs := fs.String("metrics-addrs", "", "comma-separated host:port, one per replica: serve /metrics there; empty: none")
	fs.StringVar(&o.addr, "metrics-addr", "", "internal: the replica's /metrics address")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *addrs != "" {
		o.metrics = strings.Split(*addrs, ",")
	}
	switch {
	case o.metrics != nil && len(o.metrics) != o.replicas:
		return o, fmt.Errorf("-metrics-addrs must have one address per replica (%d), got %d", o.replicas, len(o.metrics))
	case o.replicas < 1 || o.replicas > 20:
		return o, fmt.Errorf("-replicas must be in [1, 20], got %d", o.replicas)
	case o.calls < 1 || o.calls > 1e6:
		return o, fmt.Errorf("-calls must be in [1, 1000000], got %d", o.calls)
	case o.limit < 0 || o.limit > 1000:
		return o, fmt.Errorf("-fleet-limit must be in [0, 1000], got %d", o.limit)
	case o.span < 0 || o.span > time.Minute:
		return o, fmt.Errorf("-span must be in [0, 1m], got %v", o.span)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		return
	}
	if err == nil {
		if o.replica != "" {
			err = replica(o)
		} else {
			err = run(o, os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// row is one replica's line of the table, printed by the replica as JSON.
type row struct {
	Name      string
	Calls     int
	Retries   int
	Fallbacks uint64
	State     string
	Cap       int // the limiter's fleet-wide cap at the end (its share of -fleet-limit); 0: none
}

var errDown = errors.New("downstream down")

// replica makes its calls through a gate whose budget is the fleet's and
// prints its row.
func replica(o options) error {
	client := redis.NewClient(&redis.Options{Addr: o.redis})
	defer client.Close()
	f, err := fleet.New(client, fleet.Config{Prefix: o.prefix, FleetLimit: o.limit})
	if err != nil {
		return err
	}
	budget, err := f.Budget("downstream")
	if err != nil {
		return err
	}
	c := metrics.NewCollector()
	g, err := floodgate.New("downstream", c.Observe(),
		floodgate.WithRetry(retry.Config{Budget: budget, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}),
		floodgate.WithBreaker(breaker.Config{MinCalls: 1e6})) // the breaker never opens: the budget alone limits retries
	if err != nil {
		return err
	}
	if err := f.Attach(g); err != nil { // the fleet's breaker too (closed here: MinCalls 1e6)
		return err
	}
	if o.addr != "" {
		stop, err := serveMetrics(o.addr, f, g.Name(), c)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := f.Start(); err != nil {
		return err
	}
	r := row{Name: o.replica, Calls: o.calls}
	began := time.Now()
	for i := range o.calls {
		time.Sleep(time.Until(began.Add(o.span * time.Duration(i) / time.Duration(o.calls))))
		_ = g.Guard(context.Background(), func(context.Context) error {
			r.Retries++
			return retry.Transient(errDown)
		})
		r.Retries-- // the first attempt
	}
	r.State = f.State().String() // before Close, which makes it local
	r.Cap = g.Limiter().Cap()
	f.Close()
	r.Fallbacks = f.Fallbacks()
	return json.NewEncoder(os.Stdout).Encode(r)
}

// run starts a Redis if none is given, runs the replicas and prints the
// table to w.
func run(o options, w io.Writer) error {
	if o.redis == "" {
		addr, stop, err := startRedis()
		if err != nil {
			return err
		}
		defer stop()
		o.redis = addr
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("example-%d", time.Now().UnixNano())
	outs := make([]bytes.Buffer, o.replicas)
	errs := make([]error, o.replicas)
	var wg sync.WaitGroup
	for i := range o.replicas {
		n := o.calls*(i+1)/o.replicas - o.calls*i/o.replicas
		args := []string{"-replica", fmt.Sprintf("r%d", i+1), "-redis", o.redis, "-prefix", prefix,
			"-calls", fmt.Sprint(n), "-span", o.span.String(), "-fleet-limit", fmt.Sprint(o.limit)}
		if o.metrics != nil {
			args = append(args, "-metrics-addr", o.metrics[i])
		}
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = &outs[i], os.Stderr
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d replicas, one gate, downstream failing every call, fleet budget Max %d, Lease %d, Ratio %v, FleetLimit %d\n",
		o.replicas, fleet.DefaultMax, fleet.DefaultLease, fleet.DefaultRatio, o.limit)
	fmt.Fprintf(w, "%-8s %7s %8s %10s %7s %4s\n", "replica", "calls", "retries", "fallbacks", "state", "cap")
	var calls, retries, caps int
	for i := range outs {
		var r row
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				return fmt.Errorf("replica %d: %w", i+1, err)
			}
		}
		fmt.Fprintf(w, "%-8s %7d %8d %10d %7s %4d\n", r.Name, r.Calls, r.Retries, r.Fallbacks, r.State, r.Cap)
		calls += r.Calls
		retries += r.Retries
		caps += r.Cap
	}
	bound := fleet.DefaultRatio*float64(calls) + fleet.DefaultMax + float64(o.replicas)*fleet.DefaultLease
	local := fleet.DefaultRatio*float64(calls) + float64(o.replicas)*retry.DefaultBudgetMax
	fmt.Fprintf(w, "%-8s %7d %8d %10s %7s %4d\n", "fleet", calls, retries, "", "", caps)
	fmt.Fprintf(w, "bound: 0.1 × calls + Max + replicas × Lease = %.0f retries; %d local budgets would allow %.0f\n",
		bound, o.replicas, local)
	return nil
}

// serveMetrics serves the gate's series and the fleet's on addr's
// /metrics until stop is called.
func serveMetrics(addr string, f *fleet.Fleet, gate string, c *metrics.Collector) (stop func(), err error) {
	fc, err := fleet.NewCollector(f)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	if err := reg.Register(fc); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gate %s: -metrics-addr: %w", gate, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		srv.Close()
		<-done
	}, nil
}

// startRedis starts redis-server on a free loopback port with no
// persistence and returns its address and how to stop it.
func startRedis() (string, func(), error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return "", nil, errors.New("redis-server is not installed: install it, or give -redis")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "fleet-example")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr, stop, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("redis-server on %s does not answer: %w", addr, err)
}
