//go:build e2e

package fleet

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// failHook fails every command while armed: Redis unreachable for one
// process only (its client), the others unaffected.
type failHook struct{ armed atomic.Bool }

func (h *failHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.Load() {
			err := errors.New("fleet test: Redis unreachable")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (h *failHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
