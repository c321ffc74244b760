package bench

// HTTP overhead: what a RoundTripper through a resilience layer adds to one
// GET on loopback, beside a bare http.Transport and failsafe-go's
// failsafehttp (docs/http.md, "Overhead").
//
//	BenchmarkHTTPRoundTrip/<contender>  one GET at a time, each contender alone
//	BenchmarkHTTPOverhead               all interleaved, request by request, in one run:
//	                                    medians, each one's added cost, floodhttp's as a
//	                                    share of the round trip and of failsafehttp's
//
// Besides net/http, floodhttp and failsafehttp, four reference rows split
// floodhttp's cost: net/http+copy (the request's copy), net/http+copy+header
// (and a header more on the wire), floodhttp-noheaders
// (Config.NoAttemptHeader and NoTimeoutHeader), and guard (Gate.Guard
// around the bare transport).
//
// Each contender has its own pool (http.Transport) to one server that
// answers "ok"; each request's body is read and closed.

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/floodhttp"
)

// httpContender wraps base, a pool of its own, in one contender.
type httpContender struct {
	name string
	wrap func(tb testing.TB, base http.RoundTripper) http.RoundTripper
}

var httpContenders = []httpContender{
	{"net/http", func(_ testing.TB, base http.RoundTripper) http.RoundTripper { return base }},
	{"floodhttp", func(tb testing.TB, base http.RoundTripper) http.RoundTripper {
		g := newGate(tb, floodgate.WithLimiter(adaptive.Config{MinLimit: limitFloor}))
		t, err := floodhttp.NewTransport(g, floodhttp.Config{Base: base})
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}},
	// net/http sent a copy of the request (Request.WithContext, as a
	// RoundTripper that must not modify its caller's request makes it).
	{"net/http+copy", func(_ testing.TB, base http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			return base.RoundTrip(r.WithContext(r.Context()))
		})
	}},
	// net/http sent a copy of the request with one header more
	// (Floodgate-Attempt: 1, a Header built once): beside net/http+copy,
	// what a header costs on the wire, the server's parsing included,
	// whoever adds it.
	{"net/http+copy+header", func(_ testing.TB, base http.RoundTripper) http.RoundTripper {
		h := http.Header{floodhttp.AttemptHeader: []string{"1"}}
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			r2 := r.WithContext(r.Context())
			r2.Header = h
			return base.RoundTrip(r2)
		})
	}},
	// floodhttp without its two headers.
	{"floodhttp-noheaders", func(tb testing.TB, base http.RoundTripper) http.RoundTripper {
		g := newGate(tb, floodgate.WithLimiter(adaptive.Config{MinLimit: limitFloor}))
		t, err := floodhttp.NewTransport(g, floodhttp.Config{Base: base, NoAttemptHeader: true, NoTimeoutHeader: true})
		if err != nil {
			tb.Fatal(err)
		}
		return t
	}},
	// Guard around the bare transport: the Gate's own share.
	{"guard", func(tb testing.TB, base http.RoundTripper) http.RoundTripper {
		g := newGate(tb, floodgate.WithLimiter(adaptive.Config{MinLimit: limitFloor}))
		return rtFunc(func(r *http.Request) (resp *http.Response, err error) {
			err = g.Guard(r.Context(), func(context.Context) error { resp, err = base.RoundTrip(r); return err })
			return resp, err
		})
	}},
	{"failsafehttp", func(_ testing.TB, base http.RoundTripper) http.RoundTripper {
		// Guard's three layers, as newFailsafe sets them, typed for HTTP:
		// failsafehttp's retry policy (it retries 429, 5xx and connection
		// errors, and honours Retry-After).
		rp := failsafehttp.NewRetryPolicyBuilder().
			WithMaxAttempts(3).
			WithBackoff(100*time.Millisecond, 10*time.Second).
			WithBudget(budget.New()).
			AbortOnErrors(circuitbreaker.ErrOpen, adaptivelimiter.ErrExceeded).
			Build()
		cb := circuitbreaker.NewBuilder[*http.Response]().
			HandleIf(func(_ *http.Response, err error) bool {
				return err != nil && !errors.Is(err, adaptivelimiter.ErrExceeded)
			}).
			WithFailureRateThreshold(0.5, 20, 10*time.Second).
			WithSuccessThreshold(3).
			Build()
		lim := adaptivelimiter.NewBuilder[*http.Response]().WithLimits(limitFloor, 200, limitFloor).Build()
		return failsafehttp.NewRoundTripper(base, rp, cb, lim)
	}},
}

