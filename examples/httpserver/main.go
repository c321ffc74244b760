// Command httpserver shows floodhttp's middleware: a server whose handler
// can serve 4 requests at a time in 25 ms each (160 requests/s; more wait
// in a queue) is offered 250 requests/s for 2 s, twice: bare, and behind
// floodhttp.Handler. Bare, the queue grows and every request waits
// longer; behind the Handler, the limiter caps the requests in flight and
// answers the excess at once with 503 and Retry-After, so the requests it
// serves wait less. The run starts straight into the overload, so the
// limit settles above the 4 workers (measured: 19; docs/design.md,
// Gradient's known limitation). Then it shows what the
// Handler reads from a floodgate client's headers. About 6 s, no flags.
//
//	go run ./examples/httpserver
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/floodhttp"
)

func main() {
	if err := run(os.Stdout, 250, 2*time.Second); err != nil {
		log.Fatal(err)
	}
}

// run offers rate requests/s for d to the bare handler, then to the
// Handler, and prints both to w.
func run(w io.Writer, rate int, d time.Duration) error {
	fmt.Fprintf(w, "offered %d requests/s for %v to a handler that serves 4 at a time in 25 ms (160/s)\n", rate, d)
	fmt.Fprintf(w, "%-22s %8s %6s %9s %9s %9s\n", "", "served", "shed", "p50", "p99", "limit")
	bare := httptest.NewServer(capacity(4, 25*time.Millisecond))
	r := offer(bare.URL, rate, d)
	bare.Close()
	fmt.Fprintf(w, "%-22s %8d %6d %9v %9v %9s\n", "bare", r.served, r.shed, r.p(0.5), r.p(0.99), "-")

	h, err := floodhttp.NewHandler(capacity(4, 25*time.Millisecond), floodhttp.HandlerConfig{})
	if err != nil {
		return err
	}
	guarded := httptest.NewServer(h)
	r = offer(guarded.URL, rate, d)
	guarded.Close()
	fmt.Fprintf(w, "%-22s %8d %6d %9v %9v %9d\n", "floodhttp.Handler", r.served, r.shed, r.p(0.5), r.p(0.99), h.Limiter().Limit())
	return headers(w)
}

// capacity is a handler that serves n requests at a time, each in d; the
// others wait their turn.
func capacity(n int, d time.Duration) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(d)
		<-slots
		_, _ = io.WriteString(w, "ok")
	})
}

type result struct {
	served, shed int
	lat          []time.Duration // of the served requests
}

func (r result) p(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[int(q*float64(len(r.lat)-1))].Round(time.Millisecond)
}

// offer sends rate GETs per second to url for d, open loop (each request
// starts on time, whatever the others do), and waits for all of them.
func offer(url string, rate int, d time.Duration) result {
	tr := &http.Transport{MaxIdleConnsPerHost: 1000}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var (
		mu sync.Mutex
		r  result
		wg sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			resp, err := client.Get(url)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode == http.StatusServiceUnavailable {
				r.shed++
				return
			}
			r.served++
			r.lat = append(r.lat, took)
		}()
	}
	wg.Wait()
	return r
}

// headers sends one request as a floodgate client would and prints what
// the handler behind floodhttp.Handler saw in its context.
func headers(w io.Writer) error {
	h, err := floodhttp.NewHandler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		dl, _ := r.Context().Deadline()
		fmt.Fprintf(w, "a request with %s: 2 and %s: 1500ms: the handler's context has %v left and RetriesOwned %v\n",
			floodhttp.AttemptHeader, floodhttp.TimeoutHeader, time.Until(dl).Round(10*time.Millisecond), floodgate.RetriesOwned(r.Context()))
	}), floodhttp.HandlerConfig{})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(context.Background(), "GET", srv.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set(floodhttp.AttemptHeader, "2")
	req.Header.Set(floodhttp.TimeoutHeader, "1500ms")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	fmt.Fprintln(w, "(so the handler's own Gates make one attempt per call: the client upstream retries)")
	return nil
}
