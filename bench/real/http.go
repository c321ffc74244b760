package real

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/floodgate-go/floodgate/retry"
)

// HTTPContenders are the HTTP trial's contenders, in table order.
var HTTPContenders = []string{"net/http", "floodgate", "failsafe-go"}

// StatusError is an HTTP answer of status 400 or more.
type StatusError struct {
	// Code is the status code.
	Code int
	// RetryAfter is the Retry-After header in seconds, 0 if none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return "status " + strconv.Itoa(e.Code) }

// MarkHTTP marks an HTTP call's error for floodgate as the README tells
// users to: 503 and 429 are an overload (with the server's Retry-After),
// another 5xx is transient, another 4xx permanent; a connection closed
// before the answer (io.EOF) is transient. Everything else (timeouts,
// refused or reset connections) is returned as it is for floodgate's
// default classifier, which retries it.
func MarkHTTP(err error) error {
	var se *StatusError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && (se.Code == http.StatusServiceUnavailable || se.Code == http.StatusTooManyRequests):
		return retry.Overload(err, se.RetryAfter)
	case errors.As(err, &se) && se.Code >= 500:
		return retry.Transient(err)
	case errors.As(err, &se):
		return retry.Permanent(err)
	case errors.Is(err, io.EOF):
		return retry.Transient(err)
	}
	return err
}

// permanentHTTP reports whether err is a 4xx answer other than 429.
func permanentHTTP(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code < 500 && se.Code != http.StatusTooManyRequests
}

// newTransport returns the pool every HTTP contender uses: at most
// PoolSize connections to the server, all kept when idle.
func newTransport() *http.Transport {
	return &http.Transport{MaxConnsPerHost: PoolSize, MaxIdleConnsPerHost: PoolSize, IdleConnTimeout: time.Minute}
}

// httpCaller returns the contender named name.
func httpCaller(name string) (Caller, error) {
	switch name {
	case "net/http":
		return direct{}, nil
	case "floodgate":
		return newGate("http", MarkHTTP)
	case "failsafe-go":
		return newFailsafe(permanentHTTP), nil
	}
	return nil, fmt.Errorf("no HTTP contender %q", name)
}

// httpGet is call i: a GET of one of eight paths through client to base.
func httpGet(ctx context.Context, client *http.Client, base string, i int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/k"+strconv.Itoa(i%8), nil)
	if err != nil {
		return retry.Permanent(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		se := &StatusError{Code: resp.StatusCode}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			se.RetryAfter = time.Duration(s) * time.Second
		}
		return se
	}
	return err
}

// toxic is a toxiproxy toxic: its type and attributes, JSON.
type toxic struct{ kind, attributes string }

// HTTPPhases returns the HTTP trial's phases for form f, each fault a
// toxic added to every proxy at once (on the answers' direction): a
// latency of 2 s (an attempt with a 1 s timeout cannot succeed), a latency
// of 300 ms (attempts succeed, but a pool of 50 serves 167 calls/s of the
// 300 offered), and reset_peer (every connection reset as the answer
// comes), each followed by a healthy phase.
func HTTPPhases(f Form, proxies []*toxiproxy.Proxy) []Phase {
	fault := func(name string, t toxic) Phase {
		return Phase{Name: name, For: f.Fault, Start: func() (func() error, error) { return addToxic(proxies, t) }}
	}
	return []Phase{
		{Name: "healthy", Healthy: true, For: f.Healthy},
		fault("latency 2 s", toxic{"latency", `{"latency":2000}`}),
		{Name: "healthy after 2 s", Healthy: true, For: f.Heal},
		fault("latency 300 ms", toxic{"latency", `{"latency":300}`}),
		{Name: "healthy after 300 ms", Healthy: true, For: f.Heal},
		fault("reset_peer", toxic{"reset_peer", `{"timeout":0}`}),
		{Name: "healthy after reset", Healthy: true, For: f.Heal},
	}
}

// addToxic adds t to every proxy; the returned function removes it.
func addToxic(proxies []*toxiproxy.Proxy, t toxic) (func() error, error) {
	js := `{"name":"fault","type":"` + t.kind + `","stream":"downstream","attributes":` + t.attributes + `}`
	for _, p := range proxies {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return nil, fmt.Errorf("toxic %s: %w", t.kind, err)
		}
	}
	return func() error {
		for _, p := range proxies {
			if err := p.Toxics.RemoveToxic(context.Background(), "fault"); err != nil {
				return fmt.Errorf("toxic %s: %w", t.kind, err)
			}
		}
		return nil
	}, nil
}

// HTTPTrial runs the HTTP trial of form f: a net/http server on 127.0.0.1
// that answers at once, one in-process toxiproxy proxy per contender in
// front of it, and the contenders side by side, each with its own pool
// (newTransport), through HTTPPhases.
func HTTPTrial(f Form) (*Result, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	var proxies []*toxiproxy.Proxy
	defer func() {
		for _, p := range proxies {
			p.Stop()
		}
	}()
	var lanes []lane
	for _, name := range HTTPContenders {
		p := toxiproxy.NewProxy(api, name, "127.0.0.1:0", srv.Listener.Addr().String())
		if err := p.Start(); err != nil {
			return nil, fmt.Errorf("toxiproxy: %w", err)
		}
		proxies = append(proxies, p)
		c, err := httpCaller(name)
		if err != nil {
			return nil, err
		}
		tr := newTransport()
		defer tr.CloseIdleConnections()
		client, base := &http.Client{Transport: tr}, "http://"+p.Listen
		lanes = append(lanes, lane{c, func(ctx context.Context, i int) error { return httpGet(ctx, client, base, i) }})
	}
	phases := HTTPPhases(f, proxies)
	tl, err := runTimeline(phases, lanes)
	if err != nil {
		return nil, err
	}
	r := &Result{Trial: "HTTP", Phases: phases, Contenders: HTTPContenders}
	for j := range lanes {
		r.Stats = append(r.Stats, tl.stats(j))
	}
	return r, nil
}
