package node

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// CLIENT subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, NO-EVICT,
// REPLY and HELP.
//
// CLIENT LIST prints Redis's fields in Redis's order. Fields that measure
// Redis's own buffers (qbuf, qbuf-free, argv-mem, multi-mem, rbs, rbp, obl,
// oll, omem, tot-mem) are 0: the node does not track them per client.
// Another connection's transaction state is private to its goroutine, so
// multi= and the 'x' flag are exact only for the calling client; other
// clients show multi=-1. Every client is of type normal and user default.

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
}

func (s *Server) cmdClientID(c *client, args [][]byte) { c.w.Int(c.id) }

func (s *Server) cmdClientSetName(c *client, args [][]byte) {
	if !validClientName(args[2]) {
		c.w.Error(resp.ErrClientName)
		return
	}
	c.setName(args[2])
	c.w.OK()
}

func (s *Server) cmdClientGetName(c *client, args [][]byte) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(name)
}

// validClientName: Redis allows only printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// setName sets the connection name; an empty name clears it.
func (c *client) setName(b []byte) {
	c.mu.Lock()
	c.name = string(b)
	c.mu.Unlock()
}

// clientType is Redis's client class for CLIENT LIST/KILL TYPE.
type clientType int

const (
	typeNormal clientType = iota
	typeReplica
	typePubSub
	typeMaster
)

// parseClientType reads a TYPE argument as Redis's getClientTypeByName.
func parseClientType(b []byte) (clientType, bool) {
	switch {
	case equalFoldASCII(b, "normal"):
		return typeNormal, true
	case equalFoldASCII(b, "slave"), equalFoldASCII(b, "replica"):
		return typeReplica, true
	case equalFoldASCII(b, "pubsub"):
		return typePubSub, true
	case equalFoldASCII(b, "master"):
		return typeMaster, true
	}
	return 0, false
}

// typeOf is the class of a client; the node has only normal clients until
// pub/sub and replication exist.
func (c *client) typeOf() clientType { return typeNormal }

// snapshotClients returns the live clients in connection order, as Redis's
// client list keeps them. Clients already killed are left out.
func (s *Server) snapshotClients() []*client {
	s.mu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, cl := range s.clients {
		if !cl.killed.Load() {
			out = append(out, cl)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *client) int { return int(a.id - b.id) })
	return out
}

// lookupClient finds a live client by id.
func (s *Server) lookupClient(id int64) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	cl := s.clients[id]
	if cl == nil || cl.killed.Load() {
		return nil
	}
	return cl
}

func (s *Server) cmdClientList(c *client, args [][]byte) {
	var b []byte
	switch {
	case len(args) == 4 && equalFoldASCII(args[2], "type"):
		t, ok := parseClientType(args[3])
		if !ok {
			c.w.Error(fmt.Sprintf(resp.ErrUnknownClientType, args[3]))
			return
		}
		for _, cl := range s.snapshotClients() {
			if cl.typeOf() == t {
				b = c.appendInfo(b, cl)
				b = append(b, '\n')
			}
		}
	case len(args) > 3 && equalFoldASCII(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := resp.ParseInt(a)
			if !ok {
				c.w.Error(resp.ErrInvalidClientID)
				return
			}
			if cl := s.lookupClient(id); cl != nil {
				b = c.appendInfo(b, cl)
				b = append(b, '\n')
			}
		}
	case len(args) == 2:
		for _, cl := range s.snapshotClients() {
			b = c.appendInfo(b, cl)
			b = append(b, '\n')
		}
	default:
		c.w.Error(resp.ErrSyntax)
		return
	}
	c.w.Verbatim(string(b))
}

func (s *Server) cmdClientInfo(c *client, args [][]byte) {
	b := c.appendInfo(nil, c)
	b = append(b, '\n')
	c.w.Verbatim(string(b))
}

