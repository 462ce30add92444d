package resp

import (
	"fmt"
	"testing"
)

// refSplitArgs is an independent model of Redis's sdssplitargs for the
// tests: a literal walk over a NUL-terminated copy of the line, one
// character at a time, with the C code's states (in double quotes, in
// single quotes, done), and nothing of SplitArgs's fast path.
func refSplitArgs(line []byte) ([]string, bool) {
	s := append(append([]byte{}, line...), 0) // a C string
	cIsSpace := func(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
	cIsHex := func(c byte) bool {
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
	}
	hex := func(c byte) byte {
		var v byte
		fmt.Sscanf(string(c), "%x", &v)
		return v
	}
	var out []string
	p := 0
	for {
		for s[p] != 0 && cIsSpace(s[p]) {
			p++
		}
		if s[p] == 0 {
			return out, true
		}
		inq, insq, done := false, false, false
		cur := ""
		for !done {
			switch {
			case inq:
				if s[p] == '\\' && s[p+1] == 'x' && cIsHex(s[p+2]) && cIsHex(s[p+3]) {
					cur += string([]byte{hex(s[p+2])*16 + hex(s[p+3])})
					p += 3
				} else if s[p] == '\\' && s[p+1] != 0 {
					p++
					c := s[p]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					cur += string([]byte{c})
				} else if s[p] == '"' {
					if s[p+1] != 0 && !cIsSpace(s[p+1]) {
						return nil, false
					}
					done = true
				} else if s[p] == 0 {
					return nil, false
				} else {
					cur += string([]byte{s[p]})
				}
			case insq:
				if s[p] == '\\' && s[p+1] == '\'' {
					p++
					cur += "'"
				} else if s[p] == '\'' {
					if s[p+1] != 0 && !cIsSpace(s[p+1]) {
						return nil, false
					}
					done = true
				} else if s[p] == 0 {
					return nil, false
				} else {
					cur += string([]byte{s[p]})
				}
			default:
				switch s[p] {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur += string([]byte{s[p]})
				}
			}
			if s[p] != 0 {
				p++
			}
		}
		out = append(out, cur)
	}
}

func splitStrings(line string) ([]string, bool) {
	args, ok := SplitArgs([]byte(line), nil)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		if a == nil {
			panic("nil argument")
		}
		out = append(out, string(a))
	}
	return out, true
}

// Expected splits; the inline cases of readerCases were also checked
// against a real redis-server.
var splitCases = []struct {
	in   string
	want []string // nil with ok=false: unbalanced quotes
	ok   bool
}{
	{"", []string{}, true},
	{"   \t\v\f\r\n", []string{}, true},
	{"a", []string{"a"}, true},
	{"set key value", []string{"set", "key", "value"}, true},
	{"  a  b  ", []string{"a", "b"}, true},
	{"a\vb\fc", []string{"a\vb\fc"}, true},
	{"a\tb\rc\nd", []string{"a", "b", "c", "d"}, true},
	{`"a b"`, []string{"a b"}, true},
	{`"" ''`, []string{"", ""}, true},
	{`"\x41\x4a\x4A\x4" "\xZZ" "\x"`, []string{"AJJx4", "xZZ", "x"}, true},
	{`"\n\r\t\b\a\"\\\q"`, []string{"\n\r\t\b\a\"\\q"}, true},
	{`'a\'b' 'c\nd'`, []string{"a'b", `c\nd`}, true},
	{`'\\'`, nil, false},
	{`'\\' x'`, []string{`\' x`}, true},
	{`a"b c"d`, nil, false},
	{`a"b c" d`, []string{"ab c", "d"}, true},
	{`a'b c'`, []string{"ab c"}, true},
	{`"a"` + "\v" + `b`, []string{"a", "b"}, true},
	{`"a"b`, nil, false},
	{`'a'b`, nil, false},
	{`"abc`, nil, false},
	{`'abc`, nil, false},
	{`"a\"`, nil, false},
	{`'a\'`, nil, false},
	{"a\x00b c", []string{"a"}, true},
	{"\"a\x00b\"", nil, false},
	{"\x00abc", []string{}, true},
	{"\xff\xfe \x80", []string{"\xff\xfe", "\x80"}, true},
}

func TestSplitArgs(t *testing.T) {
	for _, c := range splitCases {
		got, ok := splitStrings(c.in)
		if ok != c.ok || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", c.want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
		ref, refOK := refSplitArgs([]byte(c.in))
		if refOK != c.ok || (ok && fmt.Sprintf("%q", ref) != fmt.Sprintf("%q", append([]string(nil), c.want...))) {
			t.Errorf("reference model disagrees on %q: %q, %v", c.in, ref, refOK)
		}
	}
}

// TestSplitArgsAliases: plain tokens point into the line (no copy, no
// allocation) and are capped so that appending cannot overwrite it.
func TestSplitArgsAliases(t *testing.T) {
	line := []byte("SET key value")
	dst := make([][]byte, 0, 8)
	if n := testing.AllocsPerRun(100, func() { dst, _ = SplitArgs(line, dst[:0]) }); n != 0 {
		t.Errorf("%v allocations splitting a plain line", n)
	}
	_ = append(dst[0], 'X')
	if string(line) != "SET key value" {
		t.Fatalf("append to an argument changed the line: %q", line)
	}
	dst, _ = SplitArgs([]byte(`a "b"`), dst[:0])
	if len(dst) != 2 || cap(dst[0]) != 1 {
		t.Fatalf("got %q", dst)
	}
}

func FuzzSplitArgs(f *testing.F) {
	for _, c := range splitCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := string(line)
		args, ok := SplitArgs(line, nil)
		if string(line) != orig {
			t.Fatal("SplitArgs modified its input")
		}
		want, wantOK := refSplitArgs(line)
		if ok != wantOK {
			t.Fatalf("SplitArgs(%q) ok=%v, reference %v", line, ok, wantOK)
		}
		if !ok {
			return
		}
		got := make([]string, len(args))
		for i, a := range args {
			got[i] = string(a)
		}
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", append([]string{}, want...)) {
			t.Fatalf("SplitArgs(%q) = %q, reference %q", line, got, want)
		}
	})
}
