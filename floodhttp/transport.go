package floodhttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
)

// Config configures a [Transport]. Every field's zero value is the
// default.
type Config struct {
	// Base sends each attempt. nil: http.DefaultTransport.
	Base http.RoundTripper
	// Classify maps each attempt's result to the Gate's classes. nil:
	// [Classify].
	Classify Classifier
	// IdempotencyKeys: when true, a POST or PATCH with no Idempotency-Key
	// header and a body that can be replayed (or none) is sent with a new
	// key, a random UUID as draft-ietf-httpapi-idempotency-key-header's
	// quoted string, the same on every attempt, so that it may be retried.
	// Default false: such a request is never retried.
	IdempotencyKeys bool
	// NoAttemptHeader: do not send [AttemptHeader], so that the server's
	// own Gates retry as if no upstream did (the attempts of the layers
	// multiply). Default false: sent.
	NoAttemptHeader bool
	// NoTimeoutHeader: do not send [TimeoutHeader]. Default false: sent
	// when the attempt has a deadline.
	NoTimeoutHeader bool
	// OnHiddenRetry, if not nil, is called after an attempt that Base
	// re-sent n > 0 times on its own (see [Transport.HiddenRetries]), on
	// the goroutine of RoundTrip. It must not block.
	OnHiddenRetry func(n int)
}

// Transport is an http.RoundTripper that sends each request through a
// floodgate Gate: the Gate's retry loop, breaker and limiter decide the
// attempts, and Base sends each one. Create one with [NewTransport]; it is
// safe for concurrent use.
//
// Per request:
//   - Idempotency (RFC 9110 §9.2.2): GET, HEAD, OPTIONS, TRACE, PUT and
//     DELETE may be retried; any other method (POST, PATCH) only with an
//     Idempotency-Key header (Config.IdempotencyKeys adds one). A body is
//     replayed with Request.GetBody (set by http.NewRequest for a
//     bytes.Buffer, bytes.Reader or strings.Reader); a request whose body
//     cannot be replayed is never retried.
//   - Deadlines: the request's context is the call's (its deadline the
//     overall one); each attempt gets the Gate's (retry.Config's
//     AttemptTimeout and Timeout), which also bounds reading the body.
//   - Answers: RoundTrip returns the response when the last attempt's
//     answer is a success or permanent (1xx to 3xx, 4xx but 408 and 429,
//     501: see [Classify]), whatever went before; otherwise no response
//     and the Gate's error, which wraps the last attempt's (a
//     *[StatusError], with the status and the Retry-After hint: read it
//     with errors.As, and the hint with floodgate.RetryAfter). This
//     departs from http.RoundTripper's rule that any answer is a nil
//     error, as failsafe-go's failsafehttp does: after the attempts, a 503
//     is the call's failure.
//   - Bodies: a failed attempt's body is read (at most 4 KiB, at most 100
//     ms) and closed, so that its connection is reused. The returned
//     response's body stays readable after RoundTrip returns; closing it
//     (or reading it to its end) ends the attempt's context.
//   - Slots and RTT: the Gate measures an attempt until its response's
//     headers, and gives its limiter slot back then: the time to read the
//     body is not in the RTT, and a body being read holds no slot.
//   - Headers: each attempt carries [AttemptHeader] and [TimeoutHeader]
//     unless Config turns them off; the request's own Header is not
//     modified, and the returned response's Request is req, as
//     http.Transport answers with its caller's (each attempt sends a
//     shallow copy of req, with its own context and Header).
type Transport struct {
	gate       *floodgate.Gate
	base       http.RoundTripper
	classify   Classifier
	keys       bool
	attemptHdr bool
	timeoutHdr bool
	shareHdr   bool // Base is an *http.Transport: attemptHeaders and lastHdr may be sent
	lastHdr    atomic.Pointer[sharedHeader]
	poolTrace  bool // Base is an *http.Transport: tracers are reused
	tracers    sync.Pool
	onHidden   func(int)
	hidden     atomic.Int64
}

// NewTransport returns a Transport that sends requests through gate with
// cfg, or an error if gate is nil.
func NewTransport(gate *floodgate.Gate, cfg Config) (*Transport, error) {
	if gate == nil {
		return nil, errors.New("floodhttp: NewTransport: gate is nil")
	}
	t := &Transport{gate: gate, base: cfg.Base, classify: cfg.Classify, keys: cfg.IdempotencyKeys,
		attemptHdr: !cfg.NoAttemptHeader, timeoutHdr: !cfg.NoTimeoutHeader, onHidden: cfg.OnHiddenRetry}
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	_, t.shareHdr = t.base.(*http.Transport)
	t.poolTrace = t.shareHdr
	if t.classify == nil {
		t.classify = Classify
	}
	return t, nil
}

