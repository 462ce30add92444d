package resp

import (
	"bytes"
	"testing"
)

func TestReplyLen(t *testing.T) {
	cases := []struct {
		in   string
		want int // length of the first reply; 0 = incomplete
	}{
		{"+OK\r\n", 5},
		{"+OK\r\n+OK\r\n", 5},
		{"-ERR x\r\n", 8},
		{":12\r\n", 5},
		{"$3\r\nfoo\r\n", 9},
		{"$3\r\nfoo\r", 0},
		{"$-1\r\n", 5},
		{"*-1\r\n", 5},
		{"*0\r\n", 4},
		{"*2\r\n$1\r\na\r\n:1\r\n", 15},
		{"*2\r\n$1\r\na\r\n", 0},
		{"*2\r\n*1\r\n:1\r\n$-1\r\n", 17},
		{"_\r\n", 3},
		{"#t\r\n", 4},
		{",1.5\r\n", 6},
		{"(123\r\n", 6},
		{"%1\r\n+a\r\n:1\r\n", 12},
		{"~2\r\n+a\r\n+b\r\n", 12},
		{"=8\r\ntxt:abcd\r\n", 14},
		{"!3\r\nERR\r\n", 9},
		{"|1\r\n+k\r\n+v\r\n:5\r\n", 16},
		{">2\r\n+a\r\n+b\r\n", 12},
		{"", 0},
		{"*3\r\n", 0},
	}
	for _, c := range cases {
		got, err := ReplyLen([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("ReplyLen(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"x\r\n", "$x\r\n", "*-2\r\n", "$-5\r\n", "%-1\r\n"} {
		if _, err := ReplyLen([]byte(bad)); err == nil {
			t.Errorf("ReplyLen(%q): no error", bad)
		}
	}
}

// TestParseValueRoundTrip checks that decoding and re-encoding gives the
// same bytes (attributes aside).
func TestParseValueRoundTrip(t *testing.T) {
	for _, in := range []string{
		"+OK\r\n", "-ERR bad\r\n", ":-7\r\n", "$0\r\n\r\n", "$-1\r\n", "*-1\r\n",
		"*3\r\n$1\r\na\r\n:2\r\n*1\r\n+x\r\n", "%2\r\n+a\r\n:1\r\n+b\r\n_\r\n",
		"~1\r\n,3.25\r\n", "#f\r\n", "=8\r\ntxt:abcd\r\n", "(99\r\n",
	} {
		v, n, err := ParseValue([]byte(in))
		if err != nil || n != len(in) {
			t.Fatalf("ParseValue(%q) = %d, %v", in, n, err)
		}
		if got := AppendValue(nil, v); !bytes.Equal(got, []byte(in)) {
			t.Errorf("round trip of %q gave %q", in, got)
		}
	}
	v, _, err := ParseValue([]byte("|1\r\n+k\r\n+v\r\n:5\r\n"))
	if err != nil || v.Type != ':' || v.Int != 5 {
		t.Errorf("attribute: got %+v, %v", v, err)
	}
}

func FuzzReplyLen(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+a\r\n:1\r\n", "|1\r\n+k\r\n+v\r\n:5\r\n", "$-1\r\n", "*1\r\n*1\r\n*1\r\n_\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ReplyLen(b)
		if err != nil || n == 0 {
			return
		}
		if n > len(b) {
			t.Fatalf("length %d beyond input %d", n, len(b))
		}
		v, m, err := ParseValue(b)
		if err != nil || m != n {
			t.Fatalf("ParseValue disagrees: %d %v (ReplyLen %d)", m, err, n)
		}
		_ = v
		// Every prefix is incomplete, never a different complete reply.
		for i := 0; i < n; i++ {
			if k, err := ReplyLen(b[:i]); err == nil && k != 0 {
				t.Fatalf("prefix %d parsed as complete reply of %d", i, k)
			}
		}
	})
}
