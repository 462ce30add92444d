package node_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/slots"
)

// TestDiffClusterKeysInSlot compares CLUSTER COUNTKEYSINSLOT and
// GETKEYSINSLOT with a cluster-mode redis-server owning every slot: counts,
// full and partial listings in order (newest key first), and every
// argument error.
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
		c.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, "10")
		c.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, "4")
		c.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, "2")
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

// TestDiffClusterKeysInSlotOrder runs random writes, deletes, renames and
// copies on the keys of one slot and compares GETKEYSINSLOT's order after
// each: a replaced value keeps its key's place, a key created again (after
// DEL, RENAME, COPY ... REPLACE or an emptied list) comes first.
func TestDiffClusterKeysInSlotOrder(t *testing.T) {
	p := difftest.Start(t)
	slot := strconv.Itoa(int(slots.SlotString("{t}")))
	rng := rand.New(rand.NewPCG(5, 6))
	key := func() string { return "{t}" + strconv.Itoa(rng.IntN(8)) }
	for range 400 {
		k, k2 := key(), key()
		var cmd []string
		switch rng.IntN(9) {
		case 0, 1:
			cmd = []string{"SET", k, "v"}
		case 2:
			cmd = []string{"DEL", k}
		case 3:
			cmd = []string{"RENAME", k, k2}
		case 4:
			cmd = []string{"COPY", k, k2, "REPLACE"}
		case 5:
			cmd = []string{"RPUSH", k, "x"}
		case 6:
			cmd = []string{"LPOP", k}
		case 7:
			cmd = []string{"APPEND", k, "x"}
		case 8:
			cmd = []string{"SETNX", k, "y"}
		}
		p.Do(t, cmd...)
		p.Do(t, "CLUSTER", "GETKEYSINSLOT", slot, strconv.Itoa(rng.IntN(10)))
	}
}
