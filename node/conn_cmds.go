package node

import (
	"fmt"
	"math"
	"strconv"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Connection-level commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET,
// TIME and CLUSTER KEYSLOT/HELP. They change the client's own state or
// answer without touching the keyspace, so they run outside its locks.
// The dispatcher has already checked arity and NOAUTH (HELLO, AUTH, QUIT
// and RESET carry the no-auth flag).

// redisVersion is what the node reports as its version (HELLO, INFO): the
// Redis release whose behaviour it reproduces.
const redisVersion = "7.0.15"

// connHandlers lists the node-level command implementations by full name.
// Other areas register theirs here with one line each.
func (s *Server) connHandlers() map[string]func(c *client, args [][]byte) {
	h := map[string]func(c *client, args [][]byte){}
	registerTxCmds(s, h)
	registerCommandCmds(s, h)
	h["ping"] = s.cmdPing
	h["echo"] = s.cmdEcho
	h["hello"] = s.cmdHello
	h["auth"] = s.cmdAuth
	h["select"] = s.cmdSelect
	h["swapdb"] = func(c *client, _ [][]byte) { c.w.Error(resp.ErrSwapDBCluster) }
	h["quit"] = s.cmdQuit
	h["reset"] = s.cmdReset
	h["time"] = s.cmdTime
	h["info"] = s.cmdInfo
	h["cluster|keyslot"] = s.cmdClusterKeyslot
	h["cluster|help"] = s.cmdClusterHelp
	h["config|get"] = s.cmdConfigGet
	h["config|set"] = s.cmdConfigSet
	h["config|resetstat"] = s.cmdConfigResetStat
	h["config|help"] = s.cmdConfigHelp
	registerClientCmds(s, h)
	return h
}

func (s *Server) cmdPing(c *client, args [][]byte) {
	if len(args) > 2 {
		c.rejectf("wrong number of arguments for '%s' command", "ping")
		return
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return
	}
	c.w.Simple("PONG")
}

func (s *Server) cmdEcho(c *client, args [][]byte) { c.w.Bulk(args[1]) }

// cmdHello answers HELLO [protover [AUTH user pass] [SETNAME name]] as
// Redis 7.0 does: after the version check, each option takes effect as it
// is parsed, so "AUTH ... FOO" authenticates and "SETNAME n FOO" renames
// before the syntax error, and a name set by an unauthenticated client
// stays even though HELLO then answers NOAUTH.
func (s *Server) cmdHello(c *client, args [][]byte) {
	ver := int64(0)
	if len(args) >= 2 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			c.w.Error(resp.ErrHelloProtoVersion)
			return
		}
		if v < 2 || v > 3 {
			c.w.Error(resp.ErrNoProto)
			return
		}
		ver = v
	}
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := args[j]; {
		case equalFoldASCII(opt, "auth") && more >= 2:
			if !s.checkPassword(args[j+1], args[j+2]) {
				c.w.Error(resp.ErrWrongPass)
				return
			}
			c.setAuthed(true)
			j += 2
		case equalFoldASCII(opt, "setname") && more >= 1:
			if !redisinfo.ValidName(args[j+1]) {
				c.w.Error(resp.ErrClientName)
				return
			}
			c.setName(args[j+1])
			j++
		default:
			c.w.Error(fmt.Sprintf(resp.ErrHelloOption, opt))
			return
		}
	}
	if !c.authed {
		c.w.Error(resp.ErrHelloNoAuth)
		return
	}
	if ver != 0 {
		c.setProto(int(ver))
	}
	c.w.Map(7)
	c.w.BulkString("server")
	c.w.BulkString("redis")
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Int(int64(c.w.Proto))
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("cluster")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.Array(0)
}

// checkPassword reports whether user/pass authenticate. The only user is
// "default"; without requirepass it has no password, so any password is
// accepted for it (Redis's nopass).
func (s *Server) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	want := s.cfg.requirePass()
	return want == "" || string(pass) == want
}

// cmdAuth answers AUTH [user] pass. A failed AUTH leaves an already
// authenticated connection authenticated, as in Redis 7.
func (s *Server) cmdAuth(c *client, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(resp.ErrSyntax)
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 2 {
		if s.cfg.requirePass() == "" {
			c.w.Error(resp.ErrAuthNoPassword)
			return
		}
	} else {
		user, pass = args[1], args[2]
	}
	if !s.checkPassword(user, pass) {
		c.w.Error(resp.ErrWrongPass)
		return
	}
	c.setAuthed(true)
	c.w.OK()
}

