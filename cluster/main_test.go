package cluster

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests: every member's
// loops, joins and sends, and memberlist's own, end with Close. One kind
// ends a little later by design: a member that stops when no other is
// alive to hear its leave returns at once and leaves memberlist's Leave
// waiting out its timeout (Cluster.leave), at most the LAN profile's
// leave time. goleak's own retries give up sooner, so they are waited for
// here first; whatever is left after that is a leak.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(lanTimings().leave + time.Second)
		err := goleak.Find()
		for err != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
