package proxy

import (
	"bytes"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// XREAD and XREADGROUP route like any command by their keys (the streams
// after STREAMS, which must share a slot), and block only with BLOCK. The
// proxy reads their options as Redis's xreadCommand does, up to STREAMS,
// to know whether the node may block (a dedicated connection, see
// blocking.go), for how long, and what the same read without BLOCK is:
// like a blocking list pop, a blocking read is first tried without BLOCK
// on the shared connection, and takes a dedicated connection only when
// there is nothing to read (a node serves its blocked readers in the same
// step as the XADD that wakes them, so an entry never waits next to a
// blocked reader: the read without BLOCK answers exactly what the
// blocking one would have answered at once).

// xreadOpts is what the proxy needs of an XREAD's or XREADGROUP's options.
type xreadOpts struct {
	block   int // index of the (last) BLOCK's milliseconds; 0 if none
	nblock  int // BLOCK options given
	streams int // index of the STREAMS keyword; 0 if absent or after a syntax error
}

// parseXRead reads the options before STREAMS the way Redis does: BLOCK
// and COUNT take one argument, XREADGROUP's GROUP two, NOACK none; the
// first STREAMS followed by something ends them. Anything else is a syntax
// error the node will answer, without blocking.
func parseXRead(group bool, args [][]byte) xreadOpts {
	var o xreadOpts
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		a := slots.CString(args[i]) // a C string to Redis's strcasecmp
		switch {
		case more > 0 && slots.EqualFold("block", a):
			i++
			o.block = i
			o.nblock++
		case more > 0 && slots.EqualFold("count", a):
			i++
		case more > 0 && slots.EqualFold("streams", a):
			o.streams = i
			return o
		case group && more >= 2 && slots.EqualFold("group", a):
			i += 2
		case group && slots.EqualFold("noack", a):
		default:
			return xreadOpts{}
		}
	}
	return xreadOpts{}
}

// balanced reports whether STREAMS is followed by as many ids as keys
// (Redis refuses the command otherwise).
func (o xreadOpts) balanced(args [][]byte) bool {
	rest := len(args) - o.streams - 1
	return o.streams > 0 && rest > 0 && rest%2 == 0
}

// xreadBlock returns the index of an XREAD's or XREADGROUP's BLOCK
// milliseconds argument, and whether the command may block.
func xreadBlock(cmd *slots.Command, args [][]byte) (int, bool) {
	o := parseXRead(cmd.FullName == "xreadgroup", args)
	if o.block == 0 || !o.balanced(args) {
		return 0, false
	}
	return o.block, true
}

// xreadWithoutBlock returns the command without its BLOCK option, or nil
// when that would not answer what the blocking command answers at once:
// an XREAD from '$' (never anything without BLOCK), a BLOCK given twice or
// whose milliseconds are not a plain decimal (Redis refuses a sign, a
// leading zero, a fraction), an unbalanced list of streams.
func xreadWithoutBlock(cmd *slots.Command, args [][]byte) [][]byte {
	group := cmd.FullName == "xreadgroup"
	o := parseXRead(group, args)
	if o.nblock != 1 || !o.balanced(args) {
		return nil
	}
	ms := args[o.block]
	if len(ms) == 0 || len(ms) > 18 || (ms[0] == '0' && len(ms) > 1) {
		return nil
	}
	for _, ch := range ms {
		if ch < '0' || ch > '9' {
			return nil
		}
	}
	if !group {
		for _, id := range args[(len(args)+o.streams+1)/2:] {
			if isDollar(id) {
				return nil
			}
		}
	}
	fast := make([][]byte, 0, len(args)-2)
	fast = append(fast, args[:o.block-1]...)
	return append(fast, args[o.block+1:]...)
}

// isDollar reports whether an XREAD id is '$', which Redis compares as a
// C string: "$\x00..." is '$' too.
func isDollar(id []byte) bool {
	id = slots.CString(id)
	return len(id) == 1 && id[0] == '$'
}

// lastIDsForDollar returns a blocking XREAD's arguments with each '$' id
// replaced by what it stands for when the proxy handles the command: the
// stream's last generated id (XINFO STREAM's), 0-0 for a missing stream,
// as Redis resolves it. Not the last entry's id: after XDEL or XTRIM, a
// DEL and re-create or an XSETID may let an entry below the last
// generated id in later, which Redis's reader does not take. The node
// would resolve '$' only once the command reaches it on a dedicated
// connection, after another client's XADD that the proxy handled later
// may have gone ahead on the shared one: the reader would miss the entry
// it was waiting for, where Redis, having read the XREAD first, hands it
// over. The ids are read on the shared connection, in the client's turn.
// On an error (a wrong type, the node down) or any reply but an array,
// args go as they are and the blocking command gives the error.
func (c *client) lastIDsForDollar(n int, args [][]byte) [][]byte {
	o := parseXRead(false, args)
	if !o.balanced(args) {
		return args
	}
	first := (len(args) + o.streams + 1) / 2
	var nodes []int
	var cmds [][][]byte
	at := map[int]int{} // id argument -> its key's query
	queried := map[string]int{}
	for i := first; i < len(args); i++ {
		if !isDollar(args[i]) {
			continue
		}
		key := args[o.streams+1+i-first]
		q, ok := queried[string(key)]
		if !ok {
			q = len(cmds)
			queried[string(key)] = q
			cmds = append(cmds, c.srv.streamIDsQuery(key))
			nodes = append(nodes, n)
		}
		at[i] = q
	}
	if len(cmds) == 0 {
		return args
	}
	ids := make([][]byte, len(cmds))
	for j, v := range c.roundTrip(nodes, cmds) {
		if v.IsError() && string(v.Str) == resp.ErrNoSuchKey {
			ids[j] = []byte("0-0")
			continue
		}
		if ids[j] = lastGeneratedID(v); ids[j] == nil {
			return args
		}
	}
	out := append([][]byte(nil), args...)
	for i, q := range at {
		out[i] = ids[q]
	}
	return out
}

// streamIDsQuery is the XINFO STREAM that reads key's last generated id:
// on shardgate nodes SHARDGATE BRIEF, which leaves out the first and
// last entries (megabytes for big entries, which every client sharing
// the node's connection would wait behind); on redis-servers the whole
// reply.
func (s *Server) streamIDsQuery(key []byte) [][]byte {
	xinfo := [][]byte{[]byte("XINFO"), []byte("STREAM"), key}
	if s.opts.PlainRedisNodes {
		return xinfo
	}
	return s.unlogged(append([][]byte{[]byte("SHARDGATE"), []byte("BRIEF")}, xinfo...))
}

// lastGeneratedID is the last-generated-id field of an XINFO STREAM reply
// (an array of fields and values, or a map), nil if there is none.
func lastGeneratedID(v resp.Value) []byte {
	if v.Type != '*' && v.Type != '%' {
		return nil
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if string(v.Elems[i].Str) == "last-generated-id" && v.Elems[i+1].Type == '$' && !v.Elems[i+1].Null {
			return bytes.Clone(v.Elems[i+1].Str)
		}
	}
	return nil
}
