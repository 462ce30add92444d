package engine

import (
	"bytes"
	"testing"
)

// FuzzHLLValue stores arbitrary bytes after an HLL header (first input
// byte: the encoding byte; the rest: the register area) and runs every HLL
// command on it. Nothing may panic or read out of bounds, whatever the
// opcodes say; a value that was a well-formed sparse HLL must stay one
// (or become a well-formed dense one) after PFADD and PFMERGE, with no
// register lowered, and PFCOUNT must then succeed.
func FuzzHLLValue(f *testing.F) {
	f.Add([]byte("\x01\x7f\xff"), []byte("a\x00b"))
	f.Add([]byte("\x01\x40\x00\xfc\x7f\xfc"), []byte("x"))
	f.Add([]byte("\x01\x7f"), []byte("elements"))
	f.Add([]byte("\x01\x00\x80\x84\x88\x7f\xf8"), []byte("12345678"))
	f.Add(append([]byte{0}, make([]byte, 12288)...), []byte("d"))
	f.Add([]byte("\x02\x7f\xff"), []byte("bad encoding"))
	f.Fuzz(func(t *testing.T, body, elems []byte) {
		if len(body) == 0 {
			return
		}
		val := append([]byte("HYLL"), body[0], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80)
		val = append(val, body[1:]...)
		var before [hllRegisters]uint8
		valid := isHLL(val) && hllMerge(&before, val)

		s := newStrEnv(t)
		k := []byte("{h}v")
		s.ks.Set(s.ks.ShardOf(k), k, &Entry{Kind: KindString, Enc: EncRaw, Str: bytes.Clone(val)})
		add := [][]byte{[]byte("PFADD"), k}
		add = append(add, bytes.Split(elems, []byte{0})...)
		s.runBytes(add)
		s.run("PFCOUNT", "{h}v")
		s.run("PFCOUNT", "{h}v", "{h}other")
		s.run("PFMERGE", "{h}dst", "{h}v")
		s.run("PFMERGE", "{h}v", "{h}dst")
		for _, sub := range []string{"DECODE", "ENCODING", "GETREG", "TODENSE"} {
			pfdebug(s, sub, "{h}v")
		}
		if !valid {
			return
		}
		after := s.entry("{h}v").Str
		var regs [hllRegisters]uint8
		if !isHLL(after) || !hllMerge(&regs, after) {
			t.Fatalf("a valid HLL became invalid: %q", after)
		}
		for r := range regs {
			if regs[r] < before[r] {
				t.Fatalf("register %d lowered from %d to %d", r, before[r], regs[r])
			}
		}
		if got := s.run("PFCOUNT", "{h}v"); got[0] != ':' {
			t.Fatalf("PFCOUNT of a valid HLL: %q", got)
		}
	})
}