// NewClient returns an *http.Client whose Transport is NewTransport(gate,
// cfg), or NewTransport's error. The client has no Timeout of its own:
// give each request a context with a deadline, or the Gate a
// retry.Config.Timeout.
func NewClient(gate *floodgate.Gate, cfg Config) (*http.Client, error) {
	t, err := NewTransport(gate, cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t}, nil
}

// HiddenRetries counts the requests that Base re-sent on its own, within
// one attempt, since NewTransport: net/http's Transport re-sends a request
// that failed on a reused keep-alive connection before any answer (the
// server closed it as the request went out) if the request is GET, HEAD,
// OPTIONS or TRACE, or has an Idempotency-Key header, and its body can be
// replayed, or if nothing was written. Each is a second connection
// handed to the request (httptrace GotConn) within one attempt. The Gate
// does not see them: each is one more request on the downstream than the
// Gate's attempt count, at most one per idle connection the pool held, and
// in practice a sign of idle timeouts that do not match (the server's
// shorter than the client's).
func (t *Transport) HiddenRetries() int64 { return t.hidden.Load() }

// CloseIdleConnections closes Base's idle connections, if Base has such a
// method (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Gate returns the Transport's Gate.
func (t *Transport) Gate() *floodgate.Gate { return t.gate }

// RoundTrip sends req through the Gate (see [Transport]).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c := call{t: t, req: req}
	var tc *traceCtx
	if traceKey != nil && httptrace.ContextClientTrace(ctx) == nil {
		tc = &traceCtx{Context: ctx}
		c.tr = t.takeTracer()
		tc.tr.Store(c.tr)
		c.ctx = tc
	} else {
		c.tr = newTracer()
		c.ctx = httptrace.WithClientTrace(ctx, &c.tr.trace) // composed with the caller's
	}
	gctx := ctx
	switch {
	case req.Body != nil && req.Body != http.NoBody && req.GetBody == nil:
		gctx = retry.NonIdempotent(ctx) // cannot be replayed: never retried
	case idempotent(req.Method):
	default:
		key := req.Header.Get("Idempotency-Key")
		if key == "" && t.keys && (req.Method == http.MethodPost || req.Method == http.MethodPatch) {
			key = newKey()
			c.key = []string{key}
		}
		gctx = retry.NonIdempotent(ctx)
		if key != "" {
			gctx = retry.WithIdempotencyKey(gctx, key)
		}
	}
	err := t.gate.Guard(gctx, c.attempt)
	if tc != nil {
		tc.tr.Store(nil) // a later look-up finds no trace
		if t.poolTrace {
			t.tracers.Put(c.tr)
		}
	}
	if !c.sent && req.Body != nil {
		_ = req.Body.Close() // a RoundTripper closes the body, even on errors
	}
	if c.resp != nil {
		return c.resp, nil
	}
	return nil, err
}

// idempotent reports whether RFC 9110 §9.2.2 makes method idempotent.
func idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// newKey returns a random UUID (version 4) as a structured-field string.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [38]byte
	s[0], s[37] = '"', '"'
	hex.Encode(s[1:9], b[0:4])
	s[9] = '-'
	hex.Encode(s[10:14], b[4:6])
	s[14] = '-'
	hex.Encode(s[15:19], b[6:8])
	s[19] = '-'
	hex.Encode(s[20:24], b[8:10])
	s[24] = '-'
	hex.Encode(s[25:37], b[10:16])
	return string(s[:])
}

// errNoReplay is an attempt's error when GetBody failed: the request never
// reached the downstream, so the breaker and the limiter ignore it and the
// retry's budget token is refunded.
type errNoReplay struct{ err error }

func (e *errNoReplay) Error() string           { return "floodhttp: cannot replay the body: " + e.err.Error() }
func (e *errNoReplay) Unwrap() error           { return e.err }
func (e *errNoReplay) RetryClass() retry.Class { return retry.ClassRefused }

var errNoAnswer = errors.New("floodhttp: Base returned neither a response nor an error")

