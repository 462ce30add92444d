//go:build !race

package node_test

import (
	"slices"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// stallLimit is the GET p99 the stall tests allow while heavy commands
// run on another slot.
const stallLimit = 5 * time.Millisecond

// getP99UnderLoad times get once a millisecond in windows of one second
// and returns the p99 of each window, stopping at the first under
// stallLimit (at most three windows). A stall (a lock held for a whole
// heavy command) shows in every window; CPU contention on a busy 2-core
// machine in one now and then, so callers fail only if every window is
// over the limit.
func getP99UnderLoad(t *testing.T, what string, get func()) []time.Duration {
	t.Helper()
	var p99s []time.Duration
	for range 3 {
		var lat []time.Duration
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			t0 := time.Now()
			get()
			lat = append(lat, time.Since(t0))
			time.Sleep(time.Millisecond)
		}
		slices.Sort(lat)
		p99 := lat[len(lat)*99/100]
		t.Logf("GET on another key while %s: %d samples, p50 %v, p99 %v, max %v",
			what, len(lat), lat[len(lat)/2], p99, lat[len(lat)-1])
		p99s = append(p99s, p99)
		if p99 < stallLimit {
			break
		}
	}
	return p99s
}

// stallClient returns the stall tests' helpers: dial opens a connection
// to addr closed at the test's end, must runs a command that must not
// fail.
func stallClient(t *testing.T, addr string) (dial func() *difftest.Conn, must func(c *difftest.Conn, args ...string) difftest.Value) {
	dial = func() *difftest.Conn {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	must = func(c *difftest.Conn, args ...string) difftest.Value {
		v, err := c.DoStrings(args...)
		if err != nil || v.IsError() {
			t.Fatalf("%q: %v %v", args, v, err)
		}
		return v
	}
	return dial, must
}
