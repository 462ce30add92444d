package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/proxy/segbit"
	"github.com/shardgate/shardgate/slots"
)

// Segmented bitmaps (package segbit): SETBIT, GETBIT, BITCOUNT, BITPOS,
// BITOP and DEL on keys matching --segment-keys, and the explicit SEGBIT.*
// commands on any key, run as several node commands whose replies segbit
// merges. They are multi-step, so each is a batch barrier: what the client
// sent before has been answered when the first segment command leaves.
// SETBIT and GETBIT are not: their segment's command goes with the
// batch's other commands, and SETBIT's index commands follow in one more
// round trip for the whole batch before any reply is written, so a
// pipeline of them runs at the speed of plain ones.

func newSegments(o Options) (*segbit.Handler, error) {
	return segbit.New(segbit.Options{
		SegmentBits: bits.TrailingZeros64(o.SegmentBits),
		SegmentKeys: o.SegmentKeys,
	})
}

// segmentCommand reports whether segbit serves args: an explicit SEGBIT.*
// command (cmd nil: the command table does not know it), or a plain bitmap
// command on a matching key.
func (c *client) segmentCommand(cmd *slots.Command, args [][]byte) bool {
	seg := c.srv.seg
	if cmd == nil {
		_, ok := seg.Route(args)
		return ok
	}
	if seg.Matcher().Empty() {
		return false
	}
	switch cmd.Name {
	case "setbit", "getbit", "bitcount", "bitpos", "bitop", "del", "unlink":
		_, ok := seg.Route(args)
		return ok
	}
	return false
}

// runSegments executes a segmented-bitmap command now and records its
// reply.
func (c *client) runSegments(args [][]byte) {
	if c.multi != nil {
		c.reject(fmt.Sprintf(resp.ErrProxyNotInMulti, strings.ToLower(string(args[0]))))
		return
	}
	if msg := c.checkSegmentBits(); msg != "" {
		c.reject(msg)
		return
	}
	if c.plainKeysCrossSlot(args) {
		c.srv.stats.crossSlot.Add(1)
		c.srv.cross.refused(c, strings.ToLower(string(args[0])), args, c.plainKeys(args))
		c.reject(resp.ErrCrossSlot)
		return
	}
	if plan, ok, err := c.srv.seg.PlanBit(args); ok {
		c.runSegmentBit(plan, err)
		return
	}
	if err := c.repairSegments(args[1:]); err != nil {
		mark := len(c.local.B)
		c.local.Error(err.Error())
		c.addLocal(mark)
		return
	}
	v, err := c.srv.seg.Exec(context.Background(), segmentBackend{c}, args)
	mark := len(c.local.B)
	if err != nil {
		c.local.Error(err.Error())
	} else {
		c.local.B = resp.AppendValue(c.local.B, v)
	}
	c.addLocal(mark)
}

// segmentBitsKey holds the --segment-bits the cluster's segmented bitmaps
// are written with: set by the first proxy to serve one, checked by every
// proxy (in the reserved "{sgi:" key space).
const segmentBitsKey = "{sgi:meta}segment-bits"

// segmentBitsRecheck is how long a match of --segment-bits with the
// cluster's is trusted: a FLUSHALL drops the key, after which another
// proxy may write its own size.
const segmentBitsRecheck = 5 * time.Second

// checkSegmentBits makes sure this proxy cuts bitmaps into segments of the
// size the cluster's were written with, recording its own if none is
// recorded (SET NX GET); it returns the error to refuse the command with,
// or "". A proxy with another size would read other segment keys for the
// same offsets: wrong answers, and writes another proxy cannot see.
func (c *client) checkSegmentBits() string {
	now := time.Now().UnixNano()
	if now-c.srv.segChecked.Load() < int64(segmentBitsRecheck) {
		return ""
	}
	mine := strconv.FormatUint(c.srv.opts.SegmentBits, 10)
	cmd := [][]byte{[]byte("SET"), []byte(segmentBitsKey), []byte(mine), []byte("NX"), []byte("GET")}
	v, _ := segmentBackend{c}.Do(context.Background(), [][][]byte{cmd})
	switch {
	case v[0].IsError():
		// The key's node cannot say (down, moving): go on unchecked
		// rather than fail every segmented command with it, and ask
		// again next time.
		return ""
	case v[0].Null || string(v[0].Str) == mine:
		c.srv.segChecked.Store(now)
		return ""
	}
	return fmt.Sprintf(resp.ErrSegmentBitsMismatch, resp.CString(v[0].Str, 64), c.srv.opts.SegmentBits)
}

