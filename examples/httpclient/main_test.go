package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo runs against its own server and each call ends as its line
// says.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, ""); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{
		`server saw 3 request(s) [attempt 1 attempt 2 attempt 3]`,
		`status 404`,
		`retry-after hint longer than MaxDelay, attempts: 1`,
		`retry after 2m0s`,
		`body "first part, second part"`,
		`retry attempts exhausted, attempts: 3, last status 500`,
		`err.Error(): Get "http://`, // the error's own text too
		`retry attempts exhausted (3 attempts): floodhttp: status 500`,
		// the keyless POST: one request, not retried
		"/pay       503 then 200; no key: not retried              server saw 1 request(s) [attempt 1]",
		`non-idempotent call without an idempotency key, attempts: 1, last status 503`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
