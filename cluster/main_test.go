package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: every member's
// loops, joins and sends, and memberlist's own, end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
