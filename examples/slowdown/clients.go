package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
)

// newHTTPClient returns a client whose transport holds at most pool
// connections to the downstream; a request beyond that waits for one.
func newHTTPClient(pool int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxConnsPerHost:     pool,
		MaxIdleConnsPerHost: pool,
		IdleConnTimeout:     30 * time.Second,
	}}
}

// get makes one HTTP attempt. 5xx and 429 answers are overload errors
// (retried, and a drop for the limiter); other 4xx are permanent.
func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return retry.Permanent(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return retry.Overload(fmt.Errorf("downstream answered %s", resp.Status), 0)
	case resp.StatusCode >= 400:
		return retry.Permanent(fmt.Errorf("downstream answered %s", resp.Status))
	}
	return nil
}

// naive is the unprotected client: a fixed pool, a per-attempt timeout and
// three nested layers (say gateway, service, client library) that each
// retry 3 times with a fixed backoff: up to 27 attempts per user call.
type naive struct {
	client  *http.Client
	url     string
	timeout time.Duration
	backoff time.Duration
}

func (n *naive) call(ctx context.Context) error {
	layer := func(fn func() error) error {
		var err error
		for i := range 3 {
			if i > 0 {
				select {
				case <-time.After(n.backoff):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if err = fn(); err == nil {
				return nil
			}
		}
		return err
	}
	return layer(func() error {
		return layer(func() error {
			return layer(func() error {
				actx, cancel := context.WithTimeout(ctx, n.timeout)
				defer cancel()
				return get(actx, n.client, n.url)
			})
		})
	})
}

// guarded is the same call through one floodgate Gate, which owns the
// retries.
type guarded struct {
	gate   *floodgate.Gate
	client *http.Client
	url    string
}

func (g *guarded) call(ctx context.Context) error {
	return g.gate.Guard(ctx, func(ctx context.Context) error { return get(ctx, g.client, g.url) })
}
