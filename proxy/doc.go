// Package proxy serves one RESP endpoint in front of many shardgate nodes.
//
// A client talks to the proxy as to one Redis. For every command the proxy
// finds the keys (slots' command table), computes their hash slot, and
// sends the command to the node that owns the slot; keyless commands are
// answered by the proxy itself (PING, HELLO, CLIENT, CLUSTER ...) or fanned
// out to every node and merged (DBSIZE, KEYS, SCAN, FLUSHALL, INFO's
// keyspace). Commands whose keys span slots are refused with CROSSSLOT,
// exactly as a Redis Cluster node refuses them, unless the proxy runs with
// CrossSlotSplit, which splits MGET, MSET, DEL, UNLINK, EXISTS and TOUCH.
//
// Backend connections. Each node has a small fixed set of pipelined
// connections per protocol version (RESP2, RESP3). A client is pinned to
// one of them per node (by client id), so its commands to one node stay in
// order; many clients share each connection. A client hands a whole batch
// (what it pipelined) to the connections at once: commands for one node go
// out in one write, and whichever client finds the connection idle writes
// everybody's queued bytes in one system call ("flush combining"), so no
// writer goroutine sits between a client and the socket. One reader
// goroutine per connection cuts replies out of its buffer (resp.ReplyLen),
// matches them to requests in FIFO order and passes them on byte for byte.
// The client writes its replies in its own order once all have arrived.
//
// Transactions with WATCH need the node's per-connection state, so they
// borrow a dedicated connection to the node; MULTI ... EXEC without WATCH
// is sent as one contiguous block on the shared connection, which the node
// runs as one unit. Blocking commands (BLPOP, BLMOVE ...) also wait on a
// dedicated connection, released when they end or the client leaves
// (blocking.go).
//
// Faults. A node that cannot be reached answers its slots with CLUSTERDOWN
// at once while a background recoverer tries it until it answers PING; a
// connection that breaks fails the
// requests in flight on it with an error naming the node; a node that
// stops answering is cut off after Options.NodeTimeout. Nothing waits
// forever, and the other nodes' slots keep working.
//
// Topology. In static mode (Options.Topology, --nodes) the slots are
// spread over a fixed node list. In cluster mode (Options.Cluster,
// --join) the proxy is a member of the gossip cluster that owns no slots
// and routes by the cluster's view: backends appear for nodes that join
// and are retired when they leave, a node the view declares dead has its
// slots answered with CLUSTERDOWN at once and its blocked clients woken,
// and it is served again when it returns (dynamic.go). Either way the
// nodes are the authority: a node's MOVED, ASK or TRYAGAIN is followed
// transparently, within a time budget (Options.RedirectTimeout) and a
// bounded number of hops, and MOVED updates the proxy's
// cached owner of the slot (moved.go). When several proxies are live,
// each presents the slots spread over all of them in its CLUSTER replies,
// so cluster-aware clients spread over the proxies (clusterview.go).
package proxy
