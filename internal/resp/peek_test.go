package resp

import (
	"bytes"
	"strings"
	"testing"
)

func TestPeekKeys(t *testing.T) {
	cases := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"empty", "", 8, nil},
		{"one", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n", 8, []string{"a"}},
		{"pipeline", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$2\r\nbb\r\n$1\r\nv\r\n", 8, []string{"a", "bb"}},
		{"max", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n", 1, []string{"a"}},
		{"keyless command skipped", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 8, []string{"k"}},
		{"stops at partial", "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$5\r\nab", 8, []string{"a"}},
		{"stops at inline", "*2\r\n$3\r\nGET\r\n$1\r\na\r\nGET b\r\n*2\r\n$3\r\nGET\r\n$1\r\nc\r\n", 8, []string{"a"}},
		{"stops at zero count", "*0\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n", 8, nil},
		{"stops at bad length", "*2\r\n$3\r\nGET\r\n$x\r\na\r\n", 8, nil},
		{"stops at missing dollar", "*2\r\n$3\r\nGET\r\n:1\r\na\r\n", 8, nil},
		{"binary key", "*2\r\n$3\r\nGET\r\n$4\r\n\r\n\x00\xff\r\n", 8, []string{"\r\n\x00\xff"}},
		{"empty key", "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", 8, []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tc.in))
			if tc.in != "" {
				if err := r.Fill(); err != nil {
					t.Fatal(err)
				}
			}
			got := r.PeekKeys(nil, tc.max)
			if len(got) != len(tc.want) {
				t.Fatalf("PeekKeys = %q, want %q", got, tc.want)
			}
			for i := range got {
				if string(got[i]) != tc.want[i] {
					t.Fatalf("PeekKeys = %q, want %q", got, tc.want)
				}
			}
			if r.Buffered() != len(tc.in) {
				t.Fatalf("PeekKeys consumed input: %d bytes left of %d", r.Buffered(), len(tc.in))
			}
		})
	}
}

// Mid-command (a bulk argument still arriving) PeekKeys reports nothing:
// the buffer does not start at a command.
func TestPeekKeysMidCommand(t *testing.T) {
	r := NewReader(strings.NewReader("*2\r\n$3\r\nGET\r\n$10\r\nabc"))
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.Next(); ok || err != nil {
		t.Fatalf("Next on a partial command: ok %v err %v", ok, err)
	}
	if got := r.PeekKeys(nil, 8); len(got) != 0 {
		t.Fatalf("PeekKeys mid-command = %q", got)
	}
}

// FuzzPeekKeys: PeekKeys never panics, consumes nothing, and every key it
// reports is the second argument of the command Next then returns, in
// order.
func FuzzPeekKeys(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$2\r\nbb\r\n$1\r\nv\r\n"))
	f.Add([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nGET x\r\n"))
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$999999999\r\n"))
	f.Add([]byte("*-1\r\n*2\r\n$1\r\na\r\n$0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		if len(data) > 0 {
			if err := r.Fill(); err != nil {
				return
			}
		}
		before := r.Buffered()
		keys := r.PeekKeys(nil, 64)
		if r.Buffered() != before {
			t.Fatalf("PeekKeys consumed %d bytes", before-r.Buffered())
		}
		for _, k := range keys {
			var args [][]byte
			for {
				a, ok, err := r.Next()
				if err != nil || !ok {
					t.Fatalf("PeekKeys reported %q but Next gives ok %v err %v", k, ok, err)
				}
				if len(a) >= 2 {
					args = a
					break
				}
			}
			if !bytes.Equal(args[1], k) {
				t.Fatalf("PeekKeys reported %q, the command's second argument is %q", k, args[1])
			}
		}
	})
}
