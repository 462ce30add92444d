package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxLine bounds a reply header line; anything longer is a broken peer,
// not a reply.
const maxLine = 64 * 1024

// maxAggregate bounds the element count of one aggregate so a corrupt
// header cannot make the client allocate without limit.
const maxAggregate = 1 << 24

// ErrProtocol is wrapped by every parse error caused by malformed input.
var ErrProtocol = errors.New("difftest: RESP protocol error")

// ReadValue parses one reply (RESP2 or RESP3) from r. Attributes (|) are
// not part of any reply this project compares and are reported as errors.
func ReadValue(r *bufio.Reader) (Value, error) {
	line, err := readLine(r)
	if err != nil {
		return Value{}, err
	}
	if len(line) == 0 {
		return Value{}, fmt.Errorf("%w: empty line", ErrProtocol)
	}
	kind, rest := Kind(line[0]), line[1:]
	switch kind {
	case SimpleString, Error:
		return Value{Kind: kind, Str: append([]byte(nil), rest...)}, nil
	case Integer:
		n, err := parseInt(rest)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Integer, Int: n}, nil
	case Double, BigNumber:
		if len(rest) == 0 {
			return Value{}, fmt.Errorf("%w: empty %s", ErrProtocol, kind)
		}
		return Value{Kind: kind, Str: append([]byte(nil), rest...)}, nil
	case Boolean:
		switch string(rest) {
		case "t":
			return Value{Kind: Boolean, Int: 1}, nil
		case "f":
			return Value{Kind: Boolean}, nil
		}
		return Value{}, fmt.Errorf("%w: bad boolean %q", ErrProtocol, rest)
	case Null:
		if len(rest) != 0 {
			return Value{}, fmt.Errorf("%w: bad null %q", ErrProtocol, rest)
		}
		return Value{Kind: Null}, nil
	case Bulk, Verbatim, '!': // '!' is a RESP3 blob error
		n, err := parseInt(rest)
		if err != nil {
			return Value{}, err
		}
		if n == -1 && kind == Bulk {
			return Value{Kind: NullBulk}, nil
		}
		if n < 0 {
			return Value{}, fmt.Errorf("%w: bad length %d", ErrProtocol, n)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Value{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Value{}, fmt.Errorf("%w: bulk not terminated by CRLF", ErrProtocol)
		}
		if kind == '!' {
			kind = Error
		}
		return Value{Kind: kind, Str: buf[:n:n]}, nil
	case Array, Set, Push, Map:
		n, err := parseInt(rest)
		if err != nil {
			return Value{}, err
		}
		if n == -1 && kind == Array {
			return Value{Kind: NullArray}, nil
		}
		if n < 0 || n > maxAggregate {
			return Value{}, fmt.Errorf("%w: bad aggregate length %d", ErrProtocol, n)
		}
		if kind == Map {
			n *= 2
		}
		elems := make([]Value, n)
		for i := range elems {
			if elems[i], err = ReadValue(r); err != nil {
				return Value{}, err
			}
		}
		return Value{Kind: kind, Elems: elems}, nil
	}
	return Value{}, fmt.Errorf("%w: unknown type byte %q", ErrProtocol, line[0])
}

// readLine reads up to CRLF and returns the line without it.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if len(line) > maxLine {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, maxLine)
		}
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not terminated by CRLF", ErrProtocol)
	}
	return line[:len(line)-2], nil
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
	}
	return n, nil
}

// AppendCommand appends args as a RESP array of bulk strings, the form
// every client request takes.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
