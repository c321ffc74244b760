//go:build e2e

// The tests against a real Redis build only with the e2e tag, as
// scripts/e2e-fleet.sh runs them:
//
//	go test -tags e2e -race -count=1 ./...   # with FLOODGATE_REDIS_ADDR set, redis-server on PATH
//
// The whole suite's plain `go test ./...` runs under CI without a Redis,
// where these tests must fail, not skip; the script runs them with the tag
// and a Redis it started.

package fleet

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisAddrEnv holds the address of the Redis scripts/e2e-fleet.sh
// started (the same variable as bench/real's).
const redisAddrEnv = "FLOODGATE_REDIS_ADDR"

// redisAddr returns the script's Redis, skipping the test without one
// (failing it under CI).
func redisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(redisAddrEnv)
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set (CI is set, so this is a failure): run bash scripts/e2e-fleet.sh, which starts a Redis", redisAddrEnv)
		}
		t.Skipf("%s is not set: run bash scripts/e2e-fleet.sh, which starts a Redis and runs these tests", redisAddrEnv)
	}
	return addr
}

// newClient returns a client of addr, closed at the test's end.
func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// prefix returns a Config.Prefix no other test or run uses.
func prefix(t testing.TB) string {
	return fmt.Sprintf("fleettest-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

// server is a redis-server the test started itself, to kill and restart.
type server struct {
	t    *testing.T
	addr string
	args []string // more redis-server arguments, before the common ones
	cmd  *exec.Cmd
}

// ownRedis starts a redis-server on a free loopback port (no persistence),
// stopped at the test's end. redis-server must be on PATH: without it the
// test skips, or fails under CI.
func ownRedis(t *testing.T) *server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not on PATH (CI is set, so this is a failure): bash scripts/e2e-fleet.sh installs it")
		}
		t.Skipf("redis-server is not on PATH: bash scripts/e2e-fleet.sh installs it and runs these tests")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{t: t, addr: addr}
	s.start()
	t.Cleanup(s.kill)
	return s
}

// start runs the server and waits until it answers PING (up to 10 s).
func (s *server) start() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	args := append(slices.Clone(s.args), "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--dir", s.t.TempDir(), "--daemonize", "no")
	s.cmd = exec.Command("redis-server", args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("redis-server %v on %s does not answer PING", s.args, s.addr)
}

// kill stops the server at once (SIGKILL), if it runs.
func (s *server) kill() {
	if s.cmd != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}
