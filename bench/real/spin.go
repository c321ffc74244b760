package real

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// spinEnv names the environment variable that makes a process started by
// StartSpin spin instead of running: its value is how long, a
// time.ParseDuration string.
const spinEnv = "FLOODGATE_REAL_SPIN"

// SpinIfAsked spins one core and exits when the process was started by
// StartSpin; otherwise it returns at once. Call it first in main and in
// TestMain, so that the re-executed binary only spins.
func SpinIfAsked() {
	v := os.Getenv(spinEnv)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > 10*time.Minute {
		fmt.Fprintf(os.Stderr, "%s=%q: want a duration in (0, 10m]\n", spinEnv, v)
		os.Exit(2)
	}
	end := time.Now().Add(d)
	for x := uint64(1); ; x = x*6364136223846793005 + 1442695040888963407 {
		if x&0xffff == 0 && time.Now().After(end) {
			os.Exit(0)
		}
	}
}

// StartSpin starts another OS process (this binary again, with GOMAXPROCS
// 1) that keeps one core busy for d plus a second at most, so that it
// ends on its own even if this process dies first. The returned stop
// function kills it and returns once it has exited; it reports an error if
// the process had already exited, so that a spinner that did not spin
// the whole phase is noticed.
func StartSpin(d time.Duration) (func() error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("busy client: %w", err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), spinEnv+"="+(d+time.Second).String(), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("busy client: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return func() error {
		select {
		case err := <-exited:
			return fmt.Errorf("busy client: the spinning process ended before the phase did: %v", err)
		default:
		}
		_ = cmd.Process.Kill()
		<-exited
		return nil
	}, nil
}
