package cluster_test

import (
	"context"
	"fmt"
	"log"

	"github.com/shardgate/shardgate/cluster"
)

// A node joins (or bootstraps, with two others) a cluster and follows its
// views: the slots it owns and where the others are.
func Example() {
	ctx := context.Background()
	key, err := cluster.ParseKey("000102030405060708090a0b0c0d0e0f")
	if err != nil {
		log.Fatal(err)
	}
	c, err := cluster.Start(ctx, cluster.Config{
		Role:            cluster.RoleNode,
		RESPAddr:        "10.0.0.1:7001",
		Bind:            "0.0.0.0:7946",
		Join:            []string{"10.0.0.2:7946", "10.0.0.3:7946"},
		BootstrapExpect: 3,
		Dir:             "/var/lib/shardgate",
		Key:             key,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for {
		ch := c.Changes()
		v := c.View()
		fmt.Println("cluster", v.ClusterID, "epoch", v.Epoch, "mine", v.Ranges(v.Self))
		if m, ok := v.Owner(12345); ok {
			fmt.Println("slot 12345 is served by", m.Addr, m.State)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
