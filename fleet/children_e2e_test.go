//go:build e2e

package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
// fails or prints no report fails the test. A child of runChild prints
// childReady once its gate runs and waits for its stdin to close before
// its first call: execChildren closes every child's stdin once all have
// printed it (or exited), then runs started, so that the children's calls
// start together and the faults fall inside them however slowly each
// child starts (on a loaded machine the children of TestFaultRedisRestart
// began their calls after the restart and saw no kill). With started, a
// child that exits without printing childReady fails the test.
func execChildren[R any](t *testing.T, envs [][]string, started func()) []R {
	t.Helper()
	type out struct {
		stdout, stderr bytes.Buffer
		err            error
	}
	outs := make([]*out, len(envs))
	ready := make(chan struct{}, len(envs))
	rws := make([]*readyWriter, len(envs))
	var stdins []io.WriteCloser
	var wg sync.WaitGroup
	for i, env := range envs {
		o := &out{}
		outs[i] = o
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append(os.Environ(), childEnv+"="+fmt.Sprintf("p%d", i+1)), env...)
		rw := &readyWriter{buf: &o.stdout, ready: ready}
		rws[i] = rw
		cmd.Stdout, cmd.Stderr = rw, &o.stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdins = append(stdins, stdin)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			o.err = cmd.Wait()
			rw.signal() // an exited child is not waited for
		})
	}
	for range envs {
		<-ready
	}
	for _, stdin := range stdins {
		stdin.Close() // go: every child is ready
	}
	if started != nil {
		started()
	}
	wg.Wait()
	for i, rw := range rws {
		if started != nil && !rw.seen {
			t.Errorf("child %d exited before it was ready, so the faults missed it", i+1)
		}
	}
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
	seen  bool // childReady was printed; read after Wait
}

func (w *readyWriter) Write(p []byte) (int, error) {
	n, err := w.buf.Write(p)
	// the marker may straddle two writes: look at the new bytes and the
	// marker's length before them (a cap child prints megabytes)
	b := w.buf.Bytes()
	if !w.seen && bytes.Contains(b[max(0, len(b)-len(p)-len(childReady)):], []byte(childReady)) {
		w.seen = true
		w.signal()
	}
	return n, err
}

func (w *readyWriter) signal() { w.once.Do(func() { w.ready <- struct{}{} }) }
