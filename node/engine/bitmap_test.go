package engine

import (
	"bytes"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// bitModel is the plain []byte a Bitmap must behave like.
type bitModel []byte

func (m bitModel) bit(off int64) bool {
	i := off >> 3
	return i < int64(len(m)) && m[i]&(0x80>>(off&7)) != 0
}

func (m *bitModel) grow(n int64) {
	if n > int64(len(*m)) {
		*m = append(*m, make([]byte, n-int64(len(*m)))...)
	}
}

func (m *bitModel) setBit(off int64, v bool) bool {
	old := m.bit(off)
	m.grow(off>>3 + 1)
	if v {
		(*m)[off>>3] |= 0x80 >> (off & 7)
	} else {
		(*m)[off>>3] &^= 0x80 >> (off & 7)
	}
	return old
}

func (m *bitModel) write(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	m.grow(off + int64(len(p)))
	copy((*m)[off:], p)
}

func (m bitModel) count(from, to int64) int64 {
	var n int64
	for i := from; i < to; i++ {
		if m.bit(i) {
			n++
		}
	}
	return n
}

func (m bitModel) next(from, to int64, v bool) int64 {
	for i := from; i < to; i++ {
		if m.bit(i) == v {
			return i
		}
	}
	return -1
}

// checkBitmap compares every read of b with the model and checks b's
// internal invariants.
func checkBitmap(t rapid.TB, b *Bitmap, m bitModel) {
	if b.Len() != int64(len(m)) {
		t.Fatalf("Len %d, model %d", b.Len(), len(m))
	}
	if got := b.AppendTo(nil, 0, b.Len()); !bytes.Equal(got, m) {
		t.Fatalf("bytes differ (len %d)", len(m))
	}
	checkInvariants(t, b)
	var set []int64
	b.EachSetBit(func(off int64) bool { set = append(set, off); return true })
	var want []int64
	for i := int64(0); i < int64(len(m))*8; i++ {
		if m.bit(i) {
			want = append(want, i)
		}
	}
	if !slices.Equal(set, want) {
		t.Fatalf("EachSetBit %v, want %v", set, want)
	}
	total := int64(0)
	b.EachPage(func(off int64, data []byte) bool {
		end := min(off+int64(len(data)), int64(len(m)))
		if !bytes.Equal(data[:end-off], m[off:end]) || !allZero(data[end-off:]) {
			t.Fatalf("EachPage at %d differs", off)
		}
		total += int64(popcount(data))
		return true
	})
	if total != int64(len(want)) {
		t.Fatalf("EachPage counts %d bits, want %d", total, len(want))
	}
}

func checkInvariants(t rapid.TB, b *Bitmap) {
	for gi, g := range b.groups {
		if g == nil {
			continue
		}
		for pi := range g {
			pg := &g[pi]
			p := int64(gi*groupPages + pi)
			var card int
			switch {
			case pg.dense != nil:
				card = popcount(pg.dense[:])
				if pg.pos != nil {
					t.Fatalf("page %d dense and sparse", p)
				}
			default:
				card = len(pg.pos)
				if !slices.IsSorted(pg.pos) || len(slices.Compact(slices.Clone(pg.pos))) != card {
					t.Fatalf("page %d positions not sorted/unique", p)
				}
				if card > sparseMax {
					t.Fatalf("page %d sparse with %d bits", p, card)
				}
			}
			if uint32(card) != pg.card {
				t.Fatalf("page %d card %d, counted %d", p, pg.card, card)
			}
			if card > 0 && p*PageBytes >= b.n {
				t.Fatalf("page %d past the length %d has bits", p, b.n)
			}
		}
	}
}

// offsets span a few pages so page edges, groups and conversions all occur.
const modelBits = 5 * pageBits

func TestBitmapModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := NewBitmap()
		var m bitModel
		ops := rapid.IntRange(1, 60).Draw(t, "ops")
		for range ops {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0, 1:
				off := rapid.Int64Range(0, modelBits-1).Draw(t, "bit")
				v := rapid.Bool().Draw(t, "v")
				if b.SetBit(off, v) != m.setBit(off, v) {
					t.Fatalf("SetBit %d old value differs", off)
				}
			case 2:
				off := rapid.Int64Range(0, modelBits/8).Draw(t, "off")
				p := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "p")
				b.WriteAt(p, off)
				m.write(p, off)
			case 3: // a long run: fills or clears most of a page
				off := rapid.Int64Range(0, modelBits/8).Draw(t, "off")
				n := rapid.IntRange(1, 3*PageBytes/2).Draw(t, "n")
				fill := rapid.SampledFrom([]byte{0, 0xff, 0x81, 0x10}).Draw(t, "fill")
				p := bytes.Repeat([]byte{fill}, n)
				b.WriteAt(p, off)
				m.write(p, off)
			case 4: // append
				p := rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, "p")
				b.WriteAt(p, b.Len())
				m.write(p, int64(len(m)))
			case 5:
				n := rapid.Int64Range(0, modelBits/8).Draw(t, "n")
				b.Grow(n)
				m.grow(n)
			case 6: // reads over random ranges, past the end too
				from := rapid.Int64Range(0, modelBits+64).Draw(t, "from")
				to := rapid.Int64Range(from, modelBits+64).Draw(t, "to")
				if got, want := b.Count(from, to), m.count(from, min(to, int64(len(m))*8)); got != want {
					t.Fatalf("Count(%d,%d) = %d, want %d", from, to, got, want)
				}
				if got, want := b.NextSet(from, to), m.next(from, min(to, int64(len(m))*8), true); got != want {
					t.Fatalf("NextSet(%d,%d) = %d, want %d", from, to, got, want)
				}
				if got, want := b.NextClear(from, to), m.next(from, to, false); got != want {
					t.Fatalf("NextClear(%d,%d) = %d, want %d", from, to, got, want)
				}
				if b.Bit(from) != m.bit(from) {
					t.Fatalf("Bit(%d) differs", from)
				}
				p := make([]byte, (to-from)/8)
				b.ReadAt(p, from/8)
				want := make([]byte, len(p))
				if from/8 < int64(len(m)) {
					copy(want, m[from/8:])
				}
				if !bytes.Equal(p, want) {
					t.Fatalf("ReadAt(%d) differs", from/8)
				}
			}
		}
		checkBitmap(t, b, m)
		cl := b.Clone()
		checkBitmap(t, cl, m)
	})
}

