package engine

import (
	"bytes"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// strModel is what the keys of one slot should hold: plain byte strings.
type strModel map[string][]byte

// modelBitop is BITOP computed byte by byte on the model.
func modelBitop(op bitOp, srcs [][]byte) []byte {
	n := 0
	for _, s := range srcs {
		n = max(n, len(s))
	}
	out := make([]byte, n)
	for i := range out {
		at := func(s []byte) byte {
			if i < len(s) {
				return s[i]
			}
			return 0
		}
		v := at(srcs[0])
		for _, s := range srcs[1:] {
			switch op {
			case opAnd:
				v &= at(s)
			case opOr:
				v |= at(s)
			case opXor:
				v ^= at(s)
			}
		}
		if op == opNot {
			v = ^v
		}
		out[i] = v
	}
	return out
}

// runBitop runs BITOP in s, locking the slot of its keys (the test
// environment takes the shard from the first argument, BITOP's operation).
func runBitop(s *strEnv, args []string) string {
	var bargs [][]byte
	for _, a := range args {
		bargs = append(bargs, []byte(a))
	}
	s.w.B = s.w.B[:0]
	c := Ctx{KS: s.ks, Args: bargs, W: &s.w, Now: s.now, Shard: s.ks.ShardOf(bargs[2])}
	cmdBitop(&c)
	return string(s.w.B)
}

var modelKeys = []string{"{m}a", "{m}b", "{m}c"}

// TestBitCommandsModel drives the command handlers with random SETBIT,
// SETRANGE, APPEND, SET and BITOP sequences on three keys of one slot and
// compares every value (GET, STRLEN, BITCOUNT, BITPOS) with a []byte
// model. Offsets reach a few pages, so values cross the plain/Bitmap
// threshold both ways and BITOP mixes both forms.
func TestBitCommandsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newStrEnv(t)
		m := strModel{}
		key := rapid.SampledFrom(modelKeys)
		ops := rapid.IntRange(1, 40).Draw(rt, "ops")
		for range ops {
			k := key.Draw(rt, "key")
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				off := rapid.Int64Range(0, 3*pageBits).Draw(rt, "bit")
				v := rapid.IntRange(0, 1).Draw(rt, "v")
				s.run("SETBIT", k, strconv.FormatInt(off, 10), strconv.Itoa(v))
				b := bitModel(m[k])
				b.setBit(off, v == 1)
				m[k] = b
			case 1:
				off := rapid.IntRange(0, 3*PageBytes).Draw(rt, "off")
				val := rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(rt, "val")
				s.run("SETRANGE", k, strconv.Itoa(off), string(val))
				if len(val) > 0 {
					b := bitModel(m[k])
					b.write(val, int64(off))
					m[k] = b
				}
			case 2:
				val := rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(rt, "val")
				s.run("APPEND", k, string(val))
				m[k] = append(bytes.Clone(m[k]), val...)
			case 3:
				val := rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(rt, "val")
				s.run("SET", k, string(val))
				m[k] = bytes.Clone(val)
			case 4:
				op := rapid.SampledFrom([]string{"AND", "OR", "XOR", "NOT"}).Draw(rt, "bitop")
				n := 1
				if op != "NOT" {
					n = rapid.IntRange(1, 3).Draw(rt, "n")
				}
				args := []string{"BITOP", op, k}
				var srcs [][]byte
				for range n {
					sk := key.Draw(rt, "src")
					args = append(args, sk)
					srcs = append(srcs, m[sk])
				}
				runBitop(s, args)
				o, _ := parseBitOp([]byte(op))
				if res := modelBitop(o, srcs); len(res) > 0 {
					m[k] = res
				} else {
					delete(m, k)
				}
			}
		}
		for _, k := range modelKeys {
			want, ok := m[k]
			got := s.run("GET", k)
			if !ok {
				if got != rNull {
					rt.Fatalf("%s: got %q, want null", k, got)
				}
				continue
			}
			if got != rBulk(string(want)) {
				rt.Fatalf("%s: GET differs (len %d)", k, len(want))
			}
			bm := bitModel(want)
			if got := s.run("BITCOUNT", k); got != rInt(bm.count(0, int64(len(want))*8)) {
				rt.Fatalf("%s: BITCOUNT %q", k, got)
			}
			if got := s.run("BITPOS", k, "1"); got != rInt(bm.next(0, int64(len(want))*8, true)) {
				rt.Fatalf("%s: BITPOS 1 %q", k, got)
			}
			wantClear := bm.next(0, int64(len(want))*8, false)
			if wantClear < 0 && len(want) > 0 {
				wantClear = int64(len(want)) * 8 // no end given: the first bit past the string
			}
			if got := s.run("BITPOS", k, "0"); got != rInt(wantClear) {
				rt.Fatalf("%s: BITPOS 0 %q", k, got)
			}
			e := s.entry(k)
			if bmv := e.Bits(); bmv != nil {
				checkBitmap(rt, bmv, bm)
			}
		}
	})
}
