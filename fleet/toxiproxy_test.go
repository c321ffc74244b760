//go:build e2e

package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Issue 15's second fault test: an in-process toxiproxy between the 3
// processes and Redis adds a 2 s latency to Redis's answers (1 s to 3 s of
// an 8 s run; the client's ReadTimeout is go-redis's default 3 s, so a
// call stalls), then resets every connection (4.5 s to 5.5 s). Every
// process goes on serving (no Guard error other than the downstream's,
// none slow), falls back within a second of each fault, shares again after
// the last, and from then on the fleet retries within the bound.
func TestFaultToxiproxy(t *testing.T) {
	const (
		procs = 3
		calls = 6000
		span  = 8 * time.Second
	)
	addr := redisAddr(t)
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(api, "redis", "127.0.0.1:0", addr)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	defer proxy.Stop()
	toxic := func(kind, attributes string) {
		js := `{"name":"fault","type":"` + kind + `","stream":"downstream","attributes":` + attributes + `}`
		if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			t.Error(err)
		}
	}
	heal := func() {
		if err := proxy.Toxics.RemoveToxic(context.Background(), "fault"); err != nil {
			t.Error(err)
		}
	}
	var latency, reset, healed time.Time
	rs := runChildren(t, proxy.Listen, prefix(t), procs, calls, span, func() {
		time.Sleep(time.Second)
		latency = time.Now()
		toxic("latency", `{"latency":2000}`)
		time.Sleep(2 * time.Second)
		heal()
		time.Sleep(1500 * time.Millisecond)
		reset = time.Now()
		toxic("reset_peer", `{"timeout":0}`)
		time.Sleep(time.Second)
		heal()
		healed = time.Now()
	})
	t.Logf("%d processes, %d calls over %v through toxiproxy: latency 2 s at 1-3 s, reset_peer at 4.5-5.5 s\n%s",
		procs, calls, span, table(rs))
	var callsAfter, retriesAfter int
	for _, r := range rs {
		first := func(to string, after time.Time) time.Time {
			for _, ch := range r.Changes {
				if at := time.Unix(0, ch.Unix); ch.To == to && at.After(after) {
					return at
				}
			}
			return time.Time{}
		}
		l1, l2, back := first("local", latency), first("local", reset), first("shared", healed)
		t.Logf("%s: local %.0f ms after the latency, %.0f ms after the reset; shared %.0f ms after the heal; after it %d calls, %d retries",
			r.Name, l1.Sub(latency).Seconds()*1000, l2.Sub(reset).Seconds()*1000, back.Sub(healed).Seconds()*1000, r.CallsAfter, r.RetriesAfter)
		if r.Bad != 0 || r.MaxGuard > time.Second {
			t.Errorf("%s: %d Guard errors not the downstream's (first: %s), slowest Guard %v; want 0, < 1 s",
				r.Name, r.Bad, r.FirstBad, r.MaxGuard)
		}
		if r.Fallbacks < 2 || l1.IsZero() || l1.Sub(latency) > time.Second || l2.IsZero() || l2.Sub(reset) > time.Second ||
			back.IsZero() || r.End != "shared" {
			t.Errorf("%s: %d fallbacks, local %v after the latency and %v after the reset, shared %v after the heal, ends %s; "+
				"want ≥ 2, ≤ 1 s, ≤ 1 s, some, shared", r.Name, r.Fallbacks, l1.Sub(latency), l2.Sub(reset), back.Sub(healed), r.End)
		}
		callsAfter += r.CallsAfter
		retriesAfter += r.RetriesAfter
	}
	bound := DefaultRatio*float64(callsAfter) + DefaultMax + procs*DefaultLease
	if float64(retriesAfter) > bound {
		t.Errorf("after the heal the fleet retried %d times in %d calls, want ≤ %v", retriesAfter, callsAfter, bound)
	}
}
