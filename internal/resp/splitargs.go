package resp

// SplitArgs splits an inline request line into arguments the way Redis's
// sdssplitargs does: blanks separate arguments, "double quotes" take the
// escapes \n \r \t \b \a \xHH and \<char>, 'single quotes' take only \',
// a closing quote must be followed by a blank or the end, and a NUL byte
// ends the line. It appends to dst and returns ok=false on unbalanced
// quotes. Unquoted arguments alias line; quoted ones are fresh copies.
func SplitArgs(line []byte, dst [][]byte) ([][]byte, bool) {
	p := 0
	at := func(i int) byte { // C-string view: NUL past the end
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	for {
		for at(p) != 0 && isSpace(at(p)) {
			p++
		}
		if at(p) == 0 {
			return dst, true
		}
		start := p
		var cur []byte
		copied := false
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur = append(cur, hexVal(at(p+2))<<4|hexVal(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := at(p)
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					cur = append(cur, e)
				case c == '"':
					if at(p+1) != 0 && !isSpace(at(p+1)) {
						return dst, false
					}
					done = true
				case c == 0:
					return dst, false
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
						return dst, false
					}
					done = true
				case c == 0:
					return dst, false
				default:
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq, copied = true, true
				case '\'':
					insq, copied = true, true
				default:
					cur = append(cur, c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		if !copied {
			// A plain token: alias the line instead of keeping the copy.
			end := start + len(cur)
			cur = line[start:end:end]
		}
		if cur == nil {
			cur = []byte{}
		}
		dst = append(dst, cur)
	}
}

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
