package fleet

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Invalid configuration is an error naming the field; no Redis call.
func TestConfigRejected(t *testing.T) {
	client := redis.NewClient(&redis.Options{})
	defer client.Close()
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Prefix: "a{b"}, "Prefix"},
		{Config{Prefix: strings.Repeat("p", 65)}, "Prefix"},
		{Config{Interval: 5 * time.Millisecond}, "Interval"},
		{Config{Interval: 11 * time.Second}, "Interval"},
		{Config{Timeout: 200 * time.Millisecond}, "Timeout"},
		{Config{Timeout: -time.Millisecond}, "Timeout"},
		{Config{KeyTTL: 500 * time.Millisecond}, "KeyTTL"},
		{Config{Max: 0.5}, "Max"},
		{Config{Max: 2e6}, "Max"},
		{Config{Max: 20.0005}, "Max"},
		{Config{Ratio: 2}, "Ratio"},
		{Config{Ratio: 0.0015}, "Ratio"},
		{Config{Lease: 0.5}, "Lease"},
		{Config{Max: 5, Lease: 6}, "Lease"},
		{Config{Lease: 4, LocalMax: 3}, "LocalMax"},
		{Config{LocalMax: 2e6}, "LocalMax"},
	} {
		_, err := New(client, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := New(nil, Config{}); err == nil || !strings.Contains(err.Error(), "client") {
		t.Errorf("New(nil) = %v, want an error naming the client", err)
	}
}

// The zero Config's defaults, in credits; a small Max lowers Lease.
func TestConfigDefaults(t *testing.T) {
	s, err := validate(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Prefix != "floodgate" || s.Interval != 100*time.Millisecond || s.Timeout != 50*time.Millisecond ||
		s.KeyTTL != 10*time.Minute || s.max != 20000 || s.lease != 2000 || s.localMax != 20000 {
		t.Errorf("defaults: %+v", s)
	}
	if s, err := validate(Config{Max: 1}); err != nil || s.lease != 1000 {
		t.Errorf("Max 1: lease %d credits, err %v; want 1000, nil", s.lease, err)
	}
}

// Budget: the same budget for the same name, holding Lease tokens; errors
// for a bad name, after Close; Start twice is an error.
func TestBudgetAndLifecycle(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	f, err := New(client, Config{Lease: 3, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	b1, err := f.Budget("quotes")
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := f.Budget("quotes"); b2 != b1 || b1.Tokens() != 3 {
		t.Errorf("second Budget(quotes) is another budget, or %v tokens, want the same, 3", b1.Tokens())
	}
	for _, name := range []string{"", "a{b}"} {
		if _, err := f.Budget(name); err == nil {
			t.Errorf("Budget(%q) accepted", name)
		}
	}
	if _, ok := f.Tokens("quotes"); ok {
		t.Error("Tokens before any sync: ok")
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err == nil {
		t.Error("second Start accepted")
	}
	f.Close()
	f.Close()
	if _, err := f.Budget("other"); err == nil {
		t.Error("Budget after Close accepted")
	}
	if err := f.Start(); err == nil {
		t.Error("Start after Close accepted")
	}
}

// Redis refuses connections: within a few intervals the process is in
// local mode, counted once, and its budget earns up to LocalMax as
// without fleet mode. Close leaves no goroutine (goleak).
func TestRefusedIsLocal(t *testing.T) {
	var logs logCount
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer client.Close()
	f, err := New(client, Config{Interval: 10 * time.Millisecond, Timeout: 10 * time.Millisecond, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := f.Budget("quotes")
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	for f.Fallbacks() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	for range 1000 {
		b.Deposit()
	}
	time.Sleep(50 * time.Millisecond) // several failed syncs
	f.Close()
	if f.State() != Local || f.Fallbacks() != 1 || b.Tokens() != 20 || logs.n.Load() != 1 {
		t.Errorf("state %v, %d fallbacks, %v tokens, %d log lines; want local, 1, 20, 1",
			f.State(), f.Fallbacks(), b.Tokens(), logs.n.Load())
	}
}

// A Redis that accepts and never answers (the client ignores the context's
// deadline: ContextTimeoutEnabled false, ReadTimeout 1 s): a sync gives up
// at Timeout, the next one sends nothing while the first is in flight (one
// connection, not two), and Close waits for it.
func TestStalledRedisTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn // held open, never answered
	var mu sync.Mutex
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ReadTimeout: time.Second})
	f, err := New(client, Config{Interval: 100 * time.Millisecond, Timeout: 20 * time.Millisecond, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	f.Budget("quotes")
	began := time.Now()
	f.syncAll()
	first := time.Since(began)
	began = time.Now()
	f.syncAll()
	second := time.Since(began)
	time.Sleep(50 * time.Millisecond) // a second connection, if one were dialled, is accepted by now
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if f.State() != Local || f.Fallbacks() != 1 || first >= 500*time.Millisecond || second >= 100*time.Millisecond || n != 1 {
		t.Errorf("state %v, %d fallbacks, first sync %v, second %v, %d connections; want local, 1, < 500 ms (the client's ReadTimeout is 1 s), < 100 ms, 1",
			f.State(), f.Fallbacks(), first, second, n)
	}
	f.Close()
	client.Close()
	ln.Close()
	<-accepted
	for _, c := range conns {
		c.Close()
	}
}
