package resp

import (
	"bytes"
	"errors"
	"strconv"
)

// ErrBadReply is returned for bytes that are not a RESP2/RESP3 reply.
var ErrBadReply = errors.New("resp: malformed reply")

// maxReplyDepth bounds nesting so a hostile or broken peer cannot make
// ParseValue recurse without limit.
const maxReplyDepth = 64

// ReplyLen returns the length of the first complete reply in b, or 0 when b
// holds only part of one. It understands every RESP2 and RESP3 type,
// including attributes (|), which prefix the reply they annotate. It does
// not allocate: a proxy uses it to cut backend replies out of its read
// buffer and pass them on byte for byte.
func ReplyLen(b []byte) (int, error) {
	pos := 0
	pending := 1 // replies still to consume at the current position
	for pending > 0 {
		if pos >= len(b) {
			return 0, nil
		}
		typ := b[pos]
		end := lineEnd(b, pos+1)
		if end < 0 {
			if len(b)-pos > 64*1024 {
				return 0, ErrBadReply
			}
			return 0, nil
		}
		line := b[pos+1 : end]
		pos = end + 2
		pending--
		switch typ {
		case '+', '-', '_', '#', ',', '(':
		case ':':
			if _, ok := ParseInt(line); !ok {
				return 0, ErrBadReply
			}
		case '$', '!', '=':
			n, ok := ParseInt(line)
			if !ok || n < -1 {
				return 0, ErrBadReply
			}
			if n >= 0 {
				if int64(len(b)-pos) < n+2 {
					return 0, nil
				}
				pos += int(n) + 2
			}
		case '*', '~', '>':
			n, ok := ParseInt(line)
			if !ok || n < -1 || n > 1<<32 {
				return 0, ErrBadReply
			}
			if n > 0 {
				pending += int(n)
			}
		case '%', '|':
			n, ok := ParseInt(line)
			if !ok || n < 0 || n > 1<<31 {
				return 0, ErrBadReply
			}
			pending += 2 * int(n)
			if typ == '|' {
				pending++ // the annotated reply follows the attribute map
			}
		default:
			return 0, ErrBadReply
		}
	}
	return pos, nil
}

// lineEnd returns the index of the "\r\n" that ends the line starting at
// from, or -1.
func lineEnd(b []byte, from int) int {
	for from < len(b) {
		i := bytes.IndexByte(b[from:], '\r')
		if i < 0 {
			return -1
		}
		i += from
		if i+1 >= len(b) {
			return -1
		}
		if b[i+1] == '\n' {
			return i
		}
		from = i + 1
	}
	return -1
}

// Value is one decoded reply, for the proxy's merges (sums, SCAN pages,
// split MGET) and for tests.
type Value struct {
	// Type is the RESP type byte: '+', '-', ':', '$', '*', and for RESP3
	// '_', '#', ',', '(', '!', '=', '%', '~', '>'.
	Type byte
	// Int holds ':' values and '#' (1 for true).
	Int int64
	// Str holds simple strings, errors (the whole text), bulk strings,
	// doubles and big numbers as sent, and verbatim strings with their
	// "txt:" prefix.
	Str []byte
	// Elems holds aggregate elements; a map's keys and values alternate.
	Elems []Value
	// Null marks $-1, *-1 and _.
	Null bool
}

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Type == '-' || v.Type == '!' }

// ParseValue decodes the first reply in b and returns it with its length.
// Bulk strings alias b. An incomplete reply returns n == 0.
func ParseValue(b []byte) (Value, int, error) {
	n, err := ReplyLen(b)
	if err != nil || n == 0 {
		return Value{}, 0, err
	}
	v, used, err := parseValue(b[:n], 0)
	if err != nil {
		return Value{}, 0, err
	}
	if used != n {
		return Value{}, 0, ErrBadReply
	}
	return v, n, nil
}

func parseValue(b []byte, depth int) (Value, int, error) {
	if depth > maxReplyDepth || len(b) == 0 {
		return Value{}, 0, ErrBadReply
	}
	typ := b[0]
	end := lineEnd(b, 1)
	if end < 0 {
		return Value{}, 0, ErrBadReply
	}
	line := b[1:end]
	pos := end + 2
	v := Value{Type: typ}
	switch typ {
	case '+', '-', ',', '(':
		v.Str = line
	case ':':
		n, ok := ParseInt(line)
		if !ok {
			return Value{}, 0, ErrBadReply
		}
		v.Int = n
	case '#':
		v.Int = 0
		if len(line) == 1 && line[0] == 't' {
			v.Int = 1
		}
	case '_':
		v.Null = true
	case '$', '!', '=':
		n, _ := ParseInt(line)
		if n < 0 {
			v.Null = true
			return v, pos, nil
		}
		v.Str = b[pos : pos+int(n)]
		pos += int(n) + 2
	case '*', '~', '>', '%', '|':
		n, _ := ParseInt(line)
		if n < 0 {
			v.Null = true
			return v, pos, nil
		}
		if typ == '%' || typ == '|' {
			n *= 2
		}
		v.Elems = make([]Value, 0, n)
		for range n {
			e, used, err := parseValue(b[pos:], depth+1)
			if err != nil {
				return Value{}, 0, err
			}
			v.Elems = append(v.Elems, e)
			pos += used
		}
		if typ == '|' {
			// An attribute is dropped: the reply it annotates is the value.
			return parseValueAfter(b, pos, depth)
		}
	default:
		return Value{}, 0, ErrBadReply
	}
	return v, pos, nil
}

func parseValueAfter(b []byte, pos, depth int) (Value, int, error) {
	v, used, err := parseValue(b[pos:], depth+1)
	return v, pos + used, err
}

// AppendValue encodes v (as parsed) back into RESP.
func AppendValue(dst []byte, v Value) []byte {
	switch v.Type {
	case '+', '-', ',', '(':
		dst = append(dst, v.Type)
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case ':':
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, v.Int, 10)
		return append(dst, '\r', '\n')
	case '#':
		if v.Int != 0 {
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case '_':
		return append(dst, "_\r\n"...)
	case '$', '!', '=':
		if v.Null {
			return append(dst, v.Type, '-', '1', '\r', '\n')
		}
		dst = appendHeader(dst, v.Type, len(v.Str))
		dst = append(dst, v.Str...)
		return append(dst, '\r', '\n')
	case '*', '~', '>', '%':
		if v.Null {
			return append(dst, v.Type, '-', '1', '\r', '\n')
		}
		n := len(v.Elems)
		if v.Type == '%' {
			n /= 2
		}
		dst = appendHeader(dst, v.Type, n)
		for _, e := range v.Elems {
			dst = AppendValue(dst, e)
		}
		return dst
	}
	return dst
}

// AppendCommand encodes a request as a RESP array of bulk strings.
func AppendCommand(dst []byte, args [][]byte) []byte {
	dst = appendHeader(dst, '*', len(args))
	for _, a := range args {
		dst = appendHeader(dst, '$', len(a))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