// cmdSelect: a cluster node has only database 0.
func (s *Server) cmdSelect(c *client, args [][]byte) {
	id, ok := resp.ParseInt(args[1])
	if !ok {
		c.w.Error(resp.ErrNotInteger)
		return
	}
	if id < math.MinInt32 || id > math.MaxInt32 {
		c.w.Error(fmt.Sprintf(resp.ErrIntRange, math.MinInt32, math.MaxInt32))
		return
	}
	if id != 0 {
		c.w.Error(resp.ErrSelectCluster)
		return
	}
	c.w.OK()
}

func (s *Server) cmdQuit(c *client, args [][]byte) {
	c.w.OK()
	c.closing = true
}

// cmdReset returns the connection to its state right after connecting:
// no transaction or WATCH, RESP2, no name, CLIENT REPLY ON, and
// authenticated only if no password is required. CLIENT NO-EVICT stays,
// as in Redis 7.0.
func (s *Server) cmdReset(c *client, args [][]byte) {
	c.discardTransaction()
	c.setProto(2)
	c.setName(nil)
	c.reply = replyOn
	c.setAuthed(s.cfg.requirePass() == "")
	c.w.Simple("RESET")
}

func (s *Server) cmdTime(c *client, args [][]byte) {
	now := s.opts.Now()
	var tmp [24]byte
	c.w.Array(2)
	c.w.Bulk(strconv.AppendInt(tmp[:0], now.Unix(), 10))
	c.w.Bulk(strconv.AppendInt(tmp[:0], int64(now.Nanosecond()/1000), 10))
}

func (s *Server) cmdClusterKeyslot(c *client, args [][]byte) {
	c.w.Int(int64(slots.Slot(args[2])))
}

var clusterHelp = []string{
	"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ADDSLOTS <slot> [<slot> ...]",
	"    Assign slots to current node.",
	"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Assign slots which are between <start-slot> and <end-slot> to current node.",
	"BUMPEPOCH",
	"    Advance the cluster config epoch.",
	"COUNT-FAILURE-REPORTS <node-id>",
	"    Return number of failure reports for <node-id>.",
	"COUNTKEYSINSLOT <slot>",
	"    Return the number of keys in <slot>.",
	"DELSLOTS <slot> [<slot> ...]",
	"    Delete slots information from current node.",
	"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
	"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
	"FAILOVER [FORCE|TAKEOVER]",
	"    Promote current replica node to being a master.",
	"FORGET <node-id>",
	"    Remove a node from the cluster.",
	"GETKEYSINSLOT <slot> <count>",
	"    Return key names stored by current node in a slot.",
	"FLUSHSLOTS",
	"    Delete current node own slots information.",
	"INFO",
	"    Return information about the cluster.",
	"KEYSLOT <key>",
	"    Return the hash slot for <key>.",
	"MEET <ip> <port> [<bus-port>]",
	"    Connect nodes into a working cluster.",
	"MYID",
	"    Return the node id.",
	"NODES",
	"    Return cluster configuration seen by node. Output format:",
	"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
	"REPLICATE <node-id>",
	"    Configure current node as replica to <node-id>.",
	"RESET [HARD|SOFT]",
	"    Reset current node (default: soft).",
	"SET-CONFIG-EPOCH <epoch>",
	"    Set config epoch of current node.",
	"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
	"    Set slot state.",
	"REPLICAS <node-id>",
	"    Return <node-id> replicas.",
	"SAVECONFIG",
	"    Force saving cluster configuration on disk.",
	"SLOTS",
	"    Return information about slots range mappings. Each range is made of:",
	"    start, end, master and replicas IP addresses, ports and ids",
	"SHARDS",
	"    Return information about slot range mappings and the nodes associated with them.",
	"LINKS",
	"    Return information about all network links between this node and its peers.",
	"    Output format is an array where each array element is a map containing attributes of a link",
	"HELP",
	"    Prints this help.",
}

func (s *Server) cmdClusterHelp(c *client, args [][]byte) { writeHelp(c, clusterHelp) }

// equalFoldASCII compares an argument with a lower-case keyword, ignoring
// ASCII case, without allocating.
func equalFoldASCII(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
