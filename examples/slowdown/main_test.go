package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{nil, ""},
		{[]string{"-rate", "0"}, "-rate must be in [1, 2000]"},
		{[]string{"-slow-at", "20s", "-heal-at", "10s"}, "want 0 <= -slow-at <= -heal-at <= -duration"},
		{[]string{"-pool", "0"}, "-pool must be at least 1"},
		{[]string{"-attempt-timeout", "0s"}, "must be at least 1ms"},
		{[]string{"-duration", "1h"}, "-duration must be at most 10m"},
		{[]string{"-bogus"}, "flag provided but not defined"},
	} {
		_, err := parseFlags(tc.args)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A short run end to end: real servers, real clients; it checks that the
// program finishes and prints its table, not timings (the machine may be slow).
func TestShortRun(t *testing.T) {
	o, err := parseFlags([]string{"-rate", "20", "-fast", "10ms", "-slow", "400ms", "-slow-at", "1s",
		"-heal-at", "2s", "-duration", "3s", "-attempt-timeout", "200ms", "-deadline", "500ms", "-drain", "500ms"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	start := time.Now()
	if err := run(o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"user calls", "downstream attempts per user call", "peak downstream in-flight",
		"p99 time to fail", "slowdown onset -> load shed", "recovery -> full throughput", "  0s fast ", "  1s SLOW"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("a 3 s run took %v", took)
	}
}

// With -metrics-addr the run serves floodgate's series while it runs.
func TestMetricsEndpoint(t *testing.T) {
	o, err := parseFlags([]string{"-rate", "20", "-fast", "10ms", "-slow", "400ms", "-slow-at", "1s",
		"-heal-at", "2s", "-duration", "3s", "-attempt-timeout", "200ms", "-deadline", "500ms", "-drain", "500ms",
		"-metrics-addr", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(o, pw); pw.Close() }()
	sc := bufio.NewScanner(pr)
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "metrics: "); ok {
			url = u
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if url == "" {
		t.Fatal("no metrics line")
	}
	time.Sleep(1500 * time.Millisecond) // into the slowdown; the assertions below hold at any time
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`floodgate_limit{gate="shipping-quote",side="client"}`,
		`floodgate_calls_total{gate="shipping-quote",outcome="success",side="client"}`,
		`floodgate_breaker_state{gate="shipping-quote",side="client",state="closed"}`,
		`floodgate_attempt_duration_seconds_bucket{gate="shipping-quote",side="client",le="0.1"}`,
		`floodgate_http_hidden_retries_total{gate="shipping-quote",side="client"} 0`,
		`floodgate_limit{gate="metrics",side="server"}`, `floodgate_in_flight{gate="metrics",side="server"} 1`, // this scrape
		`floodgate_http_shed_total{gate="metrics",side="server"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