// plainKeysCrossSlot reports whether args is a plain DEL or UNLINK whose
// ordinary keys (those matching no --segment-keys glob) span slots under
// --cross-slot strict: a Redis Cluster node refuses that, and only the
// segmented keys, spread over slots by design, are exempt.
func (c *client) plainKeysCrossSlot(args [][]byte) bool {
	if c.srv.opts.CrossSlot != CrossSlotStrict ||
		!(slots.EqualFold("del", args[0]) || slots.EqualFold("unlink", args[0])) {
		return false
	}
	m := c.srv.seg.Matcher()
	slot := -1
	for _, k := range args[1:] {
		if m.Match(k) {
			continue
		}
		s := int(slots.Slot(k))
		if slot >= 0 && s != slot {
			return true
		}
		slot = s
	}
	return false
}

// plainKeys returns the indexes of the keys of a segmented DEL or UNLINK
// that match no segment pattern.
func (c *client) plainKeys(args [][]byte) []int {
	m := c.srv.seg.Matcher()
	var keys []int
	for i, k := range args[1:] {
		if !m.Match(k) {
			keys = append(keys, i+1)
		}
	}
	return keys
}

// segmentBackend runs segbit's node commands on the client's own node
// connections, so they stay in order with the client's other commands.
type segmentBackend struct{ c *client }

// Do implements segbit.Backend: each command goes to the owner of its key
// (BITOP's first key is its destination, at args[2]).
func (b segmentBackend) Do(_ context.Context, cmds [][][]byte) ([]resp.Value, error) {
	nodes := make([]int, len(cmds))
	for i, args := range cmds {
		k := 1
		if slots.EqualFold("bitop", args[0]) {
			k = 2
		}
		if k < len(args) {
			nodes[i] = b.c.srv.route.ownerOf(slots.Slot(args[k]))
		}
	}
	return b.c.roundTrip(nodes, cmds), nil
}

// segmentBit is a segmented SETBIT or GETBIT running in the batch.
type segmentBit struct {
	plan segbit.BitPlan
	req  *request // the segment command's
	// indexErr is the first failure among the commands recording a
	// SETBIT's segment (recordSegments).
	indexErr error
}

// runSegmentBit queues a segmented SETBIT or GETBIT (plan, or its error)
// in the batch; its reply is made when the batch's replies are in.
func (c *client) runSegmentBit(plan segbit.BitPlan, err error) {
	if err != nil {
		mark := len(c.local.B)
		c.local.Error(err.Error())
		c.addLocal(mark)
		return
	}
	sb := &segmentBit{plan: plan}
	sb.req = c.forward(c.srv.route.ownerOf(slots.Slot(plan.Cmd[1])), plan.Cmd)
	if plan.Set {
		c.segIndex = append(c.segIndex, sb)
	}
	c.addMerge(func(c *client) {
		v, err := segbit.BitReply(sb.plan.Cmd, decodeReply(sb.req.reply))
		if err == nil {
			err = sb.indexErr
		}
		if err != nil {
			c.w.Error(err.Error())
			return
		}
		c.w.B = resp.AppendValue(c.w.B, v)
	})
}

