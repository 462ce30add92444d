package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// value is a parsed RESP3 reply. Maps keep their pairs in order in elems
// (key, value, key, value, ...), because the generator must reproduce the
// order Redis prints.
type value struct {
	kind  byte // '+', '-', ':', '$', '*', '%', '~', '_', ...
	str   string
	num   int64
	elems []value
}

func readValue(r *bufio.Reader) (value, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return value{}, err
	}
	if len(line) < 3 {
		return value{}, fmt.Errorf("short RESP line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	v := value{kind: kind}
	switch kind {
	case '+', '-':
		v.str = body
	case ':':
		v.num, err = strconv.ParseInt(body, 10, 64)
	case '_':
	case '$', '=', '!':
		n, perr := strconv.Atoi(body)
		if perr != nil {
			return v, perr
		}
		if n < 0 {
			v.kind = '_'
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err = io.ReadFull(r, buf); err != nil {
			return v, err
		}
		v.str = string(buf[:n])
	case '*', '~', '%', '>':
		n, perr := strconv.Atoi(body)
		if perr != nil {
			return v, perr
		}
		if kind == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			e, err := readValue(r)
			if err != nil {
				return v, err
			}
			v.elems = append(v.elems, e)
		}
	default:
		return v, fmt.Errorf("unsupported RESP type %q", kind)
	}
	return v, err
}

func writeCommand(w io.Writer, args ...string) error {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := w.Write(b)
	return err
}
