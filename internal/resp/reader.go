// Package resp reads Redis commands off a connection and writes RESP2/RESP3
// replies, with Redis 7.0's protocol limits and error texts.
//
// We do not use redcon's connection reader for the hot path: it has no
// limit on bulk or multibulk lengths (a client can make it allocate without
// bound) and it allocates several times per command. Reply encoding uses
// redcon's Append* functions.
package resp

import (
	"errors"
	"io"
)

// Limits Redis 7.0 applies to requests.
const (
	// MaxInlineSize is PROTO_INLINE_MAX_SIZE: the longest inline request and
	// the longest multibulk/bulk header line.
	MaxInlineSize = 64 * 1024
	// MaxBulkLen is proto-max-bulk-len: the largest single argument.
	MaxBulkLen = 512 * 1024 * 1024
	// MaxMultibulkLen is the largest argument count Redis accepts (INT_MAX).
	MaxMultibulkLen = 1<<31 - 1
	// unauthMultibulkLen and unauthBulkLen cap what an unauthenticated client
	// may send when a password is required.
	unauthMultibulkLen = 10
	unauthBulkLen      = 16384
)

// ProtocolError is a malformed request. Its text is what Redis replies
// (after "ERR ") before it closes the connection.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// Protocol errors with Redis 7.0's texts.
var (
	ErrTooBigInline        = &ProtocolError{"too big inline request"}
	ErrUnbalancedQuotes    = &ProtocolError{"unbalanced quotes in request"}
	ErrTooBigMbulkCount    = &ProtocolError{"too big mbulk count string"}
	ErrInvalidMultibulkLen = &ProtocolError{"invalid multibulk length"}
	ErrUnauthMultibulkLen  = &ProtocolError{"unauthenticated multibulk length"}
	ErrTooBigBulkCount     = &ProtocolError{"too big bulk count string"}
	ErrInvalidBulkLen      = &ProtocolError{"invalid bulk length"}
	ErrUnauthBulkLen       = &ProtocolError{"unauthenticated bulk length"}
)

// expectedDollar is the error for a multibulk element that is not a bulk
// string; Redis formats the offending byte with %c, so it goes out raw.
func expectedDollar(c byte) *ProtocolError {
	return &ProtocolError{"expected '$', got '" + string([]byte{c}) + "'"}
}

var errNeedMore = errors.New("resp: need more data")

const initialReaderBufferSize = 16 * 1024

// Reader parses commands from an io.Reader.
//
// It follows Redis 7.0's processInlineBuffer/processMultibulkBuffer byte
// for byte, with one deliberate choice where Redis depends on how the
// bytes were split into reads: a header or inline line longer than
// MaxInlineSize is refused even when its terminator arrives in the same
// read (Redis refuses it only if it checks before the terminator arrives).
// That makes the outcome a function of the byte stream alone.
//
// A multibulk command is parsed incrementally: arguments already seen are
// not parsed again when more data arrives, so a command with millions of
// arguments trickling in costs linear time.
type Reader struct {
	rd    io.Reader
	buf   []byte
	start int // first byte of the command being parsed
	end   int // end of buffered data
	args  [][]byte
	// offs[i] is where args[i] starts, relative to start; Fill uses it to
	// re-point the arguments of a half-read command after moving bytes.
	offs []int
	// left is the number of arguments of the current multibulk command
	// still to parse (0: between commands); pos is where parsing resumes,
	// relative to start.
	left int64
	pos  int
	// need is how many buffered bytes (from start) the pending bulk
	// argument needs; until then parsing again is pointless. It also
	// bounds buffer growth, so a huge argument costs about its own size.
	need int
	// bulkAt is where the pending bulk argument's payload starts,
	// relative to start, while need is set.
	bulkAt int
	// scan is where the search for the current line's terminator resumes,
	// relative to start (see lineEnd).
	scan int
	err  error // sticky protocol error
	// Unauthenticated applies Redis's tighter limits for clients that have
	// not yet authenticated on a server with a password. Change it only
	// between commands.
	Unauthenticated bool
}

