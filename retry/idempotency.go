package retry

import "context"

type idemKey struct{}

type idem struct {
	nonIdempotent bool
	key           string
}

// NonIdempotent returns a context that marks the call made with it as not
// idempotent (a payment, an e-mail): it is never retried unless it also
// carries an idempotency key.
func NonIdempotent(ctx context.Context) context.Context {
	v, _ := ctx.Value(idemKey{}).(idem)
	v.nonIdempotent = true
	return context.WithValue(ctx, idemKey{}, v)
}

// WithIdempotencyKey returns a context whose call carries key, which the
// call must send to the downstream (e.g. an Idempotency-Key header) so that
// the downstream can drop duplicates. A non-idempotent call with a key
// is retried. An empty key is no key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	v, _ := ctx.Value(idemKey{}).(idem)
	v.key = key
	return context.WithValue(ctx, idemKey{}, v)
}

// IdempotencyKey returns the key set by [WithIdempotencyKey], if any.
func IdempotencyKey(ctx context.Context) (string, bool) {
	v, _ := ctx.Value(idemKey{}).(idem)
	return v.key, v.key != ""
}

// mayRetry reports whether the call made with ctx may be repeated.
func mayRetry(ctx context.Context) bool {
	v, _ := ctx.Value(idemKey{}).(idem)
	return !v.nonIdempotent || v.key != ""
}
