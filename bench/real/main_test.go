package real

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain spins instead of testing when StartSpin re-executed the test
// binary, and otherwise fails the package's tests if any goroutine
// outlives them.
func TestMain(m *testing.M) {
	SpinIfAsked()
	goleak.VerifyTestMain(m)
}