// NewReader returns a Reader on rd.
func NewReader(rd io.Reader) *Reader {
	return &Reader{rd: rd, buf: make([]byte, initialReaderBufferSize)}
}

// Buffered reports how many unparsed bytes are buffered.
func (r *Reader) Buffered() int { return r.end - r.start }

// Pending is what Redis 7.0's query buffer holds of an incomplete command
// once Next has parsed what it could: the bytes received of the argument
// still arriving (Redis moves each argument out of its buffer once it is
// whole), or all the buffered bytes between commands. Redis closes a
// client when this exceeds client-query-buffer-limit, so a command whose
// arguments are each under the limit passes whatever their sum.
func (r *Reader) Pending() int {
	if r.left == 0 {
		return r.end - r.start
	}
	from := r.pos
	if r.need > 0 {
		from = r.bulkAt
	}
	return r.end - (r.start + from)
}

// QueryBufOf is what Redis's query buffer held of a whole command at the
// read that completed it: its longest argument with that argument's CRLF
// (Redis moves each argument out once it is whole). Over
// client-query-buffer-limit, Redis closes the client before running it.
func QueryBufOf(args [][]byte) int {
	n := 0
	for _, a := range args {
		n = max(n, len(a)+2)
	}
	return n
}

// Next parses the next buffered command. It returns ok=false when no
// complete command is buffered (call Fill), and a *ProtocolError for
// malformed input; after an error every call returns it again. Empty
// commands (a blank inline line, "*0", "*-1") are skipped, as Redis does.
// The returned arguments point into the Reader's buffer and stay valid
// until the next call to Next or Fill; callers copy what they keep.
func (r *Reader) Next() (args [][]byte, ok bool, err error) {
	if r.err != nil {
		return nil, false, r.err
	}
	for {
		if r.end == r.start || r.end-r.start < r.need {
			return nil, false, nil
		}
		args, n, err := r.parse(r.buf[r.start:r.end])
		if err == errNeedMore {
			return nil, false, nil
		}
		if err != nil {
			r.err = err
			return nil, false, err
		}
		r.start += n
		r.scan = 0
		if len(args) == 0 {
			continue
		}
		return args, true, nil
	}
}

// Fill reads more data into the buffer, invalidating previously returned
// arguments. It returns the underlying reader's error.
func (r *Reader) Fill() error {
	n, err := r.rd.Read(r.Space())
	return r.Advance(n, err)
}

// Space makes room for more data and returns the free buffer to read
// into; Advance then records what was read. Fill is the two around a Read.
func (r *Reader) Space() []byte {
	moved := false
	switch {
	case r.start == r.end:
		r.start, r.end = 0, 0
		if len(r.buf) > 4*initialReaderBufferSize {
			r.buf = make([]byte, initialReaderBufferSize) // give back a big buffer
			// The last command's arguments, kept in r.args's backing
			// array past a shorter command's, would keep it alive (a
			// 100 MB SET's buffer until a command of three arguments).
			clear(r.args[:cap(r.args)])
		}
	case r.start > 0:
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
		moved = true
	}
	if r.end == len(r.buf) {
		// Grow geometrically, but never past what the pending argument
		// needs: memory follows the bytes received, not the length a
		// client claims.
		size := 2 * len(r.buf)
		if r.need > len(r.buf) && r.need < size {
			size = r.need
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.end])
		r.buf = nb
		moved = true
		// Earlier commands' arguments would keep the old buffer alive
		// (those of a command still arriving move below).
		if r.left > 0 {
			clear(r.args[len(r.args):cap(r.args)])
		} else {
			clear(r.args[:cap(r.args)])
		}
	}
	if moved && r.left > 0 {
		for i, off := range r.offs {
			a, n := r.start+off, len(r.args[i])
			r.args[i] = r.buf[a : a+n : a+n]
		}
	}
	return r.buf[r.end:]
}

