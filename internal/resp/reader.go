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
	ErrTooBigInline         = &ProtocolError{"too big inline request"}
	ErrUnbalancedQuotes     = &ProtocolError{"unbalanced quotes in request"}
	ErrTooBigMbulkCount     = &ProtocolError{"too big mbulk count string"}
	ErrInvalidMultibulkLen  = &ProtocolError{"invalid multibulk length"}
	ErrUnauthMultibulkLen   = &ProtocolError{"unauthenticated multibulk length"}
	ErrTooBigBulkCount      = &ProtocolError{"too big bulk count string"}
	ErrInvalidBulkLen       = &ProtocolError{"invalid bulk length"}
	ErrUnauthBulkLen        = &ProtocolError{"unauthenticated bulk length"}
	errNeedMore             = errors.New("resp: need more data")
	initialReaderBufferSize = 16 * 1024
)

// Reader parses commands from an io.Reader. The argument slices it returns
// point into its buffer and stay valid only until the next call to Fill;
// callers copy what they keep.
type Reader struct {
	rd    io.Reader
	buf   []byte
	start int // first unparsed byte
	end   int // end of buffered data
	args  [][]byte
	// Unauthenticated applies Redis's tighter limits for clients that have
	// not yet authenticated on a server with a password.
	Unauthenticated bool
	// need is the buffered byte count the pending command needs before
	// parsing it again is worth it; it keeps a huge bulk argument from
	// being re-parsed on every read.
	need int
}

// NewReader returns a Reader on rd.
func NewReader(rd io.Reader) *Reader {
	return &Reader{rd: rd, buf: make([]byte, initialReaderBufferSize)}
}

// Buffered reports how many unparsed bytes are buffered.
func (r *Reader) Buffered() int { return r.end - r.start }

// Next parses the next buffered command. It returns ok=false when no
// complete command is buffered (call Fill), and a *ProtocolError for
// malformed input. Empty commands (a blank inline line, "*0") are skipped.
func (r *Reader) Next() (args [][]byte, ok bool, err error) {
	for {
		if r.end-r.start == 0 || r.end-r.start < r.need {
			return nil, false, nil
		}
		args, n, err := r.parse(r.buf[r.start:r.end])
		if err == errNeedMore {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		r.start += n
		r.need = 0
		if len(args) == 0 {
			continue
		}
		return args, true, nil
	}
}

// Fill reads more data into the buffer, invalidating previously returned
// arguments. It returns the underlying reader's error.
func (r *Reader) Fill() error {
	if r.start == r.end {
		r.start, r.end = 0, 0
		if len(r.buf) > 4*initialReaderBufferSize {
			r.buf = make([]byte, initialReaderBufferSize) // give back a big buffer
		}
	} else if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		// Grow for the pending command; parse limits have already capped
		// how large it can claim to be.
		size := 2 * len(r.buf)
		if r.need > size {
			size = r.need
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	n, err := r.rd.Read(r.buf[r.end:])
	r.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse parses one command at the start of b and returns its arguments
// and the number of bytes it used.
func (r *Reader) parse(b []byte) ([][]byte, int, error) {
	if b[0] != '*' {
		return r.parseInline(b)
	}
	nl := indexCRLF(b, 1)
	if nl < 0 {
		if len(b) > MaxInlineSize {
			return nil, 0, ErrTooBigMbulkCount
		}
		return nil, 0, errNeedMore
	}
	count, ok := parseLen(b[1:nl])
	if !ok || count > MaxMultibulkLen {
		return nil, 0, ErrInvalidMultibulkLen
	}
	if count > unauthMultibulkLen && r.Unauthenticated {
		return nil, 0, ErrUnauthMultibulkLen
	}
	pos := nl + 2
	if count <= 0 {
		return nil, pos, nil
	}
	args := r.args[:0]
	for i := int64(0); i < count; i++ {
		if pos >= len(b) {
			return nil, 0, errNeedMore
		}
		if b[pos] != '$' {
			return nil, 0, &ProtocolError{"expected '$', got '" + string(b[pos]) + "'"}
		}
		nl = indexCRLF(b, pos+1)
		if nl < 0 {
			if len(b)-pos > MaxInlineSize {
				return nil, 0, ErrTooBigBulkCount
			}
			return nil, 0, errNeedMore
		}
		size, ok := parseLen(b[pos+1 : nl])
		if !ok || size < 0 || size > MaxBulkLen {
			return nil, 0, ErrInvalidBulkLen
		}
		if size > unauthBulkLen && r.Unauthenticated {
			return nil, 0, ErrUnauthBulkLen
		}
		pos = nl + 2
		if int64(len(b)-pos) < size+2 {
			r.need = pos + int(size) + 2
			r.args = args
			return nil, 0, errNeedMore
		}
		// Like Redis, the two bytes after the payload are skipped unchecked.
		args = append(args, b[pos:pos+int(size):pos+int(size)])
		pos += int(size) + 2
	}
	r.args = args
	return args, pos, nil
}

func (r *Reader) parseInline(b []byte) ([][]byte, int, error) {
	nl := -1
	for i, c := range b {
		if c == '\n' {
			nl = i
			break
		}
	}
	if nl < 0 {
		if len(b) > MaxInlineSize {
			return nil, 0, ErrTooBigInline
		}
		return nil, 0, errNeedMore
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(line, r.args[:0])
	if !ok {
		return nil, 0, ErrUnbalancedQuotes
	}
	r.args = args
	return args, nl + 1, nil
}

// indexCRLF returns the index of the first '\r' at or after from, or -1
// when there is none or it is the last buffered byte. Like Redis, the byte
// after '\r' is skipped, not checked.
func indexCRLF(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] == '\r' {
			if i+1 < len(b) {
				return i
			}
			return -1
		}
	}
	return -1
}

// parseLen parses a header length with Redis's string2ll rules: an optional
// '-', no '+', no leading zeros, no spaces, and it must fit in an int64.
func parseLen(b []byte) (int64, bool) { return ParseInt(b) }

// ParseInt parses b as Redis's string2ll does.
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
