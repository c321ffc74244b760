package floodgate_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
)

func Example() {
	gate, err := floodgate.New("shipping-quote",
		floodgate.WithRetry(retry.Config{MaxAttempts: 3, Timeout: 2 * time.Second}))
	if err != nil {
		panic(err)
	}
	calls := 0
	quote, err := floodgate.Do(context.Background(), gate, func(ctx context.Context) (int, error) {
		calls++
		if calls == 1 { // the first attempt meets a busy downstream
			return 0, retry.Overload(errors.New("503 Service Unavailable"), 0)
		}
		return 1250, nil
	})
	fmt.Println(quote, err, calls)

	_, err = floodgate.Do(context.Background(), gate, func(ctx context.Context) (int, error) {
		return 0, retry.Permanent(errors.New("404 Not Found"))
	})
	fmt.Println(err)
	// Output:
	// 1250 <nil> 2
	// 404 Not Found
}
