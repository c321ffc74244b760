// Package floodhttp puts floodgate into net/http: a client Transport
// whose requests go through a Gate, and server middleware with an
// adaptive limiter of its own. docs/http.md has the tables and examples.
//
// # Model
//
// Client: [Transport] is an http.RoundTripper. Each request is one Gate
// call; each attempt is one round trip through Config.Base (default
// http.DefaultTransport), classified by a [Classifier] ([Classify] maps
// RFC 9110's statuses: 429 and 503 are overload with their Retry-After,
// 408, 502, 504 and other 5xx are retried, other 4xx and 501 are
// permanent). Retries follow RFC 9110's idempotent methods and the
// Idempotency-Key header; a body is replayed with Request.GetBody. The
// Gate measures each attempt to its response's headers and then gives
// its slot back; the returned body stays readable, and a failed
// attempt's body is drained so that its connection is reused.
//
// Server: [Handler] admits a request while fewer than its limit are being
// served and answers the rest at once with 503 (or 429) and Retry-After;
// its limiter learns from each request's latency and outcome.
//
// Across processes: each attempt carries [AttemptHeader] (the caller owns
// the retries: the server's Gates make one attempt per call, so that the
// attempts of a chain of services add up instead of multiplying: 3, not
// 3 × 3 × 3 = 27) and [TimeoutHeader] (the time the attempt has left, so
// that the server works to the caller's deadline). A header, not a shared
// store: it travels with the request through any proxy, needs no
// coordination, and each hop can ignore it (Config.NoAttemptHeader,
// Config.NoTimeoutHeader, HandlerConfig.IgnoreAttemptHeader,
// HandlerConfig.IgnoreTimeoutHeader).
//
// # Hidden retries
//
// net/http's Transport itself re-sends a request that failed on a reused
// keep-alive connection before any answer, within one attempt, if the
// request is GET, HEAD, OPTIONS or TRACE or has an Idempotency-Key header,
// and its body can be replayed (or if nothing was written). The Gate does
// not see these; [Transport.HiddenRetries] counts them (a second GotConn
// within one attempt, by httptrace) and Config.OnHiddenRetry reports
// them. Each is one request more on the wire than the Gate's attempts,
// sent to a connection that had already failed: at most one per stale
// idle connection in the pool, per attempt, and a stale connection is
// used up by the first request that meets it. So they come in a burst
// after the server restarts or drops idle connections (its idle timeout
// shorter than the client's IdleConnTimeout), not on every call; most
// never reached the server's handler (the server had closed the
// connection), but one whose request was read before the connection broke
// did. The bound on what one call sends is MaxAttempts × (1 + the stale
// connections it meets); a steady count says the idle timeouts disagree.
package floodhttp
