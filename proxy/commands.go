package proxy

import (
	"fmt"
	"math"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Commands the proxy answers itself: they concern the client's connection
// to the proxy (HELLO, AUTH, CLIENT, RESET ...) or the cluster as the
// proxy presents it (CLUSTER ...). The dispatcher has checked arity and
// NOAUTH; replies go to c.local.

// redisVersion is the Redis release whose behaviour the proxy reproduces.
const redisVersion = "7.0.15"

func localHandlers() map[string]func(c *client, args [][]byte) {
	h := map[string]func(c *client, args [][]byte){
		"ping":            cmdPing,
		"echo":            cmdEcho,
		"hello":           cmdHello,
		"auth":            cmdAuth,
		"select":          cmdSelect,
		"quit":            cmdQuit,
		"reset":           cmdReset,
		"time":            cmdTime,
		"cluster|keyslot": cmdClusterKeyslot,
		"multi":           cmdMulti,
		"discard":         cmdDiscard,
	}
	registerClientCmds(h)
	return h
}

func cmdPing(c *client, args [][]byte) {
	if len(args) > 2 {
		c.local.Error(fmt.Sprintf(resp.ErrWrongArgs, "ping"))
		return
	}
	if len(args) == 2 {
		c.local.Bulk(args[1])
		return
	}
	c.local.Simple("PONG")
}

func cmdEcho(c *client, args [][]byte) { c.local.Bulk(args[1]) }

// cmdHello answers HELLO [protover [AUTH user pass] [SETNAME name]] as
// Redis 7.0 does (options take effect as they are parsed).
func cmdHello(c *client, args [][]byte) {
	ver := int64(0)
	if len(args) >= 2 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			c.local.Error(resp.ErrHelloProtoVersion)
			return
		}
		if v < 2 || v > 3 {
			c.local.Error(resp.ErrNoProto)
			return
		}
		ver = v
	}
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := args[j]; {
		case slots.EqualFold("auth", opt) && more >= 2:
			if !c.srv.checkPassword(args[j+1], args[j+2]) {
				c.local.Error(resp.ErrWrongPass)
				return
			}
			c.setAuthed(true)
			j += 2
		case slots.EqualFold("setname", opt) && more >= 1:
			if !validClientName(args[j+1]) {
				c.local.Error(resp.ErrClientName)
				return
			}
			c.setName(args[j+1])
			j++
		default:
			c.local.Error(fmt.Sprintf(resp.ErrHelloOption, opt))
			return
		}
	}
	if !c.authed {
		c.local.Error(resp.ErrHelloNoAuth)
		return
	}
	if ver != 0 {
		// HELLO is a batch barrier (route.barrier): the replies before
		// it have been made in the old protocol.
		c.setProto(int(ver))
		c.switchWatchProto(int(ver))
	}
	w := &c.local
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(redisVersion)
	w.BulkString("proto")
	w.Int(int64(w.Proto))
	w.BulkString("id")
	w.Int(c.id)
	w.BulkString("mode")
	w.BulkString("cluster")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
}

// checkPassword reports whether user/pass authenticate against the
// proxy's requirepass ("default" is the only user).
func (s *Server) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	return s.opts.RequirePass == "" || string(pass) == s.opts.RequirePass
}

func cmdAuth(c *client, args [][]byte) {
	if len(args) > 3 {
		c.local.Error(resp.ErrSyntax)
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 2 {
		if c.srv.opts.RequirePass == "" {
			c.local.Error(resp.ErrAuthNoPassword)
			return
		}
	} else {
		user, pass = args[1], args[2]
	}
	if !c.srv.checkPassword(user, pass) {
		c.local.Error(resp.ErrWrongPass)
		return
	}
	c.setAuthed(true)
	c.local.OK()
}

// cmdSelect: like a Redis Cluster node, only database 0.
func cmdSelect(c *client, args [][]byte) {
	id, ok := resp.ParseInt(args[1])
	if !ok {
		c.local.Error(resp.ErrNotInteger)
		return
	}
	if id < math.MinInt32 || id > math.MaxInt32 {
		c.local.Error(fmt.Sprintf(resp.ErrIntRange, math.MinInt32, math.MaxInt32))
		return
	}
	if id != 0 {
		c.local.Error(resp.ErrSelectCluster)
		return
	}
	c.local.OK()
}

func cmdQuit(c *client, args [][]byte) {
	c.local.OK()
	c.closing = true
}

// cmdReset returns the connection to its state right after connecting.
func cmdReset(c *client, args [][]byte) {
	c.discardTx()
	c.releaseWatches(false)
	c.setProto(2)
	c.setName(nil)
	c.reply = replyOn
	c.setAuthed(c.srv.opts.RequirePass == "")
	c.local.Simple("RESET")
}

func cmdTime(c *client, args [][]byte) {
	now := c.srv.opts.Now()
	var tmp [24]byte
	c.local.Array(2)
	c.local.Bulk(strconv.AppendInt(tmp[:0], now.Unix(), 10))
	c.local.Bulk(strconv.AppendInt(tmp[:0], int64(now.Nanosecond()/1000), 10))
}

func cmdClusterKeyslot(c *client, args [][]byte) {
	c.local.Int(int64(slots.Slot(args[2])))
}

// proxyOnlyCommand returns the handler of a command the proxy serves
// although the nodes do not (cluster-client handshakes), or nil.
func proxyOnlyCommand(name []byte) func(c *client, args [][]byte) {
	switch {
	case slots.EqualFold("readonly", name), slots.EqualFold("readwrite", name):
		return cmdReadMode
	case slots.EqualFold("asking", name):
		return cmdAsking
	}
	return nil
}

// cmdReadMode accepts READONLY and READWRITE: the proxy serves reads and
// writes from the slot's owner either way.
func cmdReadMode(c *client, args [][]byte) {
	if len(args) != 1 {
		c.local.Error(fmt.Sprintf(resp.ErrWrongArgs, string(lower(args[0]))))
		return
	}
	if !c.authed {
		c.local.Error(resp.ErrNoAuth)
		return
	}
	c.local.OK()
}

// cmdAsking accepts ASKING: the proxy never sends ASK, so it has nothing
// to allow.
func cmdAsking(c *client, args [][]byte) { cmdReadMode(c, args) }

// clusterSubcommand returns the proxy's handler for the CLUSTER
// subcommands cluster-aware clients use, or nil for the rest (KEYSLOT and
// HELP come from the command table).
func clusterSubcommand(name []byte) func(c *client, args [][]byte) {
	for _, s := range clusterCmds {
		if slots.EqualFold(s.name, name) {
			return s.run
		}
	}
	return nil
}

var clusterCmds = []struct {
	name  string
	write func(w *resp.Writer, s *clusterSelf)
	run   func(c *client, args [][]byte)
}{
	{name: "slots", write: writeClusterSlots},
	{name: "shards", write: writeClusterShards},
	{name: "nodes", write: writeClusterNodes},
	{name: "info", write: writeClusterInfo},
	{name: "myid", write: writeClusterMyID},
}

func init() {
	for i := range clusterCmds {
		v := &clusterCmds[i]
		v.run = func(c *client, args [][]byte) {
			if len(args) != 2 {
				c.local.Error(fmt.Sprintf(resp.ErrWrongArgs, "cluster|"+v.name))
				return
			}
			if !c.authed {
				c.local.Error(resp.ErrNoAuth)
				return
			}
			self, err := clusterSelfFor(c.laddr, c.srv.myID)
			if err != nil {
				c.local.Error("ERR " + err.Error())
				return
			}
			v.write(&c.local, &self)
		}
	}
}

func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
