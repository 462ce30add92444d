package node

import (
	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/resp"
)

// CLUSTER SLOTS, SHARDS, NODES, INFO, MYID and REPLICAS (SLAVES), and
// READONLY, READWRITE and ASKING: what cluster-aware clients (go-redis's
// ClusterClient, redis-cli -c and --cluster check) ask a cluster node. The replies are Redis
// 7.0.15's (internal/clusterfmt) for the cluster the Ownership describes;
// a standalone node describes a cluster of one master owning every slot,
// at the address the client connected to, at epoch 0: what a lone Redis
// Cluster node given every slot answers. The dispatcher has checked arity
// and NOAUTH.

// registerClusterCmds adds the handlers to the node-level commands.
func registerClusterCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	view := func(write func(*resp.Writer, *clusterfmt.Layout)) func(c *client, args [][]byte) {
		return func(c *client, args [][]byte) { write(&c.w, s.clusterLayout(c)) }
	}
	h["cluster|slots"] = view(clusterfmt.WriteSlots)
	h["cluster|shards"] = view(clusterfmt.WriteShards)
	h["cluster|nodes"] = view(clusterfmt.WriteNodes)
	h["cluster|info"] = view(clusterfmt.WriteInfo)
	h["cluster|myid"] = view(clusterfmt.WriteMyID)
	h["cluster|links"] = view(clusterfmt.WriteLinks)
	replicas := func(c *client, args [][]byte) { clusterfmt.WriteReplicas(&c.w, s.clusterLayout(c), args[2]) }
	h["cluster|replicas"] = replicas
	h["cluster|slaves"] = replicas
	h["cluster|count-failure-reports"] = func(c *client, args [][]byte) {
		clusterfmt.WriteCountFailureReports(&c.w, s.clusterLayout(c), args[2])
	}
	readMode := func(on bool) func(c *client, args [][]byte) {
		return func(c *client, args [][]byte) {
			c.setReadonly(on)
			c.w.OK()
		}
	}
	h["readonly"] = readMode(true)
	h["readwrite"] = readMode(false)
	h["asking"] = func(c *client, args [][]byte) { c.w.OK() }
}

// setReadonly records READONLY (on) or READWRITE: a master serves reads
// either way, but CLIENT LIST shows the flag, as Redis's does.
func (c *client) setReadonly(on bool) {
	c.mu.Lock()
	c.readonly = on
	c.mu.Unlock()
}

// clusterLayout is the cluster as this node describes it to c.
func (s *Server) clusterLayout(c *client) *clusterfmt.Layout {
	if s.own != nil {
		return s.own.Layout()
	}
	host, port, err := clusterfmt.SplitHostPort(c.laddr)
	if err != nil { // not a TCP address (tests over pipes)
		host, port = "", 0
	}
	return clusterfmt.Single(s.nodeID, host, port, 0)
}
