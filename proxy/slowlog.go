package proxy

import (
	"fmt"
	"sort"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/internal/slowlog"
)

// SLOWLOG through the proxy is the nodes' slow logs, where the commands
// run: GET merges their entries newest first, LEN sums and RESET empties
// them all. The nodes give GET each entry's time in microseconds
// (SHARDGATE MICROS, node/proxycmds.go), as Redis's seconds would leave
// the commands of one second in node order. A command fanned out to every
// node is logged by one of them only (toAll), as one Redis logs it once.
// An entry's id is its node's and its client address is the proxy's
// connection to that node. CONFIG SET of the slowlog parameters goes to
// every node (config.go).

func registerSlowlogOps(h map[string]func(c *client, args [][]byte)) {
	h["slowlog|get"] = cmdSlowlogGet
	h["slowlog|len"] = cmdSumInts
	h["slowlog|reset"] = cmdAllNodes
}

var shardgateMicros = [][]byte{[]byte("SHARDGATE"), []byte("MICROS")}

func cmdSlowlogGet(c *client, args [][]byte) {
	if len(args) > 3 {
		c.localError(fmt.Sprintf(resp.ErrSubcommandSyntax, args[1], "SLOWLOG"))
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := slowlog.ParseCount(args[2])
		if !ok {
			c.localError(resp.ErrSlowlogCount)
			return
		}
		count = n
	}
	c.mergeAll(append(shardgateMicros[:2:2], args...), func(c *client, reqs []*request) {
		var entries []resp.Value
		for _, r := range reqs {
			entries = append(entries, decodeReply(r.reply).Elems...)
		}
		sort.SliceStable(entries, func(i, j int) bool { return entryMicros(entries[i]) > entryMicros(entries[j]) })
		if count >= 0 && int64(len(entries)) > count {
			entries = entries[:count]
		}
		c.w.Array(len(entries))
		for _, e := range entries {
			fields := e.Elems[:min(len(e.Elems), 6)]
			c.w.Array(len(fields))
			for _, f := range fields {
				c.w.B = resp.AppendValue(c.w.B, f)
			}
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
