package node_test

import (
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/slots"
)

// TestDiffClusterKeysInSlot compares CLUSTER COUNTKEYSINSLOT and
// GETKEYSINSLOT with a cluster-mode redis-server owning every slot: counts,
// full listings (order aside: Redis lists newest first, the node in no
// order), and every argument error.
func TestDiffClusterKeysInSlot(t *testing.T) {
	p := difftest.Start(t)
	for _, proto := range []int{2, 3} {
		p.Flush(t)
		c := p.NewConnProto(t, proto)
		slot := strconv.Itoa(int(slots.SlotString("{t}")))
		other := strconv.Itoa(int(slots.SlotString("x")))
		c.Do(t, "CLUSTER", "COUNTKEYSINSLOT", slot)
		c.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, "10")
		c.Do(t, "MSET", "{t}a", "1", "{t}b", "2", "{t}c", "3")
		c.Do(t, "RPUSH", "{t}list", "x")
		c.Do(t, "SET", "x", "1")
		c.Do(t, "CLUSTER", "COUNTKEYSINSLOT", slot)
		c.Do(t, "CLUSTER", "COUNTKEYSINSLOT", other)
		c.DoUnordered(t, "CLUSTER", "GETKEYSINSLOT", slot, "10")
		c.DoUnordered(t, "CLUSTER", "GETKEYSINSLOT", slot, "4")
		c.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, "0")
		c.Do(t, "CLUSTER", "GETKEYSINSLOT", other, "1")
		for _, bad := range [][]string{
			{"COUNTKEYSINSLOT", "-1"}, {"COUNTKEYSINSLOT", "16384"}, {"COUNTKEYSINSLOT", "x"},
			{"COUNTKEYSINSLOT", "1.5"}, {"COUNTKEYSINSLOT"}, {"COUNTKEYSINSLOT", "1", "2"},
			{"GETKEYSINSLOT", "1", "-1"}, {"GETKEYSINSLOT", "-1", "1"}, {"GETKEYSINSLOT", "16384", "1"},
			{"GETKEYSINSLOT", "x", "1"}, {"GETKEYSINSLOT", "1", "x"}, {"GETKEYSINSLOT", "x", "-1"},
			{"GETKEYSINSLOT", "1"}, {"GETKEYSINSLOT", "1", "2", "3"},
		} {
			c.Do(t, append([]string{"CLUSTER"}, bad...)...)
		}
	}
}
