package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A short run: it finishes and prints both rows and the headers line. It
// checks no timings (the machine may be slow).
func TestShortRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, 100, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"bare ", "floodhttp.Handler ", "RetriesOwned true", "1.5s left"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
