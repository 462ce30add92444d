package proxy

import (
	"bytes"
	"fmt"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// --cross-slot split: MGET, MSET, DEL, UNLINK, EXISTS and TOUCH over
// several slots are cut into one command per slot (a node refuses
// anything wider, as a Redis Cluster node does); the commands for one node
// leave in the batch's single write to it and all nodes work in parallel.
// The merged reply is what one Redis would answer: MGET's values in the
// order asked, MSET's OK, the others' summed counts. If any part fails the
// whole command answers ErrSplitPart, naming the part's slot and node and
// its error; parts that succeeded stay done (like a Redis Cluster client
// that sends one command per slot, the split is not atomic).

func splitHandlers() map[string]func(c *client, args [][]byte, keys []int) {
	return map[string]func(c *client, args [][]byte, keys []int){
		"mget":   splitMGet,
		"mset":   splitMSet,
		"del":    splitSum,
		"unlink": splitSum,
		"exists": splitSum,
		"touch":  splitSum,
	}
}

// slotPart is one slot's share of a split command.
type slotPart struct {
	slot uint16
	args [][]byte // the sub-command
	pos  []int    // MGET: where each key's value goes in the reply
	req  *request
	n    int // keys (or pairs) in the part, while split counts
}

// splitScratch holds the arrays the batch's split commands carve their
// parts from, kept from batch to batch: parts live until the batch's
// replies are merged (finishBatch), then reset makes room for the next
// batch's. Made afresh per command, a 10-key MSET's split was 1.8 KB of
// garbage, and at -P 1 the proxy collected every 1,200 MSETs or so, which
// showed in its p99.
type splitScratch struct {
	partOf []int32 // per key, its part: only while split runs
	store  []slotPart
	argv   [][]byte
	pos    []int
	parts  []*slotPart
}

// maxSplitScratch is the capacity past which reset lets an array go
// rather than keep it for the next batch (a one-off MGET of many keys).
const maxSplitScratch = 1 << 14

// reset forgets the batch's parts, keeping the arrays.
func (s *splitScratch) reset() {
	clear(s.store)
	clear(s.argv)
	clear(s.parts)
	s.store = keepOrDrop(s.store[:0])
	s.argv = keepOrDrop(s.argv[:0])
	s.pos = keepOrDrop(s.pos[:0])
	s.parts = keepOrDrop(s.parts[:0])
}

func keepOrDrop[T any](b []T) []T {
	if cap(b) > maxSplitScratch {
		return nil
	}
	return b
}

// grab returns the next n elements of *buf as a slice of its own
// (appending to it cannot reach the next one). When *buf is full it
// starts a new array: the slices grabbed before keep the old one.
func grab[T any](buf *[]T, n int) []T {
	if cap(*buf)-len(*buf) < n {
		*buf = make([]T, 0, max(2*cap(*buf), n, 64))
	}
	l := len(*buf)
	*buf = (*buf)[:l+n]
	return (*buf)[l : l+n : l+n]
}

// split groups keys (with stride argument groups: 1 for keys, 2 for
// MSET's key-value pairs) by slot, in the order the slots first appear,
// keeping their order within a slot. The parts stay valid until reset.
//
// With the scratch warm it allocates nothing for keys in up to 32 slots
// (past that a map indexes the parts). With a map and slices grown per
// part, a 10-key MSET took 45 allocations and 2.8 times as long
// (BenchmarkSplitBySlotMSet10).
func (s *splitScratch) split(args [][]byte, stride int) []*slotPart {
	nkeys := (len(args) - 1) / stride
	// First pass: each key's part, and each part's size. The parts are
	// appended to s.store, so they are found by index until it stops
	// growing.
	if cap(s.partOf) < nkeys {
		s.partOf = make([]int32, nkeys)
	}
	partOf := s.partOf[:nkeys]
	base := len(s.store)
	var index map[uint16]int32 // only for many parts: a scan is faster for few
	for k := range nkeys {
		sl := slots.Slot(args[1+k*stride])
		j := int32(-1)
		if index != nil {
			if i, ok := index[sl]; ok {
				j = i
			}
		} else {
			for i, p := range s.store[base:] {
				if p.slot == sl {
					j = int32(i)
					break
				}
			}
		}
		if j < 0 {
			j = int32(len(s.store) - base)
			s.store = append(s.store, slotPart{slot: sl})
			if index != nil {
				index[sl] = j
			} else if int(j) >= maxScannedParts {
				index = make(map[uint16]int32, 2*(j+1))
				for i, p := range s.store[base:] {
					index[p.slot] = int32(i)
				}
			}
		}
		partOf[k] = j
		s.store[base+int(j)].n++
	}
	store := s.store[base:]
	// Second pass: carve every part's arguments and positions out of one
	// window each, then fill them in key order.
	argv := grab(&s.argv, len(store)+nkeys*stride)
	pos := grab(&s.pos, nkeys)
	parts := grab(&s.parts, len(store))
	a, q := 0, 0
	for i := range store {
		p := &store[i]
		n := p.n
		p.args = argv[a : a+1 : a+1+n*stride]
		p.args[0] = args[0]
		p.pos = pos[q : q : q+n]
		a += 1 + n*stride
		q += n
		parts[i] = p
	}
	for k, j := range partOf {
		p := &store[j]
		p.args = append(p.args, args[1+k*stride:1+(k+1)*stride]...)
		p.pos = append(p.pos, k)
	}
	return parts
}

// maxScannedParts is how many parts split finds a key's part among
// by a scan before it builds a map.
const maxScannedParts = 32

// sendParts forwards every part to its slot's node.
func (c *client) sendParts(parts []*slotPart) {
	for _, p := range parts {
		p.req = c.forward(c.srv.route.ownerOf(p.slot), p.args)
	}
}

// partError returns the error reply that fails a split command, or nil.
// A part refused with the rest of its pipeline (refuse.go; nodes never
// answer that text) ran nowhere and says nothing of its node: another
// failing part is named instead, and with none the command is refused as
// a whole, as any keyed command there.
func (c *client) partError(parts []*slotPart) []byte {
	refused := false
	var w resp.Writer
	for _, p := range parts {
		if r := p.req.reply; len(r) > 0 && (r[0] == '-' || r[0] == '!') {
			v := decodeReply(r)
			text := bytes.TrimSpace(v.Str)
			if string(text) == resp.ErrClusterDown {
				refused = true
				continue
			}
			w.Error(fmt.Sprintf(resp.ErrSplitPart, p.slot, c.srv.nodeAddr(int(p.req.node)), text))
			return w.B
		}
	}
	if refused {
		w.Error(resp.ErrClusterDown)
		return w.B
	}
	return nil
}

func splitMGet(c *client, args [][]byte, _ []int) {
	parts := c.split.split(args, 1)
	c.sendParts(parts)
	n := len(args) - 1
	c.addMerge(func(c *client) {
		if e := c.partError(parts); e != nil {
			c.w.Raw(e)
			return
		}
		vals := make([]resp.Value, n)
		for _, p := range parts {
			v := decodeReply(p.req.reply)
			for i, k := range p.pos {
				if i < len(v.Elems) {
					vals[k] = v.Elems[i]
				}
			}
		}
		c.w.Array(n)
		for _, v := range vals {
			c.w.B = resp.AppendValue(c.w.B, v)
		}
	})
}

func splitMSet(c *client, args [][]byte, _ []int) {
	if len(args)%2 == 0 {
		// MSET's own check (it runs, and counts, in Redis).
		c.localError(fmt.Sprintf(resp.ErrWrongArgs, "mset"))
		return
	}
	parts := c.split.split(args, 2)
	c.sendParts(parts)
	c.addMerge(func(c *client) {
		if e := c.partError(parts); e != nil {
			c.w.Raw(e)
			return
		}
		c.w.OK()
	})
}

// splitSum serves DEL, UNLINK, EXISTS and TOUCH: the counts add up.
func splitSum(c *client, args [][]byte, _ []int) {
	parts := c.split.split(args, 1)
	c.sendParts(parts)
	c.addMerge(func(c *client) {
		if e := c.partError(parts); e != nil {
			c.w.Raw(e)
			return
		}
		var sum int64
		for _, p := range parts {
			sum += decodeReply(p.req.reply).Int
		}
		c.w.Int(sum)
	})
}
