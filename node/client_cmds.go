package node

import (
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLIENT subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, NO-EVICT,
// REPLY and HELP; UNBLOCK is in blocking_cmds.go.
//
// CLIENT LIST prints Redis's fields in Redis's order. Fields that measure
// Redis's own buffers (qbuf, qbuf-free, argv-mem, multi-mem, rbs, rbp, obl,
// oll, omem, tot-mem) are 0: the node does not track them per client.
// Every client is of type normal and user default.

func registerClientCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["client|id"] = s.cmdClientID
	h["client|setname"] = s.cmdClientSetName
	h["client|getname"] = s.cmdClientGetName
	h["client|list"] = s.cmdClientList
	h["client|info"] = s.cmdClientInfo
	h["client|kill"] = s.cmdClientKill
	h["client|no-evict"] = s.cmdClientNoEvict
	h["client|reply"] = s.cmdClientReply
	h["client|help"] = s.cmdClientHelp
	h["client|pause"] = s.cmdClientPause
	h["client|unpause"] = s.cmdClientUnpause
}

func (s *Server) cmdClientID(c *client, args [][]byte) { c.w.Int(c.id) }

func (s *Server) cmdClientSetName(c *client, args [][]byte) {
	if !redisinfo.ValidName(args[2]) {
		c.w.Error(resp.ErrClientName)
		return
	}
	c.setName(args[2])
	c.w.OK()
}

func (s *Server) cmdClientGetName(c *client, args [][]byte) {
	name := c.clientName()
	if name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(name)
}

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

// typeOf is the class of a client; the node has only normal clients until
// pub/sub and replication exist.
func (c *client) typeOf() redisinfo.ClientType { return redisinfo.Normal }

// snapshotClients returns the live clients in connection order, as Redis's
// client list keeps them. Clients already killed are left out; clients
// whose connection completed are in (netserve.Clients.Settle).
func (s *Server) snapshotClients() []*client {
	s.clients.Settle()
	return s.clients.Live((*client).isKilled)
}

func (c *client) isKilled() bool { return c.killed.Load() }

// lookupClient finds a live client by id.
func (s *Server) lookupClient(id int64) (*client, bool) {
	cl, ok := s.clients.Get(id)
	return cl, ok && !cl.isKilled()
}

func (s *Server) cmdClientList(c *client, args [][]byte) {
	f, errMsg := redisinfo.ParseList(args)
	if errMsg != "" {
		c.w.Error(errMsg)
		return
	}
	c.w.Verbatim(redisinfo.List(f, s.snapshotClients, s.lookupClient, (*client).typeOf, c.appendInfo))
}

func (s *Server) cmdClientInfo(c *client, args [][]byte) {
	b := c.appendInfo(nil, c)
	b = append(b, '\n')
	c.w.Verbatim(string(b))
}

// appendInfo appends cl's CLIENT LIST line (without the newline) as seen
// by c, the client running the command.
func (c *client) appendInfo(b []byte, cl *client) []byte {
	l := redisinfo.NewLine(c.srv.opts.Now(), cl.id, cl.raddr, cl.laddr, cl.fd, cl.created, cl.lastAt.Load(), cl.lastCmd.Load())
	cl.mu.Lock()
	l.Name, l.Resp = cl.name, cl.proto
	noEvict, readonly := cl.noEvict, cl.readonly
	cl.mu.Unlock()
	multi := cl.listedMulti.Load()
	if multi >= 0 {
		l.Multi = int(multi)
	}
	wf := cl.listedWatch.Load()
	// Redis's 'b' (CLIENT_BLOCKED): a client is shown unblocked from the
	// instant it is served, as in Redis, even if its goroutine has not
	// written the reply yet.
	w := cl.blocked.Load()
	blocked := w != nil && w.state.Load() == waitPending || cl.paused.Load()
	l.Flags = redisinfo.Flags(c.srv.monitors.Is(cl.nc), multi >= 0, blocked, wf != nil && wf.Dirty.Load(), cl == c && c.closing, readonly, noEvict)
	return redisinfo.AppendLine(b, &l)
}

// cmdClientKill answers both forms: CLIENT KILL addr (reply OK or "No such
// client") and CLIENT KILL <filter> <value> ... (reply the number
// killed). Another client's connection is closed at once; the calling
// client is closed after its reply.
func (s *Server) cmdClientKill(c *client, args [][]byte) {
	f, errMsg := redisinfo.ParseKill(args)
	if errMsg != "" {
		c.w.Error(errMsg)
		return
	}
	attrs := func(cl *client) (int64, string, string, redisinfo.ClientType) {
		return cl.id, cl.raddr, cl.laddr, cl.typeOf()
	}
	n, self := redisinfo.Kill(&f, s.snapshotClients(), c, attrs, func(cl *client) {
		if cl.killed.CompareAndSwap(false, true) {
			close(cl.killedCh)
			cl.nc.Close()
		}
	})
	f.KillReply(&c.w, n)
	if self {
		c.closing = true
	}
}

func (s *Server) cmdClientNoEvict(c *client, args [][]byte) {
	on, ok := redisinfo.ParseNoEvict(args[2])
	if !ok {
		c.w.Error(resp.ErrSyntax)
		return
	}
	c.mu.Lock()
	c.noEvict = on
	c.mu.Unlock()
	c.w.OK()
}

// cmdClientReply sets CLIENT REPLY ON|OFF|SKIP; serveClient drops the
// replies (client.afterCommand). OFF and SKIP are not answered; SKIP does
// nothing while replies are OFF.
func (s *Server) cmdClientReply(c *client, args [][]byte) {
	switch {
	case equalFoldASCII(slots.CString(args[2]), "on"):
		c.reply = replyOn
		c.w.OK()
	case equalFoldASCII(slots.CString(args[2]), "off"):
		c.reply = replyOff
	case equalFoldASCII(slots.CString(args[2]), "skip"):
		if c.reply != replyOff {
			c.reply = replySkipNext
		}
	default:
		c.w.Error(resp.ErrSyntax)
	}
}

func (s *Server) cmdClientHelp(c *client, args [][]byte) {
	redisinfo.WriteHelp(&c.w, redisinfo.ClientHelp)
}
