// Command dashboard generates floodgate's Grafana dashboard, committed at
// docs/grafana/floodgate.json, from Go with the Grafana Foundation SDK:
//
//	cd dashboard && go run . -out ../docs/grafana/floodgate.json
//
// Without -out it writes the JSON to standard output. The test in this
// package fails when the committed file differs from what this program
// generates. The dashboard reads the series of floodgate's metrics package
// (floodgate_limit, floodgate_in_flight, floodgate_calls_total, ...) and,
// in its last row, those of package fleet's Collector (floodgate_fleet_*);
// every query it runs is checked against a real Prometheus: the fleet row's
// by scripts/e2e-fleet.sh (a Prometheus scraping examples/fleet's
// replicas), the others by scripts/e2e-prometheus.sh (the slowdown
// example).
//
// This is a module of its own so that the library's go.mod never requires
// the Grafana SDK.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "write the dashboard JSON to this file instead of standard output")
	flag.Parse()
	b, err := generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}