// okServer answers every request "ok".
func okServer(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	tb.Cleanup(srv.Close)
	return srv
}

// httpCall returns one GET of url through c, with a pool of its own.
func httpCall(tb testing.TB, c httpContender, url string) func() error {
	base := &http.Transport{MaxIdleConnsPerHost: 4}
	tb.Cleanup(base.CloseIdleConnections)
	rt := c.wrap(tb, base)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return func() error {
		resp, err := rt.RoundTrip(req) // the request is reused: its body was closed
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return err
	}
}

// Each contender really makes the GET, and counts its allocations per
// request (our own: floodhttp's minus net/http's).
func TestHTTPContenders(t *testing.T) {
	srv := okServer(t)
	allocs := map[string]float64{}
	for _, c := range httpContenders {
		call := httpCall(t, c, srv.URL)
		if err := call(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		allocs[c.name] = testing.AllocsPerRun(200, func() { _ = call() })
	}
	t.Logf("allocations per GET: net/http %.0f, floodhttp %.0f (+%.0f), failsafehttp %.0f (+%.0f)",
		allocs["net/http"], allocs["floodhttp"], allocs["floodhttp"]-allocs["net/http"],
		allocs["failsafehttp"], allocs["failsafehttp"]-allocs["net/http"])
}

// BenchmarkHTTPRoundTrip is one GET at a time through each contender.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	srv := okServer(b)
	for _, c := range httpContenders {
		b.Run(c.name, func(b *testing.B) {
			call := httpCall(b, c, srv.URL)
			_ = call() // the connection
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHTTPOverhead makes one GET through each contender per op, in
// turn (in a random order), so that the machine's noise falls on all
// alike, and reports the median of each, what floodhttp and
// failsafehttp add to net/http's median, floodhttp's added cost as a
// percentage of net/http's round trip, and floodhttp's added cost over
// failsafehttp's.
func BenchmarkHTTPOverhead(b *testing.B) {
	srv := okServer(b)
	calls := make([]func() error, len(httpContenders))
	for i, c := range httpContenders {
		calls[i] = httpCall(b, c, srv.URL)
		_ = calls[i]()
	}
	took := make([][]time.Duration, len(calls))
	order := make([]int, len(calls))
	for i := range order {
		order[i] = i
	}
	b.ReportAllocs()
	for b.Loop() {
		// A new order each op: in a fixed rotation each contender would
		// always follow the same one, and pay for its garbage.
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			start := time.Now()
			if err := calls[i](); err != nil {
				b.Fatal(err)
			}
			took[i] = append(took[i], time.Since(start))
		}
	}
	med := make([]float64, len(calls))
	for i, d := range took {
		slices.Sort(d)
		med[i] = float64(d[len(d)/2])
	}
	for i, c := range httpContenders {
		b.ReportMetric(med[i]-med[0], c.name+"-added-ns")
	}
	bare, fh, fs := med[0], med[1]-med[0], med[len(med)-1]-med[0]
	b.ReportMetric(bare, "net/http-ns")
	b.ReportMetric(fh, "floodhttp-added-ns")
	b.ReportMetric(fs, "failsafehttp-added-ns")
	b.ReportMetric(100*fh/bare, "floodhttp-added-%")
	b.ReportMetric(fh/fs, "floodhttp/failsafehttp")
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
