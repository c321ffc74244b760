package main

import (
	"bytes"
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
		"p99 time to fail", "slowdown onset -> load shed", "recovery -> full throughput", "  0s ok ", "  1s SLOW"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("a 3 s run took %v", took)
	}
}
