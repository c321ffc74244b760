package floodgate

import "context"

type ownedKey struct{}

// WithRetriesOwned returns a context that says an upstream owns the
// retries of the work done with it: a Gate given this context makes one
// attempt per call, and a retryable failure ends the call at once with
// [ErrAttemptsExhausted] (its hint kept), without spending budget. It is
// for a server whose caller retries (package floodhttp sets it from the
// Floodgate-Attempt request header), so that the attempts of the layers
// do not multiply: with three layers of three attempts, 3 instead of 27
// reach the last downstream.
func WithRetriesOwned(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownedKey{}, true)
}

// RetriesOwned reports whether ctx was made by [WithRetriesOwned].
func RetriesOwned(ctx context.Context) bool {
	v, _ := ctx.Value(ownedKey{}).(bool)
	return v
}
