package floodhttp

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/adaptive"
)

// HandlerConfig configures a [Handler]. Every field's zero value is the
// default.
type HandlerConfig struct {
	// Limiter configures the Handler's adaptive limiter: the requests its
	// handler serves at once. Zero: adaptive.New's defaults.
	Limiter adaptive.Config
	// Status is the answer to a request shed over the limit: 503 (the
	// default) or 429.
	Status int
	// RetryAfter is the Retry-After sent with a shed answer, in whole
	// seconds (rounded up). Default 1 s; range [1 s, 1 h].
	RetryAfter time.Duration
	// Timeout is the longest a request's handler may run: the request
	// context's deadline is at most now + Timeout, and at most the
	// [TimeoutHeader]'s. Default 0: none of its own. Range 0 or
	// [1 ms, 24 h].
	Timeout time.Duration
	// IgnoreAttemptHeader: do not read [AttemptHeader]; the handler's Gates
	// retry whoever called (set it at the edge, for callers that are not
	// yours). Default false: read.
	IgnoreAttemptHeader bool
	// IgnoreTimeoutHeader: do not read [TimeoutHeader]. Default false:
	// read.
	IgnoreTimeoutHeader bool
}

// Handler is middleware with its own adaptive limiter: it admits a
// request if fewer than the limit are being served, and otherwise answers
// at once, before the handler runs, with Status and Retry-After. The
// limiter learns from each admitted request's latency (ServeHTTP's, from
// admission to the handler's return) and outcome:
//
//	how the handler ended                                      limiter
//	the client went away (the request's context ended)         ignored
//	the deadline passed, after at least the recent mean RTT    drop
//	the deadline passed sooner (the caller's deadline was short)  ignored
//	the handler answered 503                                   drop (an overload answer)
//	any other answer (2xx, 4xx, 429, 500, ...)                 success, its latency a sample
//	the handler hijacked the connection                        ignored
//	the handler panicked                                       ignored (the panic goes on)
//
// A handler's 503 is its own overload answer (it shed, or what it calls
// did); its other 5xx are errors, not congestion, and their latency is as
// good a sample as any. 429 is a success: it usually answers one caller's
// rate, not the server's load.
//
// It reads two request headers a [Transport] sends: [AttemptHeader] (an
// upstream owns the retries: the request's context gets
// floodgate.WithRetriesOwned, so that the handler's Gates make one attempt
// per call) and [TimeoutHeader] (the request's context gets that deadline,
// capped by Timeout). Create one with [NewHandler]; it is safe for
// concurrent use.
type Handler struct {
	next       http.Handler
	limiter    *adaptive.Limiter
	status     int
	retryAfter []string
	timeout    time.Duration
	attempt    bool
	deadline   bool
	shed       atomic.Int64
}

// NewHandler returns a Handler serving next with cfg, or an error: next
// is nil, a field of cfg is out of range (named with its range), or
// adaptive.New's error for cfg.Limiter.
func NewHandler(next http.Handler, cfg HandlerConfig) (*Handler, error) {
	switch {
	case next == nil:
		return nil, fmt.Errorf("floodhttp: NewHandler: next is nil")
	case cfg.Status != 0 && cfg.Status != http.StatusServiceUnavailable && cfg.Status != http.StatusTooManyRequests:
		return nil, fmt.Errorf("floodhttp: HandlerConfig.Status must be 0, 503 or 429, got %d", cfg.Status)
	case cfg.RetryAfter != 0 && (cfg.RetryAfter < time.Second || cfg.RetryAfter > time.Hour):
		return nil, fmt.Errorf("floodhttp: HandlerConfig.RetryAfter must be 0 or in [1s, 1h], got %v", cfg.RetryAfter)
	case cfg.Timeout != 0 && (cfg.Timeout < time.Millisecond || cfg.Timeout > 24*time.Hour):
		return nil, fmt.Errorf("floodhttp: HandlerConfig.Timeout must be 0 or in [1ms, 24h], got %v", cfg.Timeout)
	}
	l, err := adaptive.New(cfg.Limiter)
	if err != nil {
		return nil, fmt.Errorf("floodhttp: HandlerConfig.Limiter: %w", err)
	}
	h := &Handler{next: next, limiter: l, status: cfg.Status, timeout: cfg.Timeout,
		attempt: !cfg.IgnoreAttemptHeader, deadline: !cfg.IgnoreTimeoutHeader}
	if h.status == 0 {
		h.status = http.StatusServiceUnavailable
	}
	ra := cfg.RetryAfter
	if ra == 0 {
		ra = time.Second
	}
	h.retryAfter = []string{strconv.FormatInt(int64((ra+time.Second-1)/time.Second), 10)}
	return h, nil
}

// Limiter returns the Handler's limiter, to read its limit and in-flight
// count.
func (h *Handler) Limiter() *adaptive.Limiter { return h.limiter }

// Shed counts the requests answered over the limit since NewHandler.
func (h *Handler) Shed() int64 { return h.shed.Load() }

// ServeHTTP admits r or sheds it (see [Handler]).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.limiter.Acquire() {
		h.shed.Add(1)
		w.Header()["Retry-After"] = h.retryAfter
		w.WriteHeader(h.status)
		return
	}
	start := time.Now()
	rctx := r.Context()
	ctx := rctx
	if h.attempt {
		if v := r.Header[AttemptHeader]; len(v) == 1 {
			if _, ok := parseAttempt(v[0]); ok {
				ctx = floodgate.WithRetriesOwned(ctx)
			}
		}
	}
	d, has := h.timeout, h.timeout > 0
	if h.deadline {
		if v := r.Header[TimeoutHeader]; len(v) == 1 {
			if t, ok := parseTimeout(v[0]); ok && (!has || t < d) {
				d, has = t, true
			}
		}
	}
	if has { // the parent's deadline wins if earlier
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(d))
		defer cancel()
	}
	if ctx != rctx {
		r = r.WithContext(ctx)
	}
	sw := &statusWriter{ResponseWriter: w}
	o, rtt := adaptive.Ignore, time.Duration(-1) // if next panics
	defer func() {
		if rtt < 0 {
			rtt = time.Since(start)
		}
		h.limiter.Release(start, rtt, o)
	}()
	h.next.ServeHTTP(sw, r)
	rtt = time.Since(start)
	if !sw.hijacked { // a hijacked connection's time is its own protocol's, not a latency
		o = outcome(rctx.Err(), ctx.Err(), sw.status, rtt, h.limiter.RecentRTT())
	}
}

// outcome is what the limiter learns from a request served in rtt: clientErr
// is the request's own context's error (the client went away), ctxErr the
// error of the context the handler ran with, status its answer (0 if it
// wrote none), recent the limiter's recent mean RTT (the Handler's table).
func outcome(clientErr, ctxErr error, status int, rtt, recent time.Duration) adaptive.Outcome {
	switch {
	case clientErr != nil:
		return adaptive.Ignore
	case ctxErr == context.DeadlineExceeded && rtt >= recent:
		return adaptive.Drop
	case ctxErr == context.DeadlineExceeded:
		return adaptive.Ignore
	case status == http.StatusServiceUnavailable:
		return adaptive.Drop
	}
	return adaptive.Success
}

// statusWriter records the status a handler answers with.
type statusWriter struct {
	http.ResponseWriter
	status   int // 0 until WriteHeader or Write
	hijacked bool
}

// Hijack takes over the connection if the underlying writer can
// (http.ResponseController's Hijack); the limiter then ignores the
// request.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx are informational: the answer is still to come
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Flush flushes the response if the underlying writer can.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
