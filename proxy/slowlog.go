package proxy

import (
	"fmt"
	"sort"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/internal/slowlog"
	"github.com/shardgate/shardgate/slots"
)

// SLOWLOG through the proxy is one log made of the nodes' slow logs,
// where the commands run, and the proxy's own, of the commands it answers
// itself (PING, CLIENT, CLUSTER KEYSLOT, DISCARD, ...): GET merges their
// entries newest first, LEN sums, and both stop at slowlog-max-len as one
// Redis's log does; RESET empties them all. The nodes give GET each
// entry's time in microseconds (SHARDGATE MICROS, node/proxycmds.go), as
// Redis's seconds would leave the commands of one second in node order. A
// command fanned out to every node is logged by one of them only (toAll),
// as one Redis logs it once. An entry's id is its log's, and the client
// address of a node's entry is the proxy's connection to that node (of
// the proxy's own, the client's). CONFIG SET of the slowlog parameters
// sets them here and on every node (config.go).

func registerSlowlogOps(h map[string]func(c *client, args [][]byte)) {
	h["slowlog|get"] = cmdSlowlogGet
	h["slowlog|len"] = cmdSlowlogLen
	h["slowlog|reset"] = cmdSlowlogReset
}

// logLocal logs a command the proxy ran itself, if it took long enough.
// As Redis, the entry has the client's name as the command left it. The
// MULTI that opens a transaction waits: the node the transaction goes to
// logs its own (discardTx).
func (c *client) logLocal(args [][]byte, d time.Duration) {
	cmd := c.srv.routes[c.curCmd-1].cmd
	if cmd.Has(slots.FlagSkipSlowlog) || !c.srv.slowlog.Slow(d) {
		return
	}
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if tx := c.multi; tx != nil && tx.fresh && cmd.FullName == "multi" {
		tx.fresh = false
		args = [][]byte{append([]byte(nil), args[0]...)} // MULTI has no arguments
		tx.multiLog = &localEntry{cmd: cmd.ID, args: args, d: d, name: name, at: time.Now()}
		return
	}
	c.srv.slowlog.Push(cmd, args, d, c.raddr, name, time.Now())
}

// localEntry is a slow log entry the proxy keeps back (logLocal).
type localEntry struct {
	cmd  int // the command's ID
	args [][]byte
	d    time.Duration
	name string
	at   time.Time
}

// cmdSlowlogLen sums the nodes' and the proxy's lengths.
func cmdSlowlogLen(c *client, args [][]byte) {
	local := int64(c.srv.slowlog.Len())
	c.mergeAll(args, func(c *client, reqs []*request) {
		sum := local
		for _, r := range reqs {
			sum += decodeReply(r.reply).Int
		}
		c.w.Int(min(sum, c.srv.slowlog.MaxLen()))
	})
}

// cmdSlowlogReset empties every node's log and the proxy's.
func cmdSlowlogReset(c *client, args [][]byte) {
	if c.refusedNodeDown() {
		return
	}
	c.srv.slowlog.Reset()
	cmdAllOK(c, args)
}

var shardgateMicros = [][]byte{[]byte("SHARDGATE"), []byte("MICROS")}

func cmdSlowlogGet(c *client, args [][]byte) {
	// An error the command answers itself is logged as Redis logs a
	// command that ran (the nodes log the ones they answer).
	refuse := func(msg string) {
		c.answerHere()
		c.localError(msg)
	}
	if len(args) > 3 {
		refuse(fmt.Sprintf(resp.ErrSubcommandSyntax, args[1], "SLOWLOG"))
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := slowlog.ParseCount(args[2])
		if !ok {
			refuse(resp.ErrSlowlogCount)
			return
		}
		count = n
	}
	// The proxy's entries as they are now: a command after this one in
	// the pipeline is not in its reply.
	local := c.srv.slowlog.Newest(-1)
	// A MULTI kept back is logged after the commands that followed it
	// from other clients (discardTx): newest first by time, as the
	// nodes' entries.
	sort.SliceStable(local, func(i, j int) bool { return local[i].Micros > local[j].Micros })
	c.mergeAll(append(shardgateMicros[:2:2], args...), func(c *client, reqs []*request) {
		var nodes []resp.Value
		for _, r := range reqs {
			nodes = append(nodes, decodeReply(r.reply).Elems...)
		}
		sort.SliceStable(nodes, func(i, j int) bool { return entryMicros(nodes[i]) > entryMicros(nodes[j]) })
		n := int64(len(nodes) + len(local))
		if count >= 0 {
			n = min(n, count)
		}
		n = min(n, c.srv.slowlog.MaxLen())
		c.w.Array(int(n))
		// Both lists are newest first: merge them.
		for i, j := 0, 0; int64(i+j) < n; {
			if j == len(local) || i < len(nodes) && entryMicros(nodes[i]) >= local[j].Micros {
				fields := nodes[i].Elems[:min(len(nodes[i].Elems), 6)]
				c.w.Array(len(fields))
				for _, f := range fields {
					c.w.B = resp.AppendValue(c.w.B, f)
				}
				i++
				continue
			}
			slowlog.WriteEntry(&c.w, local[j])
			j++
		}
	})
}

// entryMicros is the time of a node's slow log entry in unix
// microseconds, its seventh element.
func entryMicros(e resp.Value) int64 {
	if len(e.Elems) < 7 {
		return 0
	}
	return e.Elems[6].Int
}
