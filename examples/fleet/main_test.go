package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a replica when the test binary is re-executed as one (run
// starts os.Executable), else the tests under goleak.
func TestMain(m *testing.M) {
	if o, err := parseFlags(os.Args[1:], io.Discard); err == nil && o.replica != "" {
		if err := replica(o); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{nil, ""},
		{[]string{"-replicas", "0"}, "-replicas must be in [1, 20]"},
		{[]string{"-calls", "0"}, "-calls must be in [1, 1000000]"},
		{[]string{"-span", "2m"}, "-span must be in [0, 1m]"},
		{[]string{"-fleet-limit", "-1"}, "-fleet-limit must be in [0, 1000]"},
		{[]string{"-fleet-limit", "1001"}, "-fleet-limit must be in [0, 1000]"},
		{[]string{"-fleet-limit", "0"}, ""},
		{[]string{"-bogus"}, "flag provided but not defined"},
		{[]string{"-metrics-addrs", "127.0.0.1:1,127.0.0.1:2"}, "-metrics-addrs must have one address per replica (3), got 2"},
		{[]string{"-replicas", "2", "-metrics-addrs", "127.0.0.1:1,127.0.0.1:2"}, ""},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("parseFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}
