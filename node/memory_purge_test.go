package node_test

import (
	"runtime/metrics"
	"testing"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestMemoryPurgeCollects: MEMORY PURGE answers OK and a forced
// collection (debug.FreeOSMemory's, which returns memory to the OS)
// follows; it runs in the reclaimer's goroutine, not inside the command.
func TestMemoryPurgeCollects(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c := dial(t, addr, 2)
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := forced()
	v, err := c.DoStrings("MEMORY", "PURGE")
	if err != nil || v.Text() != "OK" {
		t.Fatalf("MEMORY PURGE: %v, %v", v, err)
	}
	waitFor(t, func() bool { return forced() > before })
}
