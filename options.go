package floodgate

import (
	"log/slog"

	"github.com/floodgate-go/floodgate/adaptive"
	"github.com/floodgate-go/floodgate/breaker"
	"github.com/floodgate-go/floodgate/retry"
)

// Option configures a [Gate] in [New]: one option per layer, each taking
// that layer's Config, whose zero fields select the defaults.
type Option func(*config)

type config struct {
	limiter adaptive.Config
	breaker breaker.Config
	retry   retry.Config

	observer Observer
	logger   *slog.Logger
}

// WithLimiter configures the adaptive concurrency limiter (the innermost
// layer). See [adaptive.Config] for fields, defaults and ranges.
func WithLimiter(c adaptive.Config) Option { return func(g *config) { g.limiter = c } }

// WithBreaker configures the circuit breaker (the middle layer). See
// [breaker.Config] for fields, defaults and ranges.
func WithBreaker(c breaker.Config) Option { return func(g *config) { g.breaker = c } }

// WithRetry configures the retry loop and its budget (the outer layer). See
// [retry.Config] for fields, defaults and ranges; set its Budget to share a
// retry budget between gates.
func WithRetry(c retry.Config) Option { return func(g *config) { g.retry = c } }