// drainMax and drainTime bound the reading of a failed attempt's body.
const (
	drainMax  = 4 << 10
	drainTime = 100 * time.Millisecond
)

// call is one RoundTrip: its attempts share it, one after the other.
type call struct {
	t    *Transport
	req  *http.Request
	ctx  context.Context // the attempts' parent: req's with the trace (a *traceCtx, or httptrace's)
	tr   *tracer
	key  []string // a generated Idempotency-Key, nil if none
	n    int      // attempts so far
	sent bool     // req.Body was handed to Base
	resp *http.Response
}

// traceCtx is a request's context with a trace, as
// httptrace.WithClientTrace makes it, in one allocation of 32 bytes, and
// without the trace once its RoundTrip returned (the tracer is then
// another call's).
type traceCtx struct {
	context.Context
	tr atomic.Pointer[tracer]
}

// Value returns the trace for httptrace's key (none once RoundTrip
// returned), and the request context's value for any other.
func (c *traceCtx) Value(key any) any {
	if key == traceKey {
		if tr := c.tr.Load(); tr != nil {
			return &tr.trace
		}
		return nil
	}
	return c.Context.Value(key)
}

// tracer counts the GotConn calls of an attempt: its trace has that hook
// alone. GotConn, not GetConn: HTTP/2's client can ask for a connection it
// then does not use (a dial that loses a race, a connection found closing),
// which GetConn would count as a re-send; GotConn comes once per connection
// a request was handed to.
type tracer struct {
	trace    httptrace.ClientTrace
	gotConns atomic.Int32
}

func newTracer() *tracer {
	tr := new(tracer)
	tr.trace.GotConn = tr.gotConn
	return tr
}

func (tr *tracer) gotConn(httptrace.GotConnInfo) { tr.gotConns.Add(1) }

// takeTracer returns a tracer for a call: from the Transport's pool when
// Base is an *http.Transport, which calls GotConn within RoundTrip alone
// (RoundTrip puts it back as it returns).
func (t *Transport) takeTracer() *tracer {
	if t.poolTrace {
		if tr, ok := t.tracers.Get().(*tracer); ok {
			return tr
		}
	}
	return newTracer()
}

// traceKey is the key under which httptrace keeps a ClientTrace in a
// context, as httptrace.ContextClientTrace asks for it, so that a
// traceCtx can answer it with its trace instead of a context of
// httptrace.WithClientTrace; nil if the probe did not find it, and then
// RoundTrip uses WithClientTrace.
var traceKey = func() any {
	p := &keyProbe{Context: context.Background()}
	_ = httptrace.ContextClientTrace(p) // records the key
	p.trace = &httptrace.ClientTrace{}
	if p.key == nil || httptrace.ContextClientTrace(p) != p.trace {
		return nil
	}
	return p.key
}()

// keyProbe records the key of the first Value asked of it, then answers
// that key with trace.
type keyProbe struct {
	context.Context
	key   any
	trace *httptrace.ClientTrace
}

func (p *keyProbe) Value(key any) any {
	if p.trace == nil {
		p.key = key
		return nil
	}
	if key == p.key {
		return p.trace
	}
	return nil
}

// attempt sends one attempt; actx is the Gate's attempt context, whose
// deadline it takes but not its cancellation, which comes when this
// returns: the attempt's context must outlive it, for the body.
func (c *call) attempt(actx context.Context) error {
	t, req := c.t, c.req
	if c.resp != nil { // a custom Gate classifier retried an answer we keep
		drain(c.resp)
		c.resp = nil
	}
	c.n++
	// The attempt's deadline, if the Gate gave it one earlier than the
	// request's: a context of its own, ended when the body is closed.
	ctx, cancel := c.ctx, context.CancelFunc(nil)
	d, hasD := actx.Deadline()
	if pd, ok := c.ctx.Deadline(); hasD && (!ok || d.Before(pd)) {
		ctx, cancel = context.WithDeadline(c.ctx, d)
	}
	r := req.WithContext(ctx)
	if c.n > 1 && req.Body != nil && req.Body != http.NoBody {
		b, err := req.GetBody()
		if err != nil {
			if cancel != nil {
				cancel()
			}
			return &errNoReplay{err}
		}
		r.Body = b
	}
	if t.attemptHdr || t.timeoutHdr && hasD || c.key != nil {
		r.Header = c.header(d, hasD)
	}
	c.sent = true
	tr := c.tr
	tr.gotConns.Store(0)
	resp, err := t.base.RoundTrip(r)
	if resp == nil && err == nil {
		err = errNoAnswer
	}
	if n := int(tr.gotConns.Load()) - 1; n > 0 {
		t.hidden.Add(int64(n))
		if t.onHidden != nil {
			t.onHidden(n)
		}
	}
	e := t.classify(resp, err)
	if resp == nil {
		if cancel != nil {
			cancel()
		}
		if e == nil { // a Classifier's success without an answer: not one
			return errors.New("floodhttp: Classifier returned nil for an error without a response: " + err.Error())
		}
		return e
	}
	if e == nil || retry.Classify(e) == retry.ClassPermanent {
		c.resp = resp
		if resp.Request == r {
			resp.Request = req // the caller's, as http.Transport answers with its caller's
		}
		if cancel != nil {
			keepBody(resp, cancel)
		}
		return e
	}
	drain(resp)
	if cancel != nil {
		cancel()
	}
	return e
}

