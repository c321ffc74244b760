//go:build e2e

package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// freePort returns a loopback port nothing listens on now, below 50000 so
// that a cluster node's bus port (port + 10000) is valid.
func freePort(t *testing.T) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port >= 50000 {
			continue
		}
		if bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			bus.Close()
			return port
		}
	}
	t.Fatal("no free port below 50000 with a free bus port")
	return 0
}

// startRedis runs redis-server with args on 127.0.0.1:port (no
// persistence, in its own temp dir), killed at the test's end, and waits
// until it answers PING.
func startRedis(t *testing.T, port int, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is not on PATH (CI is set, so this is a failure): bash scripts/e2e-fleet.sh installs it")
		}
		t.Skipf("redis-server is not on PATH: bash scripts/e2e-fleet.sh installs it and runs these tests")
	}
	s := &server{t: t, addr: fmt.Sprintf("127.0.0.1:%d", port), args: args}
	s.start()
	t.Cleanup(s.kill)
}

// startCluster starts a Redis Cluster of three masters (no replicas), the
// 16384 slots split between them, and returns their addresses once every
// node reports cluster_state:ok.
func startCluster(t *testing.T) []string {
	t.Helper()
	var addrs []string
	for range 3 {
		port := freePort(t)
		dir := t.TempDir()
		startRedis(t, port, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	ctx := context.Background()
	nodes := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a})
		defer nodes[i].Close()
	}
	for i, n := range nodes {
		lo, hi := i*16384/len(nodes), (i+1)*16384/len(nodes)-1
		if err := n.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE %d %d on %s: %v", lo, hi, addrs[i], err)
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(addrs[i])
			if err := nodes[0].ClusterMeet(ctx, host, port).Err(); err != nil {
				t.Fatalf("CLUSTER MEET %s: %v", addrs[i], err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range nodes {
		for {
			info, err := n.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ok after 20 s: %v %q", err, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs
}

// startSentinel starts a master and one Sentinel monitoring it as
// "floodgate", and returns the Sentinel's address and the master's name
// once the Sentinel reports the master.
func startSentinel(t *testing.T) (string, string) {
	t.Helper()
	master := freePort(t)
	startRedis(t, master)
	port := freePort(t)
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor floodgate 127.0.0.1 %d 1\nsentinel down-after-milliseconds floodgate 5000\n", master)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	startRedis(t, port, conf, "--sentinel")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer s.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := s.GetMasterAddrByName(context.Background(), "floodgate").Result()
		if err == nil && len(got) == 2 && got[1] == fmt.Sprint(master) {
			return addr, "floodgate"
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel does not report the master after 20 s: %v %v", got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTopologies: fleet mode through a Redis Cluster and through Sentinel,
// with redis.UniversalClient as the README shows it: two fleets (two
// processes' worth) attach one gate each, divide a FleetLimit of 10 and
// share the gate's budget; every one of the gate's keys (budget, syncs,
// breaker, cap) lands in one cluster slot (its hash tag), and no sync
// fails but by its timeout.
func TestTopologies(t *testing.T) {
	cases := []struct {
		name string
		opts func(t *testing.T) *redis.UniversalOptions
	}{
		{"cluster", func(t *testing.T) *redis.UniversalOptions {
			return &redis.UniversalOptions{Addrs: startCluster(t)}
		}},
		{"sentinel", func(t *testing.T) *redis.UniversalOptions {
			addr, master := startSentinel(t)
			return &redis.UniversalOptions{Addrs: []string{addr}, MasterName: master}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts(t)
			p := prefix(t)
			name := "topology"
			var fleets []*Fleet
			var gates []*floodgate.Gate
			var logs [2]logErrs
			for i := range 2 {
				client := redis.NewUniversalClient(opts)
				t.Cleanup(func() { client.Close() })
				if i == 0 {
					switch c.name {
					case "cluster":
						if _, ok := client.(*redis.ClusterClient); !ok {
							t.Fatalf("UniversalClient is a %T, want *redis.ClusterClient", client)
						}
					case "sentinel":
						if _, ok := client.(*redis.Client); !ok {
							t.Fatalf("UniversalClient is a %T, want the failover *redis.Client", client)
						}
					}
				}
				f, err := New(client, Config{Prefix: p, Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond,
					FleetLimit: 10, HeartbeatTTL: 300 * time.Millisecond, Logger: logs[i].logger()})
				if err != nil {
					t.Fatal(err)
				}
				b, err := f.Budget(name)
				if err != nil {
					t.Fatal(err)
				}
				g, err := floodgate.New(name, floodgate.WithRetry(retry.Config{Budget: b, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
					floodgate.WithBreaker(breaker.Config{MinCalls: 1e6})) // the budget's test: the breaker stays closed
				if err != nil {
					t.Fatal(err)
				}
				if err := f.Attach(g); err != nil {
					t.Fatal(err)
				}
				if err := f.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				fleets, gates = append(fleets, f), append(gates, g)
			}
			waitShared := func() {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for _, f := range fleets {
					for f.State() != Shared {
						if time.Now().After(deadline) {
							t.Fatalf("state %v after 10 s, fallbacks %d", f.State(), f.Fallbacks())
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
			}
			waitShared()
			// The fleet-wide cap: the two divide FleetLimit 10.
			deadline := time.Now().Add(10 * time.Second)
			for {
				s0, live0, ok0 := fleets[0].Share(name)
				s1, live1, ok1 := fleets[1].Share(name)
				if ok0 && ok1 && s0 == 5 && s1 == 5 && live0 == 2 && live1 == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("shares %d, %d (live %d, %d) after 10 s, want 5 and 5 of FleetLimit 10", s0, s1, live0, live1)
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Retries of the first fleet's gate draw the shared bucket down;
			// the second fleet's next sync sees it.
			before, _ := fleets[1].Tokens(name)
			fail := errors.New("down")
			// 100 calls over 0.5 s (10 syncs), every attempt failing: each sync
			// refills the first fleet's lease from the bucket, faster than its
			// deposits (0.1 a call) fill it.
			attempts := 0
			for range 100 {
				gates[0].Guard(context.Background(), func(context.Context) error { attempts++; return retry.Transient(fail) })
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("%s: 100 calls made %d attempts", c.name, attempts)
			deadline = time.Now().Add(5 * time.Second)
			for {
				after, ok := fleets[1].Tokens(name)
				if ok && after <= before-5 {
					t.Logf("%s: the fleet bucket fell from %.1f to %.1f tokens as the other fleet retried", c.name, before, after)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the second fleet still sees %.1f tokens (before %.1f) 5 s after the first one's retries", after, before)
				}
				time.Sleep(10 * time.Millisecond)
			}
			// No sync failed but by its 50 ms timeout, which a loaded
			// machine (CI under -race) can miss: a CROSSSLOT or a failover
			// error would fail one.
			waitShared()
			for i, f := range fleets {
				for _, err := range logs[i].all() {
					if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errPending) {
						t.Errorf("fleet %d: a sync failed with %v; want none but timeouts", i, err)
					} else {
						t.Logf("fleet %d: a sync timed out (%v): local mode until the next one", i, err)
					}
				}
				if got := uint64(len(logs[i].all())); f.Fallbacks() != got {
					t.Errorf("fleet %d: fallbacks %d, but %d logged", i, f.Fallbacks(), got)
				}
			}
			if c.name != "cluster" {
				return
			}
			// Every key of the gate in one slot: the hash tag.
			client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: opts.Addrs})
			defer client.Close()
			ctx := context.Background()
			slots := map[int64][]string{}
			err := client.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
				keys, err := n.Keys(ctx, "{"+p+":"+name+"}*").Result()
				for _, k := range keys {
					s, err := client.ClusterKeySlot(ctx, k).Result()
					if err != nil {
						return err
					}
					slots[s] = append(slots[s], k)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(slices.Concat(slices.Collect(maps.Values(slots))...)); n < 6 {
				t.Errorf("the gate has %d keys in the cluster, want budget, 2 syncs, breaker, its counts and cap: %v", n, slots)
			}
			if len(slots) != 1 {
				t.Fatalf("the gate's keys are in %d slots, want 1: %v", len(slots), slots)
			}
			for s, keys := range slots {
				t.Logf("cluster: the gate's %d keys are all in slot %d: %v", len(keys), s, keys)
			}
		})
	}
}

// logErrs keeps the "err" attribute of each log record it is given: the
// error of a sync that began a stretch of local mode.
type logErrs struct {
	mu   sync.Mutex
	errs []error
}

func (l *logErrs) logger() *slog.Logger { return slog.New(l) }

func (l *logErrs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logErrs) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}
func (l *logErrs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logErrs) WithGroup(string) slog.Handler      { return l }

// all returns the errors kept so far.
func (l *logErrs) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}