// Advance records n bytes read into Space's buffer, and the read's error;
// it returns err, or io.ErrNoProgress for a read of nothing without one.
func (r *Reader) Advance(n int, err error) error {
	r.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse continues parsing the command at the start of b. It returns the
// command's arguments (none for an empty command) and its length in b.
func (r *Reader) parse(b []byte) ([][]byte, int, error) {
	if r.left == 0 {
		if b[0] != '*' {
			return r.parseInline(b)
		}
		cr, tooBig := r.lineEnd(b, 0, '\r')
		if tooBig {
			return nil, 0, ErrTooBigMbulkCount
		}
		if cr < 0 {
			return nil, 0, errNeedMore
		}
		count, ok := ParseInt(b[1:cr])
		if !ok || count > MaxMultibulkLen {
			return nil, 0, ErrInvalidMultibulkLen
		}
		if count > unauthMultibulkLen && r.Unauthenticated {
			return nil, 0, ErrUnauthMultibulkLen
		}
		if count <= 0 {
			return nil, cr + 2, nil
		}
		// Arguments are appended as they arrive, never preallocated from
		// the count a client claims.
		r.left, r.pos = count, cr+2
		r.args, r.offs = r.args[:0], r.offs[:0]
	}
	for r.left > 0 {
		pos := r.pos
		if size, a, ok := shortBulkHeader(b, pos); ok {
			// The common case, parsed in one pass (see shortBulkHeader).
			end := a + size
			if end+2 > len(b) {
				r.scan = 0
				r.need, r.bulkAt = end+2, a
				return nil, 0, errNeedMore
			}
			r.scan = 0
			r.args = append(r.args, b[a:end:end])
			r.offs = append(r.offs, a)
			r.pos = end + 2
			r.left--
			continue
		}
		cr, tooBig := r.lineEnd(b, pos, '\r')
		if tooBig {
			return nil, 0, ErrTooBigBulkCount
		}
		if cr < 0 {
			// Between arguments: what Pending counts starts at pos, not
			// at an argument that was still arriving at an earlier read.
			r.need = 0
			return nil, 0, errNeedMore
		}
		if b[pos] != '$' {
			return nil, 0, expectedDollar(b[pos])
		}
		size, ok := ParseInt(b[pos+1 : cr])
		if !ok || size < 0 || size > MaxBulkLen {
			return nil, 0, ErrInvalidBulkLen
		}
		if size > unauthBulkLen && r.Unauthenticated {
			return nil, 0, ErrUnauthBulkLen
		}
		a := cr + 2
		end := a + int(size)
		if end+2 > len(b) {
			r.need, r.bulkAt = end+2, a
			return nil, 0, errNeedMore
		}
		// Like Redis, the two bytes after the payload are skipped unchecked.
		r.args = append(r.args, b[a:end:end])
		r.offs = append(r.offs, a)
		r.pos = end + 2
		r.left--
	}
	n := r.pos
	r.pos, r.need = 0, 0
	return r.args, n, nil
}

// shortBulkHeader reads a bulk header "$<n>\r" at b[pos:] whose length
// has 1 to 5 digits, no leading zero (but "0"), and is at most
// unauthBulkLen, with a byte after the '\r': what the general path (the
// line's end, ParseInt, the limits) accepts alike for such a header. It
// returns the length and where the argument starts; ok false sends any
// other header, and a header not yet whole, down the general path.
func shortBulkHeader(b []byte, pos int) (size, start int, ok bool) {
	if pos+3 >= len(b) || b[pos] != '$' {
		return 0, 0, false
	}
	i := pos + 1
	if b[i] == '0' && b[i+1] != '\r' {
		return 0, 0, false
	}
	for ; i < len(b) && i-pos <= 5; i++ {
		c := b[i]
		if c == '\r' {
			break
		}
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		size = size*10 + int(c-'0')
	}
	if i == pos+1 || i+1 >= len(b) || b[i] != '\r' || size > unauthBulkLen {
		return 0, 0, false
	}
	return size, i + 2, true
}

// parseInline parses an inline command line (no leading '*').
func (r *Reader) parseInline(b []byte) ([][]byte, int, error) {
	nl, tooBig := r.lineEnd(b, 0, '\n')
	if tooBig {
		return nil, 0, ErrTooBigInline
	}
	if nl < 0 {
		return nil, 0, errNeedMore
	}
	line := b[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	args, ok := SplitArgs(line, r.args[:0])
	if !ok {
		return nil, 0, ErrUnbalancedQuotes
	}
	r.args = args
	return args, nl + 1, nil
}

// lineEnd finds the byte term ('\r' for headers, '\n' for inline
// requests) that ends the line starting at b[from]. Redis looks for it with
// strchr, so a NUL byte hides everything after it: the line then never
// completes. A header's '\r' counts only once the byte after it (skipped
// unchecked) has arrived. It returns -1 while the line is incomplete, and
// tooBig once more than MaxInlineSize bytes have no terminator.
//
// The search resumes where the previous call for the same line stopped
// (r.scan), so a line arriving a byte at a time costs linear time.
func (r *Reader) lineEnd(b []byte, from int, term byte) (end int, tooBig bool) {
	i := max(from, r.scan)
	limit := min(len(b), from+MaxInlineSize+1)
	for ; i < limit; i++ {
		switch b[i] {
		case term:
			if term == '\r' && i+1 == len(b) {
				r.scan = i
				return -1, false
			}
			r.scan = 0
			return i, false
		case 0:
			r.scan = i
			return -1, len(b)-from > MaxInlineSize
		}
	}
	r.scan = i
	return -1, len(b)-from > MaxInlineSize
}

// ParseInt parses b as Redis's string2ll does: an optional '-', no '+',
// no leading zeros, no spaces, at most 20 bytes, and it must fit in an
// int64.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	p := b
	if p[0] == '-' {
		neg = true
		p = p[1:]
		if len(p) == 0 {
			return 0, false
		}
	}
	if p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	var v uint64
	if len(p) <= 18 { // cannot overflow: skip the per-digit check
		for _, c := range p {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + uint64(c-'0')
		}
		if neg {
			return -int64(v), true
		}
		return int64(v), true
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// PeekKeys appends to dst the second argument (the key, for most
// commands) of each complete multibulk command that Next has yet to
// return, up to max commands, without consuming anything. It stops
// at the first command it cannot read whole or that is not plain
// multibulk; the slices alias the buffer and are valid until Fill. Used to
// prefetch what the commands of a pipeline will read.
func (r *Reader) PeekKeys(dst [][]byte, max int) [][]byte {
	if r.left != 0 || r.err != nil || r.Unauthenticated {
		return dst
	}
	b := r.buf[r.start:r.end]
	pos := 0
	for n := 0; n < max && pos < len(b) && b[pos] == '*'; n++ {
		count, p, ok := peekLen(b, pos+1)
		if !ok || count < 1 || count > 1024 {
			break
		}
		var key []byte
		for i := 0; i < count; i++ {
			size, q, ok := shortBulkHeader(b, p)
			if !ok || size > len(b)-q-2 {
				return dst // an argument over 16 KB ends the peek (rare for a key)
			}
			if i == 1 {
				key = b[q : q+size : q+size]
			}
			p = q + size + 2
		}
		if count > 1 {
			dst = append(dst, key)
		}
		pos = p
	}
	return dst
}

// peekLen reads a multibulk count at b[i:] up to its "\r\n" (at most 9
// digits, no leading zero, as ParseInt accepts) and returns it with the
// position after the "\r\n".
func peekLen(b []byte, i int) (n, next int, ok bool) {
	start := i
	if i+1 < len(b) && b[i] == '0' && b[i+1] != '\r' {
		return 0, 0, false
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start == 9 {
			return 0, 0, false
		}
		n = n*10 + int(b[i]-'0')
		i++
	}
	if i == start || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}

// ParseCursor parses a SCAN cursor as Redis does with strtoul: an optional
// sign, decimal digits (a '-' negates modulo 2^64), no leading space, no
// overflow, and nothing after the digits but a NUL byte. The empty string,
// and any that starts with a NUL, is cursor 0.
func ParseCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	i, neg := 0, false
	switch b[0] {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return 0, false
	case '+', '-':
		neg = b[0] == '-'
		i++
	}
	start := i
	var n uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if i == start {
		// No digits: strtoul points its end back at the start, which
		// Redis accepts only if it is the C string's end (a NUL).
		return 0, b[0] == 0
	}
	if i < len(b) && b[i] != 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