// recordSegments runs, once the batch's replies are in and before any is
// written, the index commands of the batch's SETBITs whose segment
// command succeeded: built once per distinct segment, each distinct
// command sent once, all in one round trip. It returns dispatch's stats
// clock (0 if nothing was sent).
func (c *client) recordSegments() int64 {
	pending := c.segIndex
	c.segIndex = nil
	type segmentKey struct {
		key string
		seg uint64
	}
	type segment struct {
		cmds [][][]byte
		reqs []*request
		err  error
	}
	segs := map[segmentKey]*segment{}
	of := make([]*segment, len(pending))
	byCmd := map[string]*request{}
	for i, sb := range pending {
		if r := sb.req.reply; len(r) == 0 || r[0] != ':' {
			continue // the command fails with its segment's reply
		}
		k := segmentKey{string(sb.plan.Key), sb.plan.Seg}
		sg := segs[k]
		if sg == nil {
			sg = &segment{cmds: c.srv.seg.IndexCommands(sb.plan)}
			for _, cmd := range sg.cmds {
				enc := string(resp.AppendCommand(nil, cmd))
				r := byCmd[enc]
				if r == nil {
					r = c.forward(c.srv.route.ownerOf(slots.Slot(cmd[1])), cmd)
					byCmd[enc] = r
				}
				sg.reqs = append(sg.reqs, r)
			}
			segs[k] = sg
		}
		of[i] = sg
	}
	end := c.dispatch()
	for _, sg := range segs {
		for i, r := range sg.reqs {
			if v := decodeReply(r.reply); v.IsError() {
				sg.err = &segbit.PartError{Key: sg.cmds[i][1], Reply: string(v.Str)}
				break
			}
		}
	}
	for i, sb := range pending {
		if of[i] != nil {
			sb.indexErr = of[i].err
		}
	}
	for k, sg := range segs {
		if sg.err != nil {
			c.srv.segRepairs.add(c.srv.log, k.key, sg.cmds)
		}
	}
	return end
}

// segmentRepairs holds, by bitmap key, the index commands of segments
// that a SETBIT wrote but could not index (the index's node failed after
// the segment's answered). The SETBIT answered an error, yet its bit is
// set: unindexed, BITCOUNT and BITPOS would miss the segment and DEL
// would leave it, to come back with the next write. The commands run
// again before the next command that reads the bitmap's index (repairSegments),
// or with the next SETBIT of the segment. Held by this proxy only, in
// memory, up to maxSegmentRepairs.
type segmentRepairs struct {
	mu    sync.Mutex
	byKey map[string]map[string][][]byte // bitmap key, encoded command
	n     int
}

// maxSegmentRepairs bounds the index commands held for repair.
const maxSegmentRepairs = 1 << 16

func (r *segmentRepairs) add(log *slog.Logger, key string, cmds [][][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = make(map[string]map[string][][]byte)
	}
	m := r.byKey[key]
	if m == nil {
		m = make(map[string][][]byte)
		r.byKey[key] = m
	}
	for _, cmd := range cmds {
		enc := string(resp.AppendCommand(nil, cmd))
		if _, ok := m[enc]; ok {
			continue
		}
		if r.n >= maxSegmentRepairs {
			log.Warn("segmented bitmap: too many unindexed segments to remember; BITCOUNT and DEL may miss one until it is written again", "key", key)
			return
		}
		m[enc] = cmd
		r.n++
	}
}

// take removes and returns the commands held for key.
func (r *segmentRepairs) take(key string) [][][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.byKey[key]
	if m == nil {
		return nil
	}
	delete(r.byKey, key)
	r.n -= len(m)
	var cmds [][][]byte
	for _, cmd := range m {
		cmds = append(cmds, cmd)
	}
	return cmds
}

func (r *segmentRepairs) empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n == 0
}

// repairSegments runs the index commands held for any of args (the
// command's arguments, keys among them) before a command reads the
// index; if one fails they are kept, and so is its error, which the
// command answers: the index is not complete without them.
func (c *client) repairSegments(args [][]byte) error {
	r := &c.srv.segRepairs
	if r.empty() {
		return nil
	}
	for _, a := range args {
		cmds := r.take(string(a))
		if len(cmds) == 0 {
			continue
		}
		vs, _ := segmentBackend{c}.Do(context.Background(), cmds)
		for i, v := range vs {
			if v.IsError() {
				r.add(c.srv.log, string(a), cmds)
				return &segbit.PartError{Key: cmds[i][1], Reply: string(v.Str)}
			}
		}
	}
	return nil
}
