package node_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestFlushGivesMemoryBack: after FLUSHALL, INFO's used_memory falls
// within moments, as Redis's does, rather than at Go's next collection
// (about two minutes on an idle node: a FLUSHALL of 1M keys still read
// 123 MB ten seconds later). The test runs alone, and without further
// allocation no collection would come in time.
func TestFlushGivesMemoryBack(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c := dialDiff(t, addr)
	used := func() int64 {
		t.Helper()
		n, err := strconv.ParseInt(infoField(t, c, "used_memory"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	value := strings.Repeat("v", 1<<20)
	for i := range 64 {
		if v, err := c.DoStrings("SET", fmt.Sprint("big:", i), value); err != nil || v.Text() != "OK" {
			t.Fatalf("SET: %v %v", v, err)
		}
	}
	full := used()
	if v, err := c.DoStrings("FLUSHALL"); err != nil || v.Text() != "OK" {
		t.Fatalf("FLUSHALL: %v %v", v, err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		now := used()
		if now < full-48<<20 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("used_memory %d 3 s after FLUSHALL of 64 MB, %d before", now, full)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
