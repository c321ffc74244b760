package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"
)

// waitCmd polls an instant query every 500 ms until it returns a series.
func waitCmd(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	base := fs.String("url", "", "Prometheus base URL, e.g. http://127.0.0.1:9090")
	expr := fs.String("query", "", "PromQL expression to wait for")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	pid := fs.Int("pid", 0, "give up as soon as this process has exited (0: don't watch)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *expr == "" {
		return errors.New("wait: -url and -query are required")
	}
	a := newAPI(*base)
	start := time.Now()
	var last error
	for time.Since(start) < *timeout {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := a.query(ctx, *expr)
		cancel()
		if err == nil && len(s) > 0 {
			fmt.Printf("wait: %s returned %d series after %s\n", *expr, len(s), since(start))
			return nil
		}
		last = err
		if *pid > 0 && syscall.Kill(*pid, 0) != nil {
			return fmt.Errorf("wait: process %d exited before %s returned a series (last error: %v)", *pid, *expr, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("wait: %s returned no series in %s (last error: %v)", *expr, *timeout, last)
}

type varFlags map[string]string

func (v varFlags) String() string { return fmt.Sprint(map[string]string(v)) }
func (v varFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[name] = value
	return nil
}

// checkCmd runs every expression of the dashboard and the rules file; see the
// package doc.
func checkCmd(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	base := fs.String("url", "", "Prometheus base URL, e.g. http://127.0.0.1:9090")
	dashPath := fs.String("dashboard", "", "Grafana dashboard JSON")
	rulesPath := fs.String("rules", "", "Prometheus rules file (YAML); the server must have loaded it")
	startUnix := fs.Int64("start", 0, "start of the range queries, Unix seconds (0: 5 minutes ago)")
	rateInterval := fs.String("rate-interval", "4s", "value of $__rate_interval (Grafana: 4 x the data source's scrape interval at least)")
	expect := fs.String("expect-firing", "", "comma-separated alerts whose condition must have held during the run")
	rowsOnly := fs.String("rows", "", "comma-separated dashboard row titles: check only their panels (empty: all)")
	rowsSkip := fs.String("skip-rows", "", "comma-separated dashboard row titles whose panels are not checked")
	groupsOnly := fs.String("groups", "", "comma-separated rule groups: check only their rules (empty: all)")
	groupsSkip := fs.String("skip-groups", "", "comma-separated rule groups whose rules are not checked")
	vars := varFlags{}
	fs.Var(vars, "var", "name=value: set a dashboard variable instead of resolving it (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *dashPath == "" || *rulesPath == "" {
		return errors.New("check: -url, -dashboard and -rules are required")
	}
	a := newAPI(*base)
	end := time.Now()
	start := end.Add(-5 * time.Minute)
	if *startUnix > 0 {
		start = time.Unix(*startUnix, 0)
	}
	const step = time.Second
	// A range query is evaluated at start, start+step, ... up to end: align
	// start so that end itself is a point, and the latest sample is seen.
	start = end.Add(-(end.Sub(start)/step + 1) * step)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(expr string) ([]series, error) { return a.queryRange(ctx, expr, start, end, step) }

	var failures []string
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		failures = append(failures, msg)
		fmt.Println("FAIL " + msg)
	}
	report := func(n int, err error, what, expr string) {
		switch {
		case err != nil:
			fail("%s: %v\n       %s", what, err, oneLine(expr))
		case n == 0:
			fail("%s: no series\n       %s", what, oneLine(expr))
		default:
			fmt.Printf("ok %3d series  %s\n       %s\n", n, what, oneLine(expr))
		}
	}

	// The dashboard: variables first, in order, as Grafana resolves them.
	dvars, all, err := readDashboard(*dashPath)
	if err != nil {
		return err
	}
	rows := parseSelection(*rowsOnly, *rowsSkip)
	var targets []target
	known := map[string]bool{}
	for _, t := range all {
		known[t.row] = true
		if rows.has(t.row) {
			targets = append(targets, t)
		}
	}
	if bad := rows.unknown(known); bad != nil {
		return fmt.Errorf("%s: no row with queries titled %q", *dashPath, bad)
	}
	if len(targets) == 0 {
		return fmt.Errorf("%s: -rows and -skip-rows leave no panel query", *dashPath)
	}
	values := map[string]string{
		"__rate_interval": *rateInterval,
		"__interval":      step.String(),
		"__range":         end.Sub(start).Round(time.Second).String(),
	}
	fmt.Printf("== %s: %d variables, %d panel queries; range %s, step %s, $__rate_interval=%s\n",
		*dashPath, len(dvars), len(targets), end.Sub(start).Round(time.Second), step, *rateInterval)
	for _, v := range dvars {
		switch v.kind {
		case "datasource", "interval", "constant", "custom", "textbox":
			values[v.name] = v.name // not PromQL; referenced only as a data source
			continue
		case "query":
		default:
			return fmt.Errorf("variable %s: type %q not supported", v.name, v.kind)
		}
		q, err := substitute(v.query, values)
		if err != nil {
			return fmt.Errorf("variable %s: %w", v.name, err)
		}
		promql, label, err := labelValuesQuery(q)
		if err != nil {
			return fmt.Errorf("variable %s: %w", v.name, err)
		}
		s, err := run(promql)
		report(len(s), err, fmt.Sprintf("variable $%s: %s", v.name, v.query), promql)
		seen := map[string]bool{}
		var got []string
		for _, x := range s {
			if val := x.Metric[label]; val != "" && !seen[val] {
				seen[val] = true
				got = append(got, val)
			}
		}
		sort.Strings(got)
		switch fixed, ok := vars[v.name]; {
		case ok:
			if !seen[fixed] {
				fail("variable $%s: %q is not among its values %q", v.name, fixed, got)
			}
			values[v.name] = fixed
		case len(got) == 0:
			values[v.name] = "" // reported above; the panels will fail too
		case v.multi || v.includeAll:
			values[v.name] = allValue(got) // "All", as Grafana sends it
		default:
			values[v.name] = got[0]
		}
		fmt.Printf("       $%s = %s (values: %s)\n", v.name, values[v.name], strings.Join(got, ", "))
	}
	for _, t := range targets {
		expr, err := substitute(t.expr, values)
		if err != nil {
			fail("panel %q %s: %v", t.panel, t.refID, err)
			continue
		}
		s, err := run(expr)
		report(len(s), err, fmt.Sprintf("panel %q %s", t.panel, t.refID), expr)
	}

	// The rules: as written in the file, and as the server loaded them.
	allRules, err := readRules(*rulesPath)
	if err != nil {
		return err
	}
	groups := parseSelection(*groupsOnly, *groupsSkip)
	var rules []rule
	known = map[string]bool{}
	for _, r := range allRules {
		known[r.group] = true
		if groups.has(r.group) {
			rules = append(rules, r)
		}
	}
	if bad := groups.unknown(known); bad != nil {
		return fmt.Errorf("%s: no rule group named %q", *rulesPath, bad)
	}
	if len(rules) == 0 {
		return fmt.Errorf("%s: no rules found (or -groups and -skip-groups leave none)", *rulesPath)
	}
	fmt.Printf("== %s: %d rules\n", *rulesPath, len(rules))
	firing := map[string]bool{}
	for _, r := range rules {
		if r.record != "" {
			s, err := run(r.expr)
			report(len(s), err, "record "+r.record, r.expr)
			s, err = run(r.record)
			report(len(s), err, "recorded by the server: "+r.record, r.record)
			continue
		}
		watched := withBool(r.expr)
		s, err := run(watched)
		report(len(s), err, "alert "+r.alert+" (with bool: the series it watches)", watched)
		s, err = run(r.expr)
		if err != nil {
			fail("alert %s: %v", r.alert, err)
			continue
		}
		firing[r.alert] = len(s) > 0
		fmt.Printf("       condition held during the run: %v (%d series)\n", len(s) > 0, len(s))
	}
	for _, name := range strings.Split(*expect, ",") {
		if name = strings.TrimSpace(name); name != "" && !firing[name] {
			fail("alert %s: its condition never held during the run, expected it to", name)
		}
	}
	loaded, err := a.rules(ctx)
	if err != nil {
		fail("GET /api/v1/rules: %v", err)
	} else {
		// Every rule of the file, loaded in its group, in the file's order
		// within the group, healthy at its last evaluation.
		inFile := map[string][]string{}
		for _, r := range allRules {
			inFile[r.group] = append(inFile[r.group], r.name())
		}
		onServer := map[string][]string{}
		for _, l := range loaded {
			onServer[l.Group] = append(onServer[l.Group], l.Name)
			if l.Health != "ok" {
				fail("rule %s: health %q on the server: %s", l.Name, l.Health, l.LastError)
			}
		}
		if fmt.Sprint(inFile) != fmt.Sprint(onServer) {
			fail("the server loaded the rules %v, the file has %v", onServer, inFile)
		} else {
			fmt.Printf("ok the server loaded all %d rules of the file and evaluated each without error\n", len(loaded))
		}
	}

	if failures != nil {
		return fmt.Errorf("%d check(s) failed:\n  %s", len(failures), strings.Join(failures, "\n  "))
	}
	fmt.Printf("== all %d dashboard queries checked (of %d), %d variables and %d rules (of %d) return series\n",
		len(targets), len(all), len(dvars), len(rules), len(allRules))
	return nil
}
