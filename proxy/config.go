package proxy

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CONFIG through the proxy. The parameters that concern the endpoint a
// client talks to are the proxy's own: requirepass and maxclients (both
// settable, as on a node), bind, port and the client query and output
// buffer limits.
// CONFIG SET is answered by the proxy alone, but for the slow log's
// parameters, which it sets on every node, and otherwise never reaches
// the nodes:
// passed on, a requirepass would lock the proxy out of its own nodes at
// its next connection, and a maxclients would cap the proxy's backend
// connections rather than its clients. Every other parameter is immutable
// on the nodes too, so the proxy answers with the same errors a node
// gives. CONFIG GET asks a node (for what describes the data: appendonly,
// dir, save, ...) and puts the proxy's values in place of the node's for
// the endpoint's parameters.

// configTable is the proxy's own parameters.
func (s *Server) configTable() redisconf.Table {
	return redisconf.Table{
		{Name: "bind", Get: func() string { h, _ := s.listenHostPort(); return h }},
		{Name: "port", Get: func() string { _, p := s.listenHostPort(); return p }},
		s.cfg.RequirePassParam(),
		s.cfg.MaxClientsParam(),
		{Name: "client-query-buffer-limit", Get: func() string { return strconv.FormatInt(s.opts.QueryBufferLimit, 10) }},
		{Name: "client-output-buffer-limit", Get: s.outputBufferLimit},
		// The slow log's: set here for the commands the proxy runs
		// itself, and on every node (cmdConfigSet); CONFIG GET gives
		// a node's.
		s.slowlog.ThresholdParam(),
		s.slowlog.MaxLenParam(),
		// The proxy's own: its INFO latencystats.
		s.cmdStats.TrackingParam(),
		s.cmdStats.PercentilesParam(),
	}
}

// outputBufferLimit is client-output-buffer-limit in Redis's form: the
// proxy's hard limit for normal clients (0: none), and Redis's defaults
// for the replica and pub/sub classes, which the proxy never serves.
func (s *Server) outputBufferLimit() string {
	hard := max(s.opts.ClientOutputLimit, 0)
	return "normal " + strconv.FormatInt(hard, 10) + " 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
}

// listenHostPort splits the listening address for CONFIG GET bind/port.
func (s *Server) listenHostPort() (string, string) {
	return redisconf.ListenHostPort(s.opts.Addr, s.Addr())
}

// cmdConfigSet answers CONFIG SET from the proxy's parameters. A node
// parameter may only be "set" to the value it has (as on a node, where
// Redis would change it but shardgate cannot): that value is asked of a
// node first.
func cmdConfigSet(c *client, args [][]byte) {
	c.answerHere()
	pairs := args[2:]
	var ask, slow [][]byte
	if len(pairs)%2 == 0 {
		for i := 0; i < len(pairs); i += 2 {
			switch {
			case c.srv.config.ValueDependent(string(pairs[i])):
				ask = append(ask, pairs[i])
			case isSlowlogParam(pairs[i]):
				slow = append(slow, pairs[i], pairs[i+1])
			}
		}
	}
	switch {
	case len(ask) > 0 && len(slow) > 0:
		// The nodes' values are known only once the batch is sent, too
		// late to send the slowlog's on: one step at a time.
		c.localError(resp.ErrProxyConfigSetMixed)
		return
	case len(slow) > 0:
		// The proxy's own parameters and the slowlog's, checked in
		// Redis's order and set here; then the slowlog's go to every
		// node.
		if c.refusedNodeDown() {
			return
		}
		var check resp.Writer
		c.srv.config.Set(&check, pairs)
		if check.B[0] == '-' {
			c.localError(string(check.B[1 : len(check.B)-2]))
			return
		}
		c.mergeAllUnlogged(append([][]byte{args[0], args[1]}, slow...), func(c *client, reqs []*request) {
			c.w.Raw(reqs[0].reply)
		})
		return
	case len(ask) == 0:
		mark := len(c.local.B)
		c.srv.config.Set(&c.local, pairs)
		c.addLocal(mark)
		return
	}
	r := c.forward(c.srv.anyNode(), c.srv.unlogged(append([][]byte{[]byte("CONFIG"), []byte("GET")}, ask...)))
	c.addMerge(func(c *client) {
		t := append(redisconf.Table(nil), c.srv.config...)
		if v := decodeReply(r.reply); !v.IsError() && len(v.Elems)%2 == 0 {
			for i := 0; i < len(v.Elems); i += 2 {
				val := string(v.Elems[i+1].Str)
				t = append(t, redisconf.Param{Name: string(v.Elems[i].Str), Get: func() string { return val }})
			}
		}
		t.Set(&c.w, pairs)
	})
}

// isSlowlogParam reports whether name is one of the slow log's
// parameters, which the nodes hold.
func isSlowlogParam(name []byte) bool {
	return slots.EqualFold("slowlog-log-slower-than", name) || slots.EqualFold("slowlog-max-len", name)
}

// cmdConfigGet asks a node and replaces its values of the proxy's own
// parameters with the proxy's.
func cmdConfigGet(c *client, args [][]byte) {
	r := c.forward(c.srv.anyNode(), args)
	c.addMerge(func(c *client) {
		v := decodeReply(r.reply)
		if v.IsError() || len(v.Elems)%2 != 0 {
			c.w.Raw(r.reply)
			return
		}
		c.w.Map(len(v.Elems) / 2)
		for i := 0; i < len(v.Elems); i += 2 {
			name, val := v.Elems[i].Str, v.Elems[i+1].Str
			if p := c.srv.config.Lookup(string(name)); p != nil && !isSlowlogParam(name) {
				val = []byte(p.Get())
			}
			c.w.Bulk(name)
			c.w.Bulk(val)
		}
	})
}
