// Command promcheck runs every PromQL expression of floodgate's Grafana
// dashboard and Prometheus rules file against a real Prometheus server, through
// its HTTP API, and fails unless each one parses and returns at least one
// series. scripts/e2e-prometheus.sh uses it after a Prometheus has scraped the
// slowdown example through a slowdown:
//
//	promcheck freeport                        # prints a free TCP port on 127.0.0.1
//	promcheck wait -url URL -query EXPR       # waits until EXPR returns a series
//	promcheck check -url URL -dashboard docs/grafana/floodgate.json \
//	    -rules docs/prometheus/floodgate-rules.yml -start UNIX [-expect-firing A,B] \
//	    [-rows R1,R2] [-skip-rows R] [-groups G] [-skip-groups G]
//
// check runs each expression as Grafana does, as a range query from -start to
// now with a 1 s step, after substituting the dashboard's variables: the data
// source, $job and $gate (resolved by running the variables' own label_values
// queries, the first job and every gate, as "All" does), $__rate_interval
// (-rate-interval), $__interval and $__range. A recording rule's expression
// and the series it records must both return a series. An alerting rule's
// expression is run twice: with a bool modifier on its top-level comparisons,
// which must return the series it watches whether or not the alert fires, and
// as written, which tells whether the alert fired during the run (required for
// the alerts named by -expect-firing). It also checks that the server loaded
// every rule of the file and evaluated each without error.
//
// -rows and -skip-rows pick the dashboard rows (by title) whose panels are
// checked, -groups and -skip-groups the rule groups: the slowdown example
// has no fleet, so scripts/e2e-prometheus.sh skips the fleet row and group,
// and scripts/e2e-fleet.sh checks only those against examples/fleet. A name
// that matches no row or group, or a selection that leaves nothing to
// check, is an error.
package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

const usage = `usage:
  promcheck freeport
  promcheck wait -url URL -query EXPR [-timeout 60s] [-pid PID]
  promcheck check -url URL -dashboard FILE -rules FILE -start UNIX [-rate-interval 4s] [-var name=value] [-expect-firing Alert,...]
      [-rows Title,...] [-skip-rows Title,...] [-groups Name,...] [-skip-groups Name,...]`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		err = freePort()
	case "wait":
		err = waitCmd(os.Args[2:])
	case "check":
		err = checkCmd(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promcheck:", err)
		os.Exit(1)
	}
}

// freePort prints a TCP port of 127.0.0.1 that nothing listens on: the kernel
// picks it, and it stays free unless another program takes it before the
// caller binds it.
func freePort() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	return nil
}

// since formats how long ago t was, for progress lines.
func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }
