package proxy

import (
	"fmt"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/internal/cmdstats"
	"github.com/shardgate/shardgate/internal/conncmd"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/internal/servercmd"
	"github.com/shardgate/shardgate/slots"
)

// Commands the proxy answers itself: they concern the client's connection
// to the proxy (HELLO, AUTH, CLIENT, RESET ...) or the cluster as the
// proxy presents it (CLUSTER ...). The dispatcher has checked arity and
// NOAUTH; replies go to c.local.

// redisVersion is the Redis release whose behaviour the proxy reproduces.
const redisVersion = conncmd.RedisVersion

func localHandlers() map[string]func(c *client, args [][]byte) {
	h := map[string]func(c *client, args [][]byte){
		"ping":                cmdPing,
		"echo":                cmdEcho,
		"hello":               cmdHello,
		"auth":                cmdAuth,
		"select":              cmdSelect,
		"quit":                cmdQuit,
		"reset":               cmdReset,
		"time":                cmdTime,
		"cluster|keyslot":     cmdClusterKeyslot,
		"multi":               cmdMulti,
		"discard":             cmdDiscard,
		"readonly":            cmdReadMode,
		"readwrite":           cmdReadMode,
		"asking":              cmdAsking,
		"shutdown":            cmdShutdown,
		"monitor":             cmdMonitor,
		"memory|malloc-stats": cmdMallocStats,
	}
	registerClientCmds(h)
	// LATENCY reads the proxy's own per-command histograms (INFO
	// latencystats's), with no latency monitor (internal/cmdstats).
	for _, name := range cmdstats.LatencyCommands {
		h[name] = func(c *client, args [][]byte) { c.srv.cmdStats.Latency(&c.local, args) }
	}
	return h
}

// cmdShutdown checks SHUTDOWN's arguments as Redis does, then refuses
// it: through the proxy it could only mean stopping every node at once,
// and the proxy itself stops on a signal. ABORT answers as a Redis with
// no shutdown in progress.
func cmdShutdown(c *client, args [][]byte) {
	o, msg := servercmd.ParseShutdown(args)
	switch {
	case msg != "":
		c.local.Error(msg)
	case o.Abort:
		c.local.Error(resp.ErrNoShutdown)
	default:
		c.local.Error(resp.ErrProxyShutdown)
	}
}

func cmdPing(c *client, args [][]byte) { conncmd.Ping(&c.local, args) }

func cmdEcho(c *client, args [][]byte) { c.local.Bulk(args[1]) }

// cmdHello: HELLO is a batch barrier (route.barrier), so the replies
// before it were made in the old protocol.
func cmdHello(c *client, args [][]byte) {
	conncmd.Hello(&c.local, c, args, c.srv.cfg.RequirePass())
}

func cmdAuth(c *client, args [][]byte) {
	conncmd.Auth(&c.local, c, args, c.srv.cfg.RequirePass())
}

func cmdSelect(c *client, args [][]byte) { conncmd.Select(&c.local, args) }

func cmdQuit(c *client, args [][]byte) {
	c.local.OK()
	c.closing = true
}

// cmdReset returns the connection to its state right after connecting.
func cmdReset(c *client, args [][]byte) {
	c.stopMonitor()
	c.discardTx()
	c.releaseWatches(false)
	c.setProto(2)
	c.setName(nil)
	c.setReadonly(false)
	if c.reply != replySkipThis {
		// RESET ends CLIENT REPLY OFF, but a SKIP already applies to
		// RESET's own reply, as in Redis.
		c.reply = replyOn
	}
	c.setAuthed(c.srv.cfg.RequirePass() == "")
	c.local.Simple("RESET")
}

func cmdTime(c *client, args [][]byte) { conncmd.Time(&c.local, c.srv.opts.Now()) }

func cmdClusterKeyslot(c *client, args [][]byte) {
	c.local.Int(int64(slots.Slot(args[2])))
}

// cmdReadMode accepts READONLY and READWRITE: the proxy serves reads and
// writes from the slot's owner either way, but CLIENT LIST shows the
// flag, as Redis's does.
func cmdReadMode(c *client, args [][]byte) {
	c.setReadonly(slots.EqualFold("readonly", args[0]))
	c.local.OK()
}

func (c *client) setReadonly(on bool) {
	c.mu.Lock()
	c.readonly = on
	c.mu.Unlock()
}

// cmdAsking accepts ASKING: the proxy never sends ASK, so it has nothing
// to allow.
func cmdAsking(c *client, args [][]byte) { c.local.OK() }

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

// clusterCmds are the CLUSTER subcommands the proxy answers from its own
// view; write gets the subcommand's arguments after its name (nargs of
// them).
var clusterCmds = []struct {
	name  string
	nargs int
	write func(w *resp.Writer, l *clusterfmt.Layout, args [][]byte)
	run   func(c *client, args [][]byte)
}{
	{name: "slots", write: noArgs(clusterfmt.WriteSlots)},
	{name: "shards", write: noArgs(clusterfmt.WriteShards)},
	{name: "nodes", write: noArgs(clusterfmt.WriteNodes)},
	{name: "info", write: noArgs(clusterfmt.WriteInfo)},
	{name: "myid", write: noArgs(clusterfmt.WriteMyID)},
	{name: "links", write: noArgs(clusterfmt.WriteLinks)},
	{name: "replicas", nargs: 1, write: writeReplicas},
	{name: "slaves", nargs: 1, write: writeReplicas},
	{name: "count-failure-reports", nargs: 1, write: func(w *resp.Writer, l *clusterfmt.Layout, args [][]byte) {
		clusterfmt.WriteCountFailureReports(w, l, args[0])
	}},
}

func noArgs(write func(*resp.Writer, *clusterfmt.Layout)) func(*resp.Writer, *clusterfmt.Layout, [][]byte) {
	return func(w *resp.Writer, l *clusterfmt.Layout, _ [][]byte) { write(w, l) }
}

func writeReplicas(w *resp.Writer, l *clusterfmt.Layout, args [][]byte) {
	clusterfmt.WriteReplicas(w, l, args[0])
}

func init() {
	for i := range clusterCmds {
		v := &clusterCmds[i]
		v.run = func(c *client, args [][]byte) {
			if len(args) != 2+v.nargs {
				c.local.Error(fmt.Sprintf(resp.ErrWrongArgs, "cluster|"+v.name))
				return
			}
			if c.authRequired() {
				c.local.Error(resp.ErrNoAuth)
				return
			}
			// Several live proxies share the slots (clusterview.go);
			// otherwise the proxy is a lone master owning them all.
			l := c.srv.proxyLayout()
			if l == nil {
				var err error
				addr := c.laddr
				if a := c.srv.opts.ClientAnnounce; a != "" {
					addr = a
				}
				if l, err = singleLayout(addr, c.srv.myID); err != nil {
					c.local.Error("ERR " + err.Error())
					return
				}
			}
			switch v.name {
			case "info":
				l.Unserved = c.srv.unservedSlots()
			case "nodes":
				c.srv.dropUnserved(l)
			}
			v.write(&c.local, l, args[2:])
		}
	}
}
