package floodhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/floodhttp"
	"github.com/floodgate-go/floodgate/retry"
)

// A client whose requests go through a Gate, against a server behind the
// middleware that answers 503 twice and then 200.
func Example() {
	calls := 0
	handler, err := floodhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable) // retried by the client
			return
		}
		fmt.Fprintf(w, "attempt %s, retries owned upstream: %v", r.Header.Get(floodhttp.AttemptHeader), floodgate.RetriesOwned(r.Context()))
	}), floodhttp.HandlerConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	gate, err := floodgate.New("example", floodgate.WithRetry(retry.Config{BaseDelay: time.Millisecond}))
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := floodhttp.NewClient(gate, floodhttp.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // the call's deadline, sent along
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	var se *floodhttp.StatusError
	switch {
	case errors.As(err, &se):
		fmt.Println("failed:", se.StatusCode, err)
		return
	case err != nil:
		fmt.Println("failed:", err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body) // readable after RoundTrip returned
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 attempt 3, retries owned upstream: true
}
