package fleet

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the child role of the multi-process tests when childEnv is
// set (the test binary re-executed by the parent), else the tests under
// goleak.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	goleak.VerifyTestMain(m)
}