// header returns the attempt's Header: req's with the attempt's headers.
// Without headers of the request's own (and Base an *http.Transport, which
// does not modify it), a shared one: attemptHeaders' with the attempt
// number alone, the Transport's last one if it has the same headers;
// otherwise a copy of req's (its values shared, never modified).
func (c *call) header(d time.Time, hasD bool) http.Header {
	t, req := c.t, c.req
	var ms int64
	timeout := false
	if t.timeoutHdr && hasD {
		ms, timeout = timeoutMS(time.Until(d))
	}
	shared := len(req.Header) == 0 && t.shareHdr && c.key == nil
	if shared && !timeout && t.attemptHdr && c.n <= len(attemptHeaders) {
		return attemptHeaders[c.n-1]
	}
	if shared && timeout {
		if e := t.lastHdr.Load(); e != nil && e.n == c.n && e.ms == ms {
			return e.h
		}
	}
	n := len(req.Header) // the map's exact size: a hint over 8 would double it
	if t.attemptHdr {
		n++
	}
	if timeout {
		n++
	}
	if c.key != nil {
		n++
	}
	h := make(http.Header, n)
	for k, v := range req.Header {
		h[k] = v
	}
	if t.attemptHdr {
		if c.n <= len(attemptValues) {
			h[AttemptHeader] = attemptValues[c.n-1]
		} else {
			h[AttemptHeader] = []string{strconv.Itoa(c.n)}
		}
	}
	if timeout {
		var buf [16]byte
		h[TimeoutHeader] = []string{string(appendTimeout(buf[:0], ms))}
	}
	if c.key != nil {
		h["Idempotency-Key"] = c.key
	}
	if shared && timeout {
		t.lastHdr.Store(&sharedHeader{c.n, ms, h})
	}
	return h
}

// sharedHeader is the Header of an attempt n with ms left, of a request
// without headers of its own: the last one a Transport built, which the
// next such attempt sends again if it has the same n and ms (with
// retry.Config.AttemptTimeout, the time left as the attempt starts is the
// same from one call to the next). Never modified once built.
type sharedHeader struct {
	n  int
	ms int64
	h  http.Header
}

// drain reads at most drainMax bytes of resp's body, for at most
// drainTime (then it closes the body under the read), and closes it.
func drain(resp *http.Response) {
	if resp.ContentLength <= drainMax { // -1: unknown
		stop := time.AfterFunc(drainTime, func() { _ = resp.Body.Close() })
		_, _ = io.CopyN(io.Discard, resp.Body, drainMax)
		stop.Stop()
	}
	_ = resp.Body.Close()
}

// keepBody makes closing resp's body, or reading it to its end, call
// cancel; an empty body calls it now.
func keepBody(resp *http.Response, cancel context.CancelFunc) {
	switch b := resp.Body.(type) {
	case nil:
		cancel()
	case io.ReadWriteCloser: // 101 Switching Protocols: keep Write
		resp.Body = &rwBody{body{b, cancel}, b}
	default:
		if b == http.NoBody {
			cancel()
			return
		}
		resp.Body = &body{b, cancel}
	}
}

// body is a kept response's body: its end ends the attempt's context.
type body struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.cancel() // the connection went back to the pool before Read returned
	}
	return n, err
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

type rwBody struct {
	body
	w io.Writer
}

func (b *rwBody) Write(p []byte) (int, error) { return b.w.Write(p) }
