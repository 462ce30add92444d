package node

import (
	"github.com/shardgate/shardgate/internal/conncmd"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Connection-level commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET,
// TIME and CLUSTER KEYSLOT/HELP. They change the client's own state or
// answer without touching the keyspace, so they run outside its locks.
// The dispatcher has already checked arity and NOAUTH (HELLO, AUTH, QUIT
// and RESET carry the no-auth flag).

// redisVersion is what the node reports as its version (INFO).
const redisVersion = conncmd.RedisVersion

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
	h["bgrewriteaof"] = s.cmdBgrewriteaof
	h["bgsave"] = s.cmdBgsave
	h["save"] = s.cmdSave
	h["lastsave"] = s.cmdLastsave
	// ROLE: a master with no replicas and replication offset 0, as INFO
	// replication says (shardgate does not replicate).
	h["role"] = func(c *client, _ [][]byte) {
		c.w.Array(3)
		c.w.BulkString("master")
		c.w.Int(0)
		c.w.Array(0)
	}
	h["wait"] = s.cmdWait
	h["shutdown"] = s.cmdShutdown
	h["cluster|keyslot"] = s.cmdClusterKeyslot
	h["cluster|help"] = s.cmdClusterHelp
	h["config|get"] = s.cmdConfigGet
	h["config|set"] = s.cmdConfigSet
	h["config|resetstat"] = s.cmdConfigResetStat
	h["config|rewrite"] = s.cmdConfigRewrite
	h["config|help"] = s.cmdConfigHelp
	registerClientCmds(s, h)
	registerBlockingCmds(s, h)
	registerClusterCmds(s, h)
	registerSlowlogCmds(s, h)
	registerMemoryCmds(s, h)
	h["monitor"] = s.cmdMonitor
	return h
}

func (s *Server) cmdPing(c *client, args [][]byte) { conncmd.Ping(&c.w, args) }

func (s *Server) cmdEcho(c *client, args [][]byte) { c.w.Bulk(args[1]) }

func (s *Server) cmdHello(c *client, args [][]byte) {
	conncmd.Hello(&c.w, c, args, s.cfg.RequirePass())
}

func (s *Server) cmdAuth(c *client, args [][]byte) {
	conncmd.Auth(&c.w, c, args, s.cfg.RequirePass())
}

func (s *Server) cmdSelect(c *client, args [][]byte) { conncmd.Select(&c.w, args) }

func (s *Server) cmdQuit(c *client, args [][]byte) {
	c.w.OK()
	c.closing = true
}

// cmdReset returns the connection to its state right after connecting:
// no transaction or WATCH, RESP2, no name, READWRITE, CLIENT REPLY ON, and
// authenticated only if no password is required. CLIENT NO-EVICT stays,
// as in Redis 7.0.
func (s *Server) cmdReset(c *client, args [][]byte) {
	s.stopMonitor(c)
	c.discardTransaction()
	c.setProto(2)
	c.setName(nil)
	c.setReadonly(false)
	if c.reply != replySkipThis {
		// RESET ends CLIENT REPLY OFF, but a SKIP already applies to
		// RESET's own reply, as in Redis (it clears only REPLY_OFF and
		// REPLY_SKIP_NEXT).
		c.reply = replyOn
	}
	c.setAuthed(s.cfg.RequirePass() == "")
	c.w.Simple("RESET")
}

func (s *Server) cmdTime(c *client, args [][]byte) { conncmd.Time(&c.w, s.opts.Now()) }

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
