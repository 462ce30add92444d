package proxy

import (
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLIENT subcommands, answered about the client's connection to the proxy
// (ids, names and addresses are the proxy's, never a node's): ID, SETNAME,
// GETNAME, LIST, INFO, KILL, NO-EVICT, REPLY and HELP, with Redis 7.0's
// formats and errors (shared with the node through internal/redisinfo).
//
// CLIENT LIST prints Redis's fields in Redis's order; the buffer fields
// (qbuf, omem ...) are 0. The 'd' flag (a WATCHed key changed) is never
// shown: the WATCH lives on the node, and for the same reason multi= goes
// on counting the commands queued after a watched key changed, which
// Redis no longer queues. Every client is of type normal
// and user default. idle is counted from the end of the client's last
// batch, and is 0 for the caller.

func registerClientCmds(h map[string]func(c *client, args [][]byte)) {
	h["client|id"] = func(c *client, _ [][]byte) { c.local.Int(c.id) }
	h["client|setname"] = cmdClientSetName
	h["client|getname"] = cmdClientGetName
	h["client|reply"] = cmdClientReply
	h["client|list"] = cmdClientList
	h["client|info"] = cmdClientInfo
	h["client|kill"] = cmdClientKill
	h["client|no-evict"] = cmdClientNoEvict
	h["client|help"] = func(c *client, _ [][]byte) { redisinfo.WriteHelp(&c.local, redisinfo.ClientHelp) }
	h["client|pause"] = cmdClientPause
	h["client|unpause"] = cmdClientUnpause
}

func cmdClientSetName(c *client, args [][]byte) {
	if !validClientName(args[2]) {
		c.local.Error(resp.ErrClientName)
		return
	}
	c.setName(args[2])
	c.local.OK()
}

func cmdClientGetName(c *client, _ [][]byte) {
	name := c.clientName()
	if name == "" {
		c.local.Null()
		return
	}
	c.local.BulkString(name)
}

// cmdClientReply: OFF and SKIP have no reply themselves; handle applies
// the mode to the ops that follow.
func cmdClientReply(c *client, args [][]byte) {
	switch {
	case slots.EqualFold("on", slots.CString(args[2])):
		c.reply = replyOn
		c.local.OK()
	case slots.EqualFold("off", slots.CString(args[2])):
		c.reply = replyOff
	case slots.EqualFold("skip", slots.CString(args[2])):
		if c.reply != replyOff {
			c.reply = replySkipNext
		}
	default:
		c.local.Error(resp.ErrSyntax)
	}
}

func cmdClientList(c *client, args [][]byte) {
	f, errMsg := redisinfo.ParseList(args)
	if errMsg != "" {
		c.local.Error(errMsg)
		return
	}
	normal := func(*client) redisinfo.ClientType { return redisinfo.Normal }
	c.local.Verbatim(redisinfo.List(f, c.srv.snapshotClients, c.srv.lookupClient, normal, c.appendClientLine))
}

func cmdClientInfo(c *client, _ [][]byte) {
	c.local.Verbatim(string(append(c.appendClientLine(nil, c), '\n')))
}

// appendClientLine appends cl's CLIENT LIST line, without the newline, as
// seen by c, the client running the command.
func (c *client) appendClientLine(b []byte, cl *client) []byte {
	self := cl == c
	now := c.srv.opts.Now()
	// lastAt is on the stats clock (one cheap read per batch): its age
	// on that clock, taken from now, is the wall time of the last
	// interaction.
	lastAt := now.UnixNano() - (c.srv.statClock() - cl.lastAt.Load())
	if self {
		lastAt = now.UnixNano() // running a command now
	}
	l := redisinfo.NewLine(now, cl.id, cl.raddr, cl.laddr, redisinfo.ConnFD(cl.nc), cl.created, lastAt, cl.lastCmd.Load())
	multi := cl.listedMulti.Load()
	if multi >= 0 {
		l.Multi = int(multi)
	}
	cl.mu.Lock()
	l.Name, l.Resp = cl.name, cl.proto
	l.Flags = redisinfo.Flags(c.srv.monitors.Is(cl.nc), multi >= 0, cl.blocked.Load() != nil || cl.paused.Load(), false, self && c.closing, cl.readonly, cl.noEvict)
	cl.mu.Unlock()
	return redisinfo.AppendLine(b, &l)
}

// cmdClientKill answers both forms: CLIENT KILL addr (reply OK or "No such
// client") and CLIENT KILL <filter> <value> ... (reply the number
// killed). Another client's connection is closed at once, which ends its
// goroutine (serveClient releases everything), and the reply waits until
// the blocking commands of those killed have ended on their nodes; the
// calling client is closed after its reply.
func cmdClientKill(c *client, args [][]byte) {
	f, errMsg := redisinfo.ParseKill(args)
	if errMsg != "" {
		c.local.Error(errMsg)
		return
	}
	attrs := func(cl *client) (int64, string, string, redisinfo.ClientType) {
		return cl.id, cl.raddr, cl.laddr, redisinfo.Normal
	}
	var blocked []*blockState
	n, self := redisinfo.Kill(&f, c.srv.snapshotClients(), c, attrs, func(cl *client) {
		if cl.killed.CompareAndSwap(false, true) {
			if st := cl.blocked.Load(); st != nil {
				blocked = append(blocked, st)
			}
			close(cl.killedCh)
			cl.nc.Close()
		}
	})
	// A killed client's blocking command ends on its node before the
	// reply, as in Redis, where a kill frees the client at once.
	for _, st := range blocked {
		c.srv.awaitEnded(st)
	}
	f.KillReply(&c.local, n)
	c.closing = c.closing || self
}

func cmdClientNoEvict(c *client, args [][]byte) {
	on, ok := redisinfo.ParseNoEvict(args[2])
	if !ok {
		c.local.Error(resp.ErrSyntax)
		return
	}
	c.mu.Lock()
	c.noEvict = on
	c.mu.Unlock()
	c.local.OK()
}

// snapshotClients returns the live clients in connection order, as Redis's
// client list keeps them; clients already killed are left out, clients
// whose connection completed are in (netserve.Clients.Settle).
func (s *Server) snapshotClients() []*client {
	s.clients.Settle()
	return s.clients.Live(func(cl *client) bool { return cl.killed.Load() })
}

// lookupClient finds a live client by id.
func (s *Server) lookupClient(id int64) (*client, bool) {
	cl, ok := s.clients.Get(id)
	return cl, ok && !cl.killed.Load()
}

// validClientName: Redis allows only printable ASCII without spaces.
func validClientName(b []byte) bool { return redisinfo.ValidName(b) }

// clientName is the connection name, "" if none.
func (c *client) clientName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// setName sets the connection name; an empty name clears it.
func (c *client) setName(b []byte) {
	c.mu.Lock()
	c.name = string(b)
	c.mu.Unlock()
}
