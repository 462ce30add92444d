package engine

import (
	"bytes"
	"math"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// StreamID is a stream entry id: milliseconds and a sequence number,
// ordered as the pair (Ms, Seq), as Redis's streamID.
type StreamID struct {
	Ms, Seq uint64
}

// MaxStreamID is the greatest id ("+").
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Less reports whether a sorts before b.
func (a StreamID) Less(b StreamID) bool {
	return a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq)
}

// Compare returns -1, 0 or +1 as a is below, equal to or above b.
func (a StreamID) Compare(b StreamID) int {
	switch {
	case a == b:
		return 0
	case a.Less(b):
		return -1
	}
	return 1
}

// IsZero reports whether a is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Incr returns the id right after a, or false at the greatest id.
func (a StreamID) Incr() (StreamID, bool) {
	switch {
	case a.Seq < math.MaxUint64:
		a.Seq++
	case a.Ms < math.MaxUint64:
		a.Ms++
		a.Seq = 0
	default:
		return a, false
	}
	return a, true
}

// Decr returns the id right before a, or false at 0-0.
func (a StreamID) Decr() (StreamID, bool) {
	switch {
	case a.Seq > 0:
		a.Seq--
	case a.Ms > 0:
		a.Ms--
		a.Seq = math.MaxUint64
	default:
		return a, false
	}
	return a, true
}

// Append appends "ms-seq" to b.
func (a StreamID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, a.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.Seq, 10)
}

func (a StreamID) String() string { return string(a.Append(nil)) }

// streamIDMaxLen is the longest id argument Redis reads (its parse
// buffer is 128 bytes with the terminator).
const streamIDMaxLen = 127

// idParse says how an id argument is read, as the parameters of Redis's
// streamGenericParseIDOrReply.
type idParse struct {
	missingSeq uint64 // the sequence of an id given as "ms" alone
	strict     bool   // "-" and "+" are refused
	allowAuto  bool   // "ms-*" is accepted (XADD): autoSeq is then set
}

// parsedID is the result of parseStreamID.
type parsedID struct {
	id      StreamID
	autoSeq bool // "ms-*": the sequence is to be generated
}

// parseStreamID reads an id argument. It returns false for anything
// Redis answers "Invalid stream ID" to.
func parseStreamID(b []byte, p idParse) (parsedID, bool) {
	if len(b) > streamIDMaxLen {
		return parsedID{}, false
	}
	// Redis parses a NUL-terminated copy: whatever follows a NUL is unseen.
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if p.strict {
			return parsedID{}, false
		}
		if b[0] == '-' {
			return parsedID{}, true
		}
		return parsedID{id: MaxStreamID}, true
	}
	dash := -1
	for i, c := range b {
		if c == '-' {
			dash = i
			break
		}
	}
	if dash < 0 {
		ms, ok := string2ull(b)
		if !ok {
			return parsedID{}, false
		}
		return parsedID{id: StreamID{ms, p.missingSeq}}, true
	}
	ms, ok := string2ull(b[:dash])
	if !ok {
		return parsedID{}, false
	}
	rest := b[dash+1:]
	if p.allowAuto && len(rest) == 1 && rest[0] == '*' {
		return parsedID{id: StreamID{Ms: ms}, autoSeq: true}, true
	}
	seq, ok := string2ull(rest)
	if !ok {
		return parsedID{}, false
	}
	return parsedID{id: StreamID{ms, seq}}, true
}

// parseID is parseStreamID for the common non-strict form.
func parseID(b []byte, missingSeq uint64) (StreamID, bool) {
	p, ok := parseStreamID(b, idParse{missingSeq: missingSeq})
	return p.id, ok
}

// parseStrictID is parseStreamID refusing "-" and "+".
func parseStrictID(b []byte, missingSeq uint64) (StreamID, bool) {
	p, ok := parseStreamID(b, idParse{missingSeq: missingSeq, strict: true})
	return p.id, ok
}

// parseIDList reads the ids XDEL and XACK take, strictly, appending them
// to dst (a caller's small array keeps the usual one id off the heap): all
// of them parse before any is used, or it replies the invalid-id error and
// returns false.
func parseIDList(c *Ctx, dst []StreamID, args [][]byte) ([]StreamID, bool) {
	ids := dst
	for _, b := range args {
		id, ok := parseStrictID(b, 0)
		if !ok {
			c.W.Error(resp.ErrStreamInvalidID)
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// parseIntervalID reads a range bound of XRANGE, XREVRANGE and XPENDING:
// "(" before an id (strictly parsed) makes it exclusive.
func parseIntervalID(b []byte, missingSeq uint64) (id StreamID, exclusive, ok bool) {
	if len(b) > 1 && b[0] == '(' {
		id, ok = parseStrictID(b[1:], missingSeq)
		return id, true, ok
	}
	id, ok = parseID(b, missingSeq)
	return id, false, ok
}

// rangeStart reads the start of an id range (XRANGE, XPENDING,
// XAUTOCLAIM): an exclusive "(id" starts at the id after it. errMsg is
// Redis's reply to a bad one.
func rangeStart(b []byte) (id StreamID, errMsg string) {
	return rangeBound(b, 0, StreamID.Incr, resp.ErrStreamIntervalStart)
}

// rangeEnd reads the end of an id range: an exclusive "(id" ends at the
// id before it.
func rangeEnd(b []byte) (id StreamID, errMsg string) {
	return rangeBound(b, math.MaxUint64, StreamID.Decr, resp.ErrStreamIntervalEnd)
}

// rangeBound reads a bound (missingSeq: the sequence of an id given
// without one), stepping past an exclusive one with step, whose failure
// (no id beyond) answers stepErr.
func rangeBound(b []byte, missingSeq uint64, step func(StreamID) (StreamID, bool), stepErr string) (StreamID, string) {
	id, ex, ok := parseIntervalID(b, missingSeq)
	if !ok {
		return id, resp.ErrStreamInvalidID
	}
	if ex {
		if id, ok = step(id); !ok {
			return id, stepErr
		}
	}
	return id, ""
}

// string2ull is Redis's string2ull: a strict signed decimal first (a
// negative value fails), else C's strtoull over the whole string, which
// takes leading white space, a sign (a '-' negates modulo 2^64) and
// leading zeros, and fails on overflow or trailing bytes.
func string2ull(b []byte) (uint64, bool) {
	if v, ok := ksParseInt(b); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	i := 0
	for i < len(b) && isCSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}
