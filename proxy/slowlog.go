package proxy

import (
	"fmt"
	"sort"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/internal/slowlog"
)

// SLOWLOG through the proxy is the nodes' slow logs, where the commands
// run: GET merges their entries newest first (by time; entries of one
// second keep each node's order), LEN sums and RESET empties them all.
// An entry's id is its node's and its client address is the proxy's
// connection to that node. CONFIG SET of the slowlog parameters goes to
// every node (config.go).

func registerSlowlogOps(h map[string]func(c *client, args [][]byte)) {
	h["slowlog|get"] = cmdSlowlogGet
	h["slowlog|len"] = cmdSumInts
	h["slowlog|reset"] = cmdAllNodes
}

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
	c.mergeAll(args, func(c *client, reqs []*request) {
		var entries []resp.Value
		for _, r := range reqs {
			entries = append(entries, decodeReply(r.reply).Elems...)
		}
		sort.SliceStable(entries, func(i, j int) bool { return entryTime(entries[i]) > entryTime(entries[j]) })
		if count >= 0 && int64(len(entries)) > count {
			entries = entries[:count]
		}
		c.w.Array(len(entries))
		for _, e := range entries {
			c.w.B = resp.AppendValue(c.w.B, e)
		}
	})
}

// entryTime is a slow log entry's unix time.
func entryTime(e resp.Value) int64 {
	if len(e.Elems) < 2 {
		return 0
	}
	return e.Elems[1].Int
}
