package engine

import (
	"encoding/binary"
	"testing"
)

// FuzzBitmapOps reads the input as a program of Bitmap writes (SetBit,
// WriteAt of a run, Grow) over a few pages and checks every read and the
// internal invariants against a []byte model.
func FuzzBitmapOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{1, 0x10, 0, 0xff, 0x20, 2, 0xff, 0xff, 0, 0})
	f.Add([]byte{1, 0, 0, 0xff, 0xff, 0, 0, 0, 3, 1, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, prog []byte) {
		b := NewBitmap()
		var m bitModel
		for len(prog) >= 4 {
			op, arg := prog[0]%4, int64(binary.BigEndian.Uint16(prog[1:3]))
			val := prog[3]
			prog = prog[4:]
			switch op {
			case 0: // SetBit anywhere in 3 pages
				off := arg * 3 % (3 * pageBits)
				if b.SetBit(off, val&1 == 1) != m.setBit(off, val&1 == 1) {
					t.Fatalf("SetBit(%d) old bit differs", off)
				}
			case 1: // a run of val bytes, long enough to turn a page dense
				off := arg % (2 * PageBytes)
				n := int(val) * 40
				run := make([]byte, n)
				for i := range run {
					run[i] = val
				}
				b.WriteAt(run, off)
				m.write(run, off)
			case 2: // a short write
				off := arg % (3 * PageBytes)
				p := []byte{val, ^val, val >> 1}
				b.WriteAt(p, off)
				m.write(p, off)
			case 3: // a clearing run: dense pages go sparse or absent
				off := arg % (2 * PageBytes)
				run := make([]byte, int(val)*40)
				b.WriteAt(run, off)
				m.write(run, off)
			}
			from := arg % (int64(len(m))*8 + 1)
			to := from + int64(val)*97
			if b.Count(from, to) != m.count(from, min(to, int64(len(m))*8)) {
				t.Fatalf("Count(%d,%d) differs", from, to)
			}
			if b.NextSet(from, to) != m.next(from, min(to, int64(len(m))*8), true) {
				t.Fatalf("NextSet(%d,%d) differs", from, to)
			}
			if b.NextClear(from, to) != m.next(from, to, false) {
				t.Fatalf("NextClear(%d,%d) differs", from, to)
			}
		}
		checkBitmap(t, b, m)
	})
}

// FuzzBitArgs feeds the BITCOUNT, BITPOS, BITOP and offset parsers any
// arguments: they must not panic, and an accepted range must land inside
// the string.
func FuzzBitArgs(f *testing.F) {
	f.Add("0", "-1", "bit", uint16(6))
	f.Add("-9223372036854775808", "9223372036854775807", "BYTE", uint16(1))
	f.Add("5", "x", "", uint16(0))
	f.Add("4294967295", "and", "bit\x00x", uint16(100))
	f.Fuzz(func(t *testing.T, a, b, c string, n uint16) {
		args := [][]byte{[]byte(a), []byte(b), []byte(c)}
		strlen := int64(n)
		for k := 0; k <= 3; k++ {
			for _, parse := range []func([][]byte) (bitRange, bool, string){parseBitcountArgs, parseBitposArgs} {
				r, whole, errText := parse(args[:k])
				if errText != "" || whole {
					continue
				}
				if from, to, ok := r.bits(strlen); ok {
					if from < 0 || to < from || to >= strlen*8 {
						t.Fatalf("%q over %d bytes: bit range [%d,%d] outside the string", args[:k], strlen, from, to)
					}
				}
			}
		}
		if off, ok := ParseBitOffset([]byte(a)); ok && (off < 0 || off > maxBitOffset) {
			t.Fatalf("offset %q accepted as %d", a, off)
		}
		parseBitOp([]byte(b))
	})
}
