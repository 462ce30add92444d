package engine

import (
	"bytes"
	"strconv"
	"testing"
)

// FuzzBitfieldArgs feeds arbitrary subcommand lists (tab-separated
// arguments after "BITFIELD k") to the parser and the command. The parser
// must never panic and must only accept what Redis accepts (widths i1..i64
// and u1..u63, offsets 0..2^32-1, the highest written bit recorded); the
// command must reply an error or an array with one reply per subcommand,
// grow the string to cover every write, and, where the string is small
// enough to model, reply and store exactly what the bit-by-bit model does.
// BITFIELD_RO must accept exactly the lists without writes.
func FuzzBitfieldArgs(f *testing.F) {
	for _, seed := range []string{
		"GET\tu8\t0",
		"SET\ti8\t0\t-100\tGET\ti8\t0",
		"INCRBY\tu2\t100\t1\tOVERFLOW\tSAT\tINCRBY\tu2\t102\t1",
		"OVERFLOW\tFAIL\tINCRBY\ti64\t#3\t9223372036854775807",
		"GET\tu64\t0",
		"GET\ti65\t0",
		"GET\tx8\t0",
		"GET\tu8\t#536870912",
		"GET\tu8\t#2305843009213693953",
		"SET\tu63\t4294967295\t-1",
		"overflow\twrap\tincrby\tI8\t0\t1",
		"INCRBY\tu8\t#40\t1",
		"GET\tu8",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		args := [][]byte{[]byte("BITFIELD"), []byte("k")}
		if len(script) > 0 {
			args = append(args, bytes.Split(script, []byte{'\t'})...)
		}
		p, errText := parseBitfield(args, nil)
		if errText == "" {
			checkParsed(t, args, p)
		}

		s := newStrEnv(t)
		s.run("SET", "k", "some initial bytes")
		model := &bfModel{b: []byte("some initial bytes")}
		got := s.runBytes(args)
		switch {
		case errText != "":
			if got != rErr(errText) {
				t.Fatalf("%q: parse error %q but reply %q", script, errText, got)
			}
		case p.highest < 1<<20:
			if want := model.run(p); got != want {
				t.Fatalf("%q: reply %q, model %q", script, got, want)
			}
			if st := s.entry("k").StrBytes(); !bytes.Equal(st, model.b) {
				t.Fatalf("%q: stored bytes differ from the model", script)
			}
		default:
			if !bytes.HasPrefix([]byte(got), []byte("*"+strconv.Itoa(len(p.ops))+"\r\n")) {
				t.Fatalf("%q: reply %q", script, got)
			}
			if n := s.entry("k").StrLen(); n < p.highest>>3+1 {
				t.Fatalf("%q: length %d does not cover bit %d", script, n, p.highest)
			}
		}

		args[0] = []byte("BITFIELD_RO")
		got = s.runBytes(args)
		if errText == "" && p.writes && got != rErr("ERR BITFIELD_RO only supports the GET subcommand") {
			t.Fatalf("%q: BITFIELD_RO with writes replied %q", script, got)
		}
	})
}

// checkParsed verifies a successful parse against the arguments.
func checkParsed(t *testing.T, args [][]byte, p bfParse) {
	t.Helper()
	if len(p.ops) > (len(args)-2)/3+1 {
		t.Fatalf("%d ops from %d arguments", len(p.ops), len(args)-2)
	}
	var highest int64
	writes := false
	for _, op := range p.ops {
		if op.bits < 1 || op.bits > 64 || !op.signed && op.bits > 63 {
			t.Fatalf("accepted width %d signed=%v", op.bits, op.signed)
		}
		if op.off < 0 || op.off > 1<<32-1 {
			t.Fatalf("accepted offset %d", op.off)
		}
		if op.op != bfGet {
			writes = true
			highest = max(highest, op.off+int64(op.bits)-1)
		}
	}
	if writes != p.writes || highest != p.highest {
		t.Fatalf("writes %v highest %d, parser says %v %d", writes, highest, p.writes, p.highest)
	}
}