// appendInfo appends cl's CLIENT LIST line (without the newline) as seen
// by c, the client running the command.
func (c *client) appendInfo(b []byte, cl *client) []byte {
	now := c.srv.opts.Now()
	cl.mu.Lock()
	name, proto, noEvict := cl.name, cl.proto, cl.noEvict
	cl.mu.Unlock()

	multi := -1
	var flags []byte
	if cl == c && c.multi != nil {
		flags = append(flags, 'x')
		multi = len(c.multi.cmds)
	}
	if cl == c && c.watch != nil && c.watch.flag.Dirty.Load() {
		flags = append(flags, 'd')
	}
	if cl == c && c.closing {
		flags = append(flags, 'c')
	}
	if noEvict {
		flags = append(flags, 'e')
	}
	if len(flags) == 0 {
		flags = append(flags, 'N')
	}
	cmd := "NULL"
	if lc := cl.lastCmd.Load(); lc != nil {
		cmd = lc.FullName
	}
	idle := max(0, (now.UnixNano()-cl.lastAt.Load())/1e9)

	b = append(b, "id="...)
	b = strconv.AppendInt(b, cl.id, 10)
	b = append(b, " addr="...)
	b = append(b, cl.raddr...)
	b = append(b, " laddr="...)
	b = append(b, cl.laddr...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(cl.fd), 10)
	b = append(b, " name="...)
	b = append(b, name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, max(0, int64(now.Sub(cl.created).Seconds())), 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, idle, 10)
	b = append(b, " flags="...)
	b = append(b, flags...)
	b = append(b, " db=0 sub=0 psub=0 ssub=0 multi="...)
	b = strconv.AppendInt(b, int64(multi), 10)
	b = append(b, " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd="...)
	b = append(b, cmd...)
	b = append(b, " user=default redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(proto), 10)
	return b
}

// cmdClientKill answers both forms: CLIENT KILL addr (reply OK or "No such
// client") and CLIENT KILL <filter> <value> ... (reply the number
// killed). Another client's connection is closed at once; the calling
// client is closed after its reply.
func (s *Server) cmdClientKill(c *client, args [][]byte) {
	var (
		addr, laddr []byte
		id          int64
		typ         = clientType(-1)
		skipMe      = true
	)
	if len(args) == 3 {
		addr, skipMe = args[2], false
	} else {
		for i := 2; i < len(args); i += 2 {
			more := i+1 < len(args)
			opt := args[i]
			switch {
			case equalFoldASCII(opt, "id") && more:
				v, ok := resp.ParseInt(args[i+1])
				if !ok || v < 1 {
					c.w.Error(resp.ErrClientIDRange)
					return
				}
				id = v
			case equalFoldASCII(opt, "type") && more:
				t, ok := parseClientType(args[i+1])
				if !ok {
					c.w.Error(fmt.Sprintf(resp.ErrUnknownClientType, args[i+1]))
					return
				}
				typ = t
			case equalFoldASCII(opt, "addr") && more:
				addr = args[i+1]
			case equalFoldASCII(opt, "laddr") && more:
				laddr = args[i+1]
			case equalFoldASCII(opt, "user") && more:
				// "default" is the only user, and every client is it.
				if string(args[i+1]) != "default" {
					c.w.Error(fmt.Sprintf(resp.ErrNoSuchUser, args[i+1]))
					return
				}
			case equalFoldASCII(opt, "skipme") && more:
				switch {
				case equalFoldASCII(args[i+1], "yes"):
					skipMe = true
				case equalFoldASCII(args[i+1], "no"):
					skipMe = false
				default:
					c.w.Error(resp.ErrSyntax)
					return
				}
			default:
				c.w.Error(resp.ErrSyntax)
				return
			}
		}
	}

	killed, self := 0, false
	for _, cl := range s.snapshotClients() {
		switch {
		case addr != nil && cl.raddr != string(addr),
			laddr != nil && cl.laddr != string(laddr),
			typ >= 0 && cl.typeOf() != typ,
			id != 0 && cl.id != id,
			cl == c && skipMe:
			continue
		}
		killed++
		if cl == c {
			self = true
			continue
		}
		if cl.killed.CompareAndSwap(false, true) {
			cl.nc.Close()
		}
	}
	if len(args) == 3 {
		if killed == 0 {
			c.w.Error(resp.ErrNoSuchClient)
		} else {
			c.w.OK()
		}
	} else {
		c.w.Int(int64(killed))
	}
	if self {
		c.closing = true
	}
}

func (s *Server) cmdClientNoEvict(c *client, args [][]byte) {
	var on bool
	switch {
	case equalFoldASCII(args[2], "on"):
		on = true
	case equalFoldASCII(args[2], "off"):
	default:
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
	case equalFoldASCII(args[2], "on"):
		c.reply = replyOn
		c.w.OK()
	case equalFoldASCII(args[2], "off"):
		c.reply = replyOff
	case equalFoldASCII(args[2], "skip"):
		if c.reply != replyOff {
			c.reply = replySkipNext
		}
	default:
		c.w.Error(resp.ErrSyntax)
	}
}

var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"HELP",
	"    Prints this help.",
}

func (s *Server) cmdClientHelp(c *client, args [][]byte) { writeHelp(c, clientHelp) }