// TestBitmapHugeOffsets checks the ends of the offset range without a
// model: one bit at 2^32-1 makes a 512 MB string of one set bit.
func TestBitmapHugeOffsets(t *testing.T) {
	b := NewBitmap()
	const last = 1<<32 - 1
	b.SetBit(last, true)
	b.SetBit(0, true)
	if b.Len() != 512<<20 {
		t.Fatalf("Len %d", b.Len())
	}
	if got := b.Count(0, last+1); got != 2 {
		t.Fatalf("Count %d", got)
	}
	if got := b.NextSet(1, last+1); got != last {
		t.Fatalf("NextSet %d", got)
	}
	if got := b.NextClear(0, last+1); got != 1 {
		t.Fatalf("NextClear %d", got)
	}
	var tail [2]byte
	b.ReadAt(tail[:], b.Len()-2)
	if tail != [2]byte{0, 1} {
		t.Fatalf("tail %v", tail)
	}
	if m := b.MemoryUsage(0); m > 64<<10 {
		t.Fatalf("MemoryUsage %d", m)
	}
}

func TestFindBitAndCountBits(t *testing.T) {
	p := make([]byte, 64)
	for _, tc := range []struct{ lo, hi, set int }{
		{0, 512, 0}, {0, 512, 511}, {3, 100, 70}, {65, 67, 66}, {1, 9, 8}, {100, 300, 257},
	} {
		clear(p)
		p[tc.set>>3] |= 0x80 >> (tc.set & 7)
		if got := findBit(p, tc.lo, tc.hi, false); got != tc.set {
			t.Errorf("findBit set %+v = %d", tc, got)
		}
		for i := range p {
			p[i] = ^p[i]
		}
		if got := findBit(p, tc.lo, tc.hi, true); got != tc.set {
			t.Errorf("findBit clear %+v = %d", tc, got)
		}
		want := 0
		for i := tc.lo; i < tc.hi; i++ {
			if p[i>>3]&(0x80>>(i&7)) != 0 {
				want++
			}
		}
		if got := countBits(p, tc.lo, tc.hi); got != want {
			t.Errorf("countBits %+v = %d, want %d", tc, got, want)
		}
	}
	if got := popcount(bytes.Repeat([]byte{0xf0}, 77)); got != 4*77 {
		t.Errorf("popcount %d", got)
	}
}
