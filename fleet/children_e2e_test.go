//go:build e2e

package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// execChildren re-executes the test binary once per element of envs, as
// children p1, p2, ... with those variables added to this process's
// environment, runs started (if not nil) while they do, and returns the
// report each printed after childOutput once all have exited. A child that
// fails or prints no report fails the test.
func execChildren[R any](t *testing.T, envs [][]string, started func()) []R {
	t.Helper()
	type out struct {
		stdout, stderr bytes.Buffer
		err            error
	}
	outs := make([]*out, len(envs))
	var wg sync.WaitGroup
	for i, env := range envs {
		o := &out{}
		outs[i] = o
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append(os.Environ(), childEnv+"="+fmt.Sprintf("p%d", i+1)), env...)
		cmd.Stdout, cmd.Stderr = &o.stdout, &o.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { o.err = cmd.Wait() })
	}
	if started != nil {
		started()
	}
	wg.Wait()
	reports := make([]R, len(outs))
	for i, o := range outs {
		if o.err != nil {
			t.Fatalf("child %d: %v\n%s", i+1, o.err, o.stderr.String())
		}
		found := false
		sc := bufio.NewScanner(&o.stdout)
		sc.Buffer(nil, 64<<20) // a cap child's report holds every sample
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), childOutput); ok {
				if err := json.Unmarshal([]byte(line), &reports[i]); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("child %d printed no report\n%s", i+1, o.stderr.String())
		}
	}
	return reports
}
