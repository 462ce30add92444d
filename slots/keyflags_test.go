package slots

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// keyFlagCases are argument lists where the flags depend on the arguments
// or on which way Redis finds the keys (specs or a key-count procedure).
var keyFlagCases = []string{
	"SET a b", "SET a b GET", "SET a b nx gEt", "SET a b getx", "SET a b EX 10 GET",
	"BITFIELD a", "BITFIELD a GET u8 0", "BITFIELD a OVERFLOW wrap", "BITFIELD a get u8 0 overflow sat get i8 0",
	"BITFIELD a GET u8", "BITFIELD a SET u8 0", "BITFIELD a SET u8 0 1", "BITFIELD a INCRBY u8 0 1",
	"BITFIELD a OVERFLOW", "BITFIELD a bogus", "BITFIELD a get u8 0 incrby u8 0 1", "BITFIELD_RO a GET u8 0",
	"LMPOP 1 a LEFT", "LMPOP 2abc a b LEFT", "LMPOP 02 a b LEFT", "BLMPOP 0 02 a b LEFT", "BLMPOP 0 2 a b RIGHT COUNT 3",
	"XREAD STREAMS a b 0", "XREAD STREAMS streams a 0", "XREADGROUP GROUP g c STREAMS a b 0 0",
	"LMOVE a b LEFT RIGHT", "BITOP AND d a b", "PFCOUNT a b", "DEL a b", "MSET a 1 b 2", "COPY a b", "RENAME a b",
	"XADD s * f v", "XAUTOCLAIM s g c 0 0", "GETEX k PERSIST", "EXPIRE k 10", "OBJECT ENCODING k",
}

// TestKeyRefsAgainstRedis compares KeyRefs with COMMAND GETKEYSANDFLAGS
// of a real redis-server, for the served commands: the cases above and
// random argument lists for every command.
func TestKeyRefsAgainstRedis(t *testing.T) {
	o := startOracle(t)
	checked := 0
	for _, args := range oracleCases(rand.New(rand.NewPCG(3, 4)), keyFlagCases...) {
		if len(args) < 2 {
			continue
		}
		c := lookupTest(t, args)
		if c.ID >= NumIDs() {
			continue // unserved: COMMAND GETKEYSANDFLAGS is not served for it
		}
		checked++
		rep := o.do(t, append([][]byte{[]byte("COMMAND"), []byte("GETKEYSANDFLAGS")}, args...)...)
		refs := c.KeyRefs(args)
		if rep.err != "" {
			if len(refs) != 0 {
				t.Errorf("%q: keys %v, Redis: %s", args, refs, rep.err)
			}
			continue
		}
		var want, have []string
		for _, e := range rep.elems {
			var flags []string
			for _, f := range e.elems[1].elems {
				flags = append(flags, string(f.str))
			}
			want = append(want, string(e.elems[0].str)+" ["+strings.Join(flags, " ")+"]")
		}
		for _, r := range refs {
			have = append(have, string(args[r.Index])+" ["+flagNames(r.Flags)+"]")
		}
		if strings.Join(want, ", ") != strings.Join(have, ", ") {
			t.Errorf("%q: %s; Redis: %s", args, strings.Join(have, ", "), strings.Join(want, ", "))
		}
		if got := c.KeyIndexes(args, nil); len(got) != len(refs) {
			t.Errorf("%q: KeyIndexes finds %d keys, KeyRefs %d", args, len(got), len(refs))
		}
	}
	if checked < 1000 {
		t.Errorf("only %d argument lists checked", checked)
	}
}

func flagNames(f KeySpecFlag) string {
	var b bytes.Buffer
	for _, n := range KeySpecFlagNames {
		if f&n.Flag != 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(n.Name)
		}
	}
	return b.String()
}
