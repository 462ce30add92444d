package cluster_test

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
)

// TestBootstrapClaimsMatchRedisCLI: BootstrapClaims splits the slots as
// redis-cli --cluster create does, checked on five masters (16384/5 is not
// whole, so redis-cli's rounding shows).
func TestBootstrapClaimsMatchRedisCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	t.Parallel()
	const n = 5
	rc := difftest.StartRedisCluster(t, n)
	ids := make([]cluster.NodeID, n)
	for i := range ids {
		ids[i] = cluster.NodeID(fmt.Sprintf("%040x", i))
	}
	claims := cluster.BootstrapClaims(ids)
	for i, node := range rc.Nodes { // creation order = range order
		if len(node.Slots) != 1 || node.Slots[0].First != claims[i].First || node.Slots[0].Last != claims[i].Last {
			t.Errorf("master %d: redis-cli gave %v, BootstrapClaims %v", i, node.Slots, claims[i])
		}
	}
}
