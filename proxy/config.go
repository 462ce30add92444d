package proxy

import (
	"strconv"

	"github.com/shardgate/shardgate/internal/redisconf"
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
	pairs := args[2:]
	if nodeWide(pairs) {
		cmdAllOK(c, args)
		return
	}
	var ask [][]byte
	if len(pairs)%2 == 0 {
		for i := 0; i < len(pairs); i += 2 {
			if c.srv.config.ValueDependent(string(pairs[i])) {
				ask = append(ask, pairs[i])
			}
		}
	}
	if len(ask) == 0 {
		c.srv.config.Set(&c.local, pairs)
		return
	}
	r := c.forward(c.srv.anyNode(), append([][]byte{[]byte("CONFIG"), []byte("GET")}, ask...))
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

// nodeWide reports whether a CONFIG SET sets only parameters that every
// node applies to its own data and commands (the slow log's), which go to
// all of them.
func nodeWide(pairs [][]byte) bool {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return false
	}
	for i := 0; i < len(pairs); i += 2 {
		if !slots.EqualFold("slowlog-log-slower-than", pairs[i]) && !slots.EqualFold("slowlog-max-len", pairs[i]) {
			return false
		}
	}
	return true
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
			if p := c.srv.config.Lookup(string(name)); p != nil {
				val = []byte(p.Get())
			}
			c.w.Bulk(name)
			c.w.Bulk(val)
		}
	})
}
