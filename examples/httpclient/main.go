// Command httpclient shows floodhttp's client: an *http.Client whose
// requests go through a floodgate Gate. With no flags it starts a local
// demo server on 127.0.0.1 whose paths misbehave in known ways, makes one
// call to each, and prints what the server saw and what the caller got
// (about 1 s). With -url it GETs that URL five times instead.
//
//	go run ./examples/httpclient
//	go run ./examples/httpclient -url http://127.0.0.1:8080/
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/floodhttp"
	"github.com/floodgate-go/floodgate/retry"
)

func main() {
	url := flag.String("url", "", "GET this URL five times through floodgate instead of the built-in demo")
	flag.Parse()
	if err := run(os.Stdout, *url); err != nil {
		log.Fatal(err)
	}
}

// run makes the demo's calls (or five GETs of url) and prints them to w.
func run(w io.Writer, url string) error {
	gate, err := floodgate.New("demo", floodgate.WithRetry(retry.Config{
		AttemptTimeout: time.Second, // each attempt; it also bounds reading the body
		BaseDelay:      20 * time.Millisecond,
		MaxDelay:       time.Second, // a Retry-After above this ends the call at once
	}))
	if err != nil {
		return err
	}
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := floodhttp.NewTransport(gate, floodhttp.Config{Base: base, IdempotencyKeys: true})
	if err != nil {
		return err
	}
	client := &http.Client{Transport: tr}
	if url != "" {
		for i := range 5 {
			fmt.Fprintf(w, "GET %s #%d: %s\n", url, i+1, call(client, "GET", url, ""))
		}
		return nil
	}
	// keyless is the same Gate without IdempotencyKeys: a POST without an
	// Idempotency-Key header is then never retried.
	keylessTr, err := floodhttp.NewTransport(gate, floodhttp.Config{Base: base})
	if err != nil {
		return err
	}
	keyless := &http.Client{Transport: keylessTr}
	srv := newDemoServer()
	defer srv.Close()
	for _, c := range demoCalls {
		cl := client
		if c.keyless {
			cl = keyless
		}
		got := call(cl, c.method, srv.URL+c.path, c.body)
		fmt.Fprintf(w, "%-6s %-10s %-46s server saw %s\n       -> %s\n", c.method, c.path, c.what, srv.saw(c.path), got)
	}
	fmt.Fprintf(w, "hidden retries by net/http's Transport: %d (requests it re-sent on its own within one attempt; see docs/http.md)\n", tr.HiddenRetries()+keylessTr.HiddenRetries())
	return nil
}

var demoCalls = []struct {
	method, path, body, what string
	keyless                  bool // through a transport without IdempotencyKeys
}{
	{"GET", "/ok", "", "healthy", false},
	{"GET", "/flaky", "", "503 twice, then 200", false},
	{"GET", "/missing", "", "404: permanent, not retried", false},
	{"GET", "/busy", "", "503 with Retry-After: 120 (> MaxDelay 1 s)", false},
	{"POST", "/order", "{\"qty\":1}", "503 then 200; a key is generated, so retried", false},
	{"POST", "/pay", "{\"eur\":5}", "503 then 200; no key: not retried", true},
	{"GET", "/down", "", "500 every time", false},
	{"GET", "/stream", "", "the body arrives after the headers", false},
}

// call makes one request and describes the outcome.
func call(client *http.Client, method, url, body string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body) // http.NewRequest sets GetBody: replayable
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err.Error()
	}
	start := time.Now()
	resp, err := client.Do(req)
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		var se *floodhttp.StatusError
		var fe *floodgate.Error
		s := fmt.Sprintf("error after %v", took)
		if errors.As(err, &fe) {
			s += fmt.Sprintf(": %v, attempts: %d", strings.TrimPrefix(fe.Reason.Error(), "floodgate: "), fe.Attempts)
		}
		if errors.As(err, &se) {
			s += fmt.Sprintf(", last status %d", se.StatusCode)
		}
		if d, ok := floodgate.RetryAfter(err); ok {
			s += fmt.Sprintf(", retry after %v", d)
		}
		return s + "\n          err.Error(): " + err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body) // readable after RoundTrip returned
	if err != nil {
		return fmt.Sprintf("status %d, body error %v", resp.StatusCode, err)
	}
	return fmt.Sprintf("status %d after %v, body %q", resp.StatusCode, took, b)
}

// demoServer answers each path in a known way and records what it saw.
type demoServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]string // path -> one "attempt n[, key]" per request
}

func (s *demoServer) saw(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.seen[path]
	return fmt.Sprintf("%d request(s) %v", len(r), r)
}

func newDemoServer() *demoServer {
	s := &demoServer{seen: map[string][]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		note := "attempt " + r.Header.Get(floodhttp.AttemptHeader)
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			note += " key " + k[:9] + "…\""
		}
		s.seen[r.URL.Path] = append(s.seen[r.URL.Path], note)
		n := len(s.seen[r.URL.Path])
		s.mu.Unlock()
		switch r.URL.Path {
		case "/ok":
		case "/flaky":
			if n <= 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			return
		case "/busy":
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case "/order", "/pay":
			if n == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		case "/down":
			w.WriteHeader(http.StatusInternalServerError)
			return
		case "/stream":
			_, _ = io.WriteString(w, "first part, ")
			http.NewResponseController(w).Flush()
			time.Sleep(200 * time.Millisecond)
			_, _ = io.WriteString(w, "second part")
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	return s
}
