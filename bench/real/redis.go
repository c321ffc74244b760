package real

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate-go/floodgate/retry"
)

// StallSleep is the length of one DEBUG SLEEP of the stalls phase, in
// seconds as Redis takes it; the stalls issue them back to back.
const StallSleep = "0.5"

// RedisContenders are the Redis trial's contenders, in table order.
var RedisContenders = []string{"go-redis", "go-redis deadline", "floodgate", "failsafe-go"}

// redisKeys are the keys the calls GET and SET.
var redisKeys = [...]string{"floodgate:real:0", "floodgate:real:1", "floodgate:real:2", "floodgate:real:3",
	"floodgate:real:4", "floodgate:real:5", "floodgate:real:6", "floodgate:real:7"}

// redisOptions returns the client options of a contender: go-redis's
// defaults with PoolSize connections; deadline sets ContextTimeoutEnabled,
// so that the client honours the call's (or attempt's) deadline.
func redisOptions(addr string, deadline bool) *redis.Options {
	return &redis.Options{Addr: addr, PoolSize: PoolSize, ContextTimeoutEnabled: deadline}
}

// redisCaller returns the contender named name and its client.
func redisCaller(name, addr string) (Caller, *redis.Client, error) {
	switch name {
	case "go-redis":
		return direct{}, redis.NewClient(redisOptions(addr, false)), nil
	case "go-redis deadline":
		return direct{}, redis.NewClient(redisOptions(addr, true)), nil
	case "floodgate":
		g, err := newGate("redis", MarkRedis)
		if err != nil {
			return nil, nil, err
		}
		return g, redis.NewClient(redisOptions(addr, true)), nil
	case "failsafe-go":
		return newFailsafe(permanentRedis), redis.NewClient(redisOptions(addr, true)), nil
	}
	return nil, nil, fmt.Errorf("no Redis contender %q", name)
}

// redisOp is call i's command: a SET every fourth call, a GET otherwise,
// on one of the keys; a GET of a missing key (redis.Nil) is a success.
func redisOp(ctx context.Context, c *redis.Client, i int) error {
	k := redisKeys[i%len(redisKeys)]
	if i%4 == 0 {
		return c.Set(ctx, k, i, 0).Err()
	}
	if err := c.Get(ctx, k).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return nil
}

// MarkRedis marks a go-redis error for floodgate as a user would: a
// server that says it is busy or not ready (LOADING, BUSY, TRYAGAIN,
// MASTERDOWN, CLUSTERDOWN, max clients) or a pool timeout is an overload;
// a connection closed before the answer (io.EOF) is transient; any other
// server answer (WRONGTYPE, ERR ...) is permanent. Everything else
// (timeouts, the context's deadline, refused or reset connections) is
// returned as it is: floodgate's default classifier retries it, a timeout
// as an overload.
func MarkRedis(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.ErrPoolTimeout), redisBusy(err):
		return retry.Overload(err, 0)
	case errors.Is(err, io.EOF):
		return retry.Transient(err)
	case permanentRedis(err):
		return retry.Permanent(err)
	}
	return err
}

// redisBusy reports whether err is a server's answer that it cannot serve
// now.
func redisBusy(err error) bool {
	return redis.IsLoadingError(err) || redis.IsTryAgainError(err) || redis.IsMasterDownError(err) ||
		redis.IsClusterDownError(err) || redis.IsMaxClientsError(err) ||
		(isRedisAnswer(err) && strings.HasPrefix(err.Error(), "BUSY "))
}

// isRedisAnswer reports whether err is an error reply of the server.
func isRedisAnswer(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// permanentRedis reports whether err is a server's error reply that
// retrying cannot fix.
func permanentRedis(err error) bool { return isRedisAnswer(err) && !redisBusy(err) }

// RedisPhases returns the Redis trial's phases for form f: healthy, the
// stalls (DEBUG SLEEP back to back on a connection of stall's), healthy
// again, and healthy with the client's machine kept busy by a spinning
// child process (Spin).
func RedisPhases(f Form, stall *redis.Client) []Phase {
	return []Phase{
		{Name: "healthy", Healthy: true, For: f.Healthy},
		{Name: "stalls", For: f.Stalls, Start: func() (func() error, error) { return startStalls(stall, f.Stalls) }},
		{Name: "healthy again", Healthy: true, For: f.Heal},
		{Name: "busy client", Healthy: true, For: f.Busy, Start: func() (func() error, error) { return StartSpin(f.Busy) }},
	}
}

// startStalls issues DEBUG SLEEP StallSleep back to back on c until its
// stop function is called (at most d/StallSleep + 2 of them); the stop
// function returns once the last one has returned, with the first error
// of one (the server refusing DEBUG, for example).
func startStalls(c *redis.Client, d time.Duration) (func() error, error) {
	stop, done := make(chan struct{}), make(chan error, 1)
	most := int(d/(500*time.Millisecond)) + 2
	go func() {
		n := 0
		for ; n < most; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := c.Do(context.Background(), "DEBUG", "SLEEP", StallSleep).Err(); err != nil {
				done <- fmt.Errorf("DEBUG SLEEP %s (start redis-server with --enable-debug-command local): %w", StallSleep, err)
				return
			}
		}
		done <- nil
	}()
	return func() error { close(stop); return <-done }, nil
}

// RedisTrial runs the Redis trial of form f against the Redis at addr
// (host:port on 127.0.0.1, with DEBUG enabled): the contenders side by
// side, each with its own client and pool, through RedisPhases. It returns
// the results, or the first error (Redis unreachable, DEBUG refused, a
// contender's constructor).
func RedisTrial(addr string, f Form) (*Result, error) {
	stall := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, ReadTimeout: 5 * time.Second, MaxRetries: -1})
	defer stall.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stall.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	if err := stall.Do(ctx, "DEBUG", "SLEEP", "0").Err(); err != nil {
		return nil, fmt.Errorf("redis at %s refuses DEBUG (start redis-server with --enable-debug-command local): %w", addr, err)
	}
	for _, k := range redisKeys {
		if err := stall.Set(ctx, k, "0", 0).Err(); err != nil {
			return nil, fmt.Errorf("redis at %s: %w", addr, err)
		}
	}
	var lanes []lane
	for _, name := range RedisContenders {
		c, client, err := redisCaller(name, addr)
		if err != nil {
			return nil, err
		}
		defer client.Close()
		lanes = append(lanes, lane{c, func(ctx context.Context, i int) error { return redisOp(ctx, client, i) }})
	}
	phases := RedisPhases(f, stall)
	tl, err := runTimeline(phases, lanes)
	if err != nil {
		return nil, err
	}
	r := &Result{Trial: "Redis", Phases: phases, Contenders: RedisContenders}
	for j := range lanes {
		r.Stats = append(r.Stats, tl.stats(j))
	}
	return r, nil
}

// RedisAddrEnv names the environment variable that gives the trials'
// Redis address (host:port on 127.0.0.1); scripts/e2e-real.sh sets it.
const RedisAddrEnv = "FLOODGATE_REDIS_ADDR"
