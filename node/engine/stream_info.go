package engine

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// XINFO STREAM and XINFO HELP (Redis 7.0's xinfoCommand and
// xinfoReplyWithStreamInfo). XINFO GROUPS and CONSUMERS live with the
// consumer-group commands.

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

// xinfoFullCount is FULL's default COUNT (also for a negative one).
const xinfoFullCount = 10

// cmdXinfoStream is XINFO STREAM key [FULL [COUNT count]]. The key is
// looked up (a hit or a miss, "no such key") before the options are read.
func cmdXinfoStream(c *Ctx) {
	e := lookupRead(c, c.Args[2])
	if e == nil {
		c.W.Error(resp.ErrNoSuchKey)
		return
	}
	if e.Kind != KindStream {
		c.W.Error(resp.ErrWrongType)
		return
	}
	s := streamOf(e)
	opts := c.Args[3:]
	full := len(opts) > 0
	count := int64(xinfoFullCount)
	if full {
		if (len(opts) != 1 && len(opts) != 3) || !equalFoldASCII(cString(opts[0]), "full") ||
			(len(opts) == 3 && !equalFoldASCII(cString(opts[1]), "count")) {
			c.W.Error(fmt.Sprintf(resp.ErrSubcommandSyntax, resp.CString(c.Args[1], 128),
				strings.ToUpper(string(cString(c.Args[0])))))
			return
		}
		if len(opts) == 3 {
			n, ok := ksParseInt(opts[2])
			if !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			if n >= 0 {
				count = n
			}
		}
	}
	w := c.W
	var buf [44]byte
	id := func(i StreamID) { w.Bulk(i.Append(buf[:0])) }
	if full {
		w.Map(9)
	} else {
		w.Map(10)
	}
	w.BulkString("length")
	w.Int(s.Len())
	w.BulkString("radix-tree-keys")
	w.Int(int64(s.Nodes()))
	w.BulkString("radix-tree-nodes")
	w.Int(s.raxNodes())
	w.BulkString("last-generated-id")
	id(s.LastID())
	w.BulkString("max-deleted-entry-id")
	id(s.MaxDeletedID())
	w.BulkString("entries-added")
	w.Int(s.EntriesAdded())
	w.BulkString("recorded-first-entry-id")
	id(s.FirstID())
	if !full {
		w.BulkString("groups")
		w.Int(int64(len(s.Groups())))
		w.BulkString("first-entry")
		if c.Brief {
			w.Null()
		} else {
			writeEdgeEntry(w, s, false)
		}
		w.BulkString("last-entry")
		if c.Brief {
			w.Null()
		} else {
			writeEdgeEntry(w, s, true)
		}
		return
	}
	w.BulkString("entries")
	writeStreamRange(w, s, StreamID{}, MaxStreamID, count, false)
	w.BulkString("groups")
	groups := s.Groups()
	w.Array(len(groups))
	for _, g := range groups {
		writeGroupFull(w, s, g, count)
	}
}

// writeEdgeEntry writes the first (or last) entry, or null.
func writeEdgeEntry(w *resp.Writer, s *Stream, last bool) {
	found := false
	s.Range(StreamID{}, MaxStreamID, last, func(i StreamID, fv [][]byte) bool {
		writeStreamEntry(w, i, fv)
		found = true
		return false
	})
	if !found {
		w.Null()
	}
}

// writeGroupFull is one group of XINFO STREAM FULL: its counters, its
// PEL and its consumers with theirs, each PEL cut at count entries
// (count 0: all).
func writeGroupFull(w *resp.Writer, s *Stream, g *StreamGroup, count int64) {
	var buf [44]byte
	id := func(i StreamID) { w.Bulk(i.Append(buf[:0])) }
	w.Map(7)
	w.BulkString("name")
	w.BulkString(g.Name)
	w.BulkString("last-delivered-id")
	id(g.LastID)
	w.BulkString("entries-read")
	if g.EntriesRead != invalidEntriesRead {
		w.Int(g.EntriesRead)
	} else {
		w.Null()
	}
	w.BulkString("lag")
	if lag, ok := s.GroupLag(g); ok {
		w.Int(lag)
	} else {
		w.Null()
	}
	w.BulkString("pel-count")
	w.Int(int64(g.PEL.Len()))
	w.BulkString("pending")
	done := deferArray(w)
	n := 0
	g.PEL.Ascend(StreamID{}, func(e *PendingEntry) bool {
		if count != 0 && int64(n) >= count {
			return false
		}
		w.Array(4)
		id(e.ID)
		w.BulkString(e.Consumer.Name)
		w.Int(e.DeliveryTime)
		w.Int(e.DeliveryCount)
		n++
		return true
	})
	done(n)
	w.BulkString("consumers")
	consumers := g.Consumers()
	w.Array(len(consumers))
	for _, cons := range consumers {
		w.Map(4)
		w.BulkString("name")
		w.BulkString(cons.Name)
		w.BulkString("seen-time")
		w.Int(cons.SeenTime)
		w.BulkString("pel-count")
		w.Int(int64(cons.PEL.Len()))
		w.BulkString("pending")
		done := deferArray(w)
		n := 0
		cons.PEL.Ascend(StreamID{}, func(e *PendingEntry) bool {
			if count != 0 && int64(n) >= count {
				return false
			}
			w.Array(3)
			id(e.ID)
			w.Int(e.DeliveryTime)
			w.Int(e.DeliveryCount)
			n++
			return true
		})
		done(n)
	}
}

// raxNodes is XINFO's radix-tree-nodes: the number of nodes of Redis's
// radix tree (rax) holding the stream's node master ids as 16-byte
// big-endian keys.
//
// A rax is a compressed trie whose shape depends only on its keys: its
// insertions split compressed nodes exactly where keys part, and its
// removals merge the chains they leave back into one compressed node
// (raxRemove's recompression). So with keys of one length (none a prefix
// of another) it has, below a node at some depth: for a single key or
// keys sharing the next p >= 1 bytes, one node holding those bytes above
// the node at depth+p; for keys parting at once, one node holding a byte
// per child, above a node per child at depth+1; at the end of the key,
// a leaf. An empty rax is its head alone.
func (s *Stream) raxNodes() int64 {
	if len(s.blocks) == 0 {
		return 1
	}
	if s.rax.nodes != 0 {
		return s.rax.nodes
	}
	keys := make([][16]byte, len(s.blocks))
	for i, b := range s.blocks {
		binary.BigEndian.PutUint64(keys[i][:8], b.master.Ms)
		binary.BigEndian.PutUint64(keys[i][8:], b.master.Seq)
	}
	s.rax.nodes = raxTrieNodes(keys, 0)
	return s.rax.nodes
}

// raxMemo is raxNodes' answer (0: not known), kept until a block is added
// or removed (a block's master never changes), so that XINFO STREAM,
// polled by monitoring, does not walk a long stream's blocks each time.
type raxMemo struct {
	nodes int64
}

// raxTrieNodes counts the nodes below depth d of sorted, distinct keys
// that agree on their first d bytes.
func raxTrieNodes(keys [][16]byte, d int) int64 {
	if d == 16 {
		return 1 // the leaf
	}
	first, last := &keys[0], &keys[len(keys)-1]
	p := 0
	for d+p < 16 && first[d+p] == last[d+p] {
		p++ // keys are sorted: what the first and last share, all share
	}
	if p > 0 {
		return 1 + raxTrieNodes(keys, d+p)
	}
	n := int64(1)
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j][d] == keys[i][d] {
			j++
		}
		n += raxTrieNodes(keys[i:j], d+1)
		i = j
	}
	return n
}
