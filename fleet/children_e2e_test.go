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
// fails or prints no report fails the test. started runs once every child
// has printed childReady (or exited), so that its faults fall inside the
// children's calls however slowly they start: on a loaded machine the
// children of TestFaultRedisRestart began their calls after the restart
// and saw no kill.
func execChildren[R any](t *testing.T, envs [][]string, started func()) []R {
	t.Helper()
	type out struct {
		stdout, stderr bytes.Buffer
		err            error
	}
	outs := make([]*out, len(envs))
	ready := make(chan struct{}, len(envs))
	var wg sync.WaitGroup
	for i, env := range envs {
		o := &out{}
		outs[i] = o
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append(os.Environ(), childEnv+"="+fmt.Sprintf("p%d", i+1)), env...)
		rw := &readyWriter{buf: &o.stdout, ready: ready}
		cmd.Stdout, cmd.Stderr = rw, &o.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			o.err = cmd.Wait()
			rw.signal() // an exited child is not waited for
		})
	}
	if started != nil {
		for range envs {
			<-ready
		}
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

// readyWriter is a child's stdout: it keeps what the child prints in buf
// and sends on ready once, when childReady has been printed (or signal is
// called). exec's copying goroutine is its only writer, and Wait returns
// after it ends, so Write and signal never run at once.
type readyWriter struct {
	buf   *bytes.Buffer
	ready chan<- struct{}
	once  sync.Once
}

func (w *readyWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	// the marker may straddle two writes: look at the new bytes and the
	// marker's length before them (a cap child prints megabytes)
	b := w.buf.Bytes()
	if bytes.Contains(b[max(0, len(b)-len(p)-len(childReady)):], []byte(childReady)) {
		w.signal()
	}
	return n, err
}

func (w *readyWriter) signal() { w.once.Do(func() { w.ready <- struct{}{} }) }
