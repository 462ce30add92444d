package slots

import (
	"bytes"
	"testing"
)

// FuzzKeyIndexes runs every command's key finding on arbitrary arguments:
// it must not panic and must return indexes of real arguments, never the
// command name.
func FuzzKeyIndexes(f *testing.F) {
	for _, tc := range keyIndexCases {
		f.Add(uint16(0), []byte(tc.cmd))
	}
	f.Add(uint16(7), []byte("STREAMS a b 1"))
	f.Add(uint16(11), []byte("2 a"))
	f.Add(uint16(3), []byte("STORE"))
	cmds := allTestCommands()
	f.Fuzz(func(t *testing.T, pick uint16, line []byte) {
		fields := bytes.Split(line, []byte(" "))
		var scratch [4]int
		for i, c := range cmds {
			if i%len(cmds) != int(pick)%len(cmds) && pick != 0 {
				continue
			}
			var args [][]byte
			if c.Parent != nil {
				args = append(args, []byte(c.Parent.Name))
			}
			args = append(append(args, []byte(c.Name)), fields...)
			for _, k := range c.KeyIndexes(args, scratch[:0]) {
				if k <= 0 || k >= len(args) {
					t.Fatalf("%s %q: key index %d out of range", c.FullName, args, k)
				}
			}
		}
	})
}

func BenchmarkKeyIndexes(b *testing.B) {
	for _, bc := range []string{
		"GET key:1",
		"SET key:1 value EX 10",
		"MSET a 1 b 2 c 3 d 4",
		"DEL a b c",
		"EVAL script 2 a b x",
		"XREAD COUNT 1 STREAMS s1 s2 0 0",
	} {
		args := splitArgs(bc)
		c := lookupTest(b, args)
		b.Run(string(args[0]), func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]int, 0, 16)
			for b.Loop() {
				dst = c.KeyIndexes(args, dst[:0])
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	name := []byte("GeT")
	b.ReportAllocs()
	for b.Loop() {
		if Lookup(name) == nil {
			b.Fatal("GET not found")
		}
	}
}
