package fleet

import (
	"strings"
	"testing"

	"github.com/floodgate-go/floodgate"
	"github.com/floodgate-go/floodgate/retry"
	"github.com/redis/go-redis/v9"
)

// TestAttachRejects: Attach takes only a gate made with the fleet's budget
// for its name, once.
func TestAttachRejects(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	f, err := New(client, Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Budget("a")
	if err != nil {
		t.Fatal(err)
	}
	own, _ := floodgate.New("a")
	other, _ := floodgate.New("b", floodgate.WithRetry(retry.Config{Budget: b}))
	good, _ := floodgate.New("a", floodgate.WithRetry(retry.Config{Budget: b}))
	for _, c := range []struct {
		g    *floodgate.Gate
		want string
	}{{nil, "nil"}, {own, "does not use"}, {other, "does not use"}, {good, ""}, {good, "attached already"}} {
		err := f.Attach(c.g)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Attach: %v, want %q", err, c.want)
		}
	}
	f.Close()
	if err := f.Attach(good); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Errorf("Attach after Close: %v", err)
	}
}
