package resp

// SplitArgs splits an inline request line into arguments the way Redis's
// sdssplitargs does: blanks (isspace) separate arguments; a plain token
// ends at ' ', '\t', '\r', '\n' or NUL (not at '\v' or '\f'); a quote inside
// a token opens a quoted part; "double quotes" take the escapes \n \r \t
// \b \a \xHH and \<char>; 'single quotes' take only \'; a closing quote
// must be followed by a blank or the end; and a NUL byte ends the line, as
// it ends a C string. It appends to dst and returns ok=false on unbalanced
// quotes.
//
// Plain tokens alias line, so splitting an ordinary inline command does
// not allocate beyond dst; tokens with quotes are fresh copies.
func SplitArgs(line []byte, dst [][]byte) ([][]byte, bool) {
	for i, c := range line {
		if c == 0 {
			line = line[:i]
			break
		}
	}
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return dst, true
		}
		start := p
		for p < len(line) && !endsPlain(line[p]) && line[p] != '"' && line[p] != '\'' {
			p++
		}
		if p == len(line) || endsPlain(line[p]) {
			dst = append(dst, line[start:p:p])
			if p < len(line) {
				p++ // the separator
			}
			continue
		}
		// A quote: copy what we have and continue with the slow path.
		cur := append([]byte{}, line[start:p]...)
		var ok bool
		cur, p, ok = splitQuoted(line, p, cur)
		if !ok {
			return dst, false
		}
		dst = append(dst, cur[:len(cur):len(cur)])
	}
}

// splitQuoted continues a token at line[p], which is a quote, and returns
// the token and the position after its terminating byte.
func splitQuoted(line []byte, p int, cur []byte) ([]byte, int, bool) {
	at := func(i int) byte { // C-string view: NUL past the end
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	inq, insq := false, false
	for {
		c := at(p)
		switch {
		case inq:
			switch {
			case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
				cur = append(cur, hexVal(at(p+2))<<4|hexVal(at(p+3)))
				p += 3
			case c == '\\' && at(p+1) != 0:
				p++
				cur = append(cur, unescape(at(p)))
			case c == '"':
				if at(p+1) != 0 && !isSpace(at(p+1)) {
					return nil, 0, false
				}
				return cur, p + 1, true
			case c == 0:
				return nil, 0, false
			default:
				cur = append(cur, c)
			}
		case insq:
			switch {
			case c == '\\' && at(p+1) == '\'':
				p++
				cur = append(cur, '\'')
			case c == '\'':
				if at(p+1) != 0 && !isSpace(at(p+1)) {
					return nil, 0, false
				}
				return cur, p + 1, true
			case c == 0:
				return nil, 0, false
			default:
				cur = append(cur, c)
			}
		default:
			switch {
			case c == 0:
				return cur, p, true
			case endsPlain(c):
				return cur, p + 1, true
			case c == '"':
				inq = true
			case c == '\'':
				insq = true
			default:
				cur = append(cur, c)
			}
		}
		p++
	}
}

// unescape maps the character after a backslash inside double quotes.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

// endsPlain reports the bytes that end an unquoted token.
func endsPlain(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
