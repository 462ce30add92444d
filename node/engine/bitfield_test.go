package engine

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestBitfieldScenarios: replies redis-server 7.0.15 gives (the examples
// of Redis's BITFIELD documentation and its test suite, re-run on a real
// server; node/diff_bitfield_test.go runs many more against a live one).
func TestBitfieldScenarios(t *testing.T) {
	s := newStrEnv(t)
	arr := func(items ...string) string { return "*" + strconv.Itoa(len(items)) + "\r\n" + strings.Join(items, "") }
	putList(s, "list")
	runSteps(t, s, []step{
		st(arr(rInt(1), rInt(0)), "BITFIELD", "mykey", "INCRBY", "i5", "100", "1", "GET", "u4", "0"),
		st(arr(rInt(1), rInt(1)), "BITFIELD", "ov", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1"),
		st(arr(rInt(2), rInt(2)), "BITFIELD", "ov", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1"),
		st(arr(rInt(3), rInt(3)), "BITFIELD", "ov", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1"),
		st(arr(rInt(0), rInt(3)), "BITFIELD", "ov", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1"),
		st(arr(rNull), "BITFIELD", "ov", "OVERFLOW", "FAIL", "INCRBY", "u2", "102", "1"),
		st(arr(rInt(0), rInt(-100), rInt(101)), "BITFIELD", "bits", "SET", "i8", "0", "-100", "SET", "i8", "0", "101", "GET", "i8", "0"),
		st(arr(rInt(101), rInt(255), rInt(100)), "BITFIELD", "bits", "SET", "u8", "0", "255", "SET", "u8", "0", "100", "GET", "u8", "0"),
		st(arr(rInt(0), rInt(-128)), "BITFIELD", "w", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1"),
		st(arr(rInt(-128), rInt(127)), "BITFIELD", "w", "SET", "i8", "0", "-128", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "1000"),
		st(arr(rInt(0)), "BITFIELD", "i64", "SET", "i64", "0", "-1"),
		st(arr(rInt(9223372036854775807)), "BITFIELD", "i64", "GET", "u63", "0"),
		st(arr(), "BITFIELD", "none"),
		st(arr(rInt(0)), "BITFIELD_RO", "none", "GET", "u63", "#1"),
		st(rErr(resp.ErrBitfieldType), "BITFIELD", "k", "GET", "u64", "0"),
		st(rErr(resp.ErrBitfieldType), "BITFIELD", "k", "GET", "i65", "0"),
		st(rErr(resp.ErrBitfieldType), "BITFIELD", "k", "GET", "x8", "0"),
		st(rErr(resp.ErrBitOffset), "BITFIELD", "k", "GET", "u8", "-1"),
		st(rErr(resp.ErrBitOffset), "BITFIELD", "k", "GET", "u8", "4294967296"),
		st(rErr(resp.ErrBitOffset), "BITFIELD", "k", "GET", "u8", "#536870912"),
		st(arr(rInt(0)), "BITFIELD", "k", "GET", "u8", "#2305843009213693953"), // wraps to 8
		st(rErr(resp.ErrBitfieldOverflow), "BITFIELD", "k", "OVERFLOW", "foo"),
		st(rErr(resp.ErrSyntax), "BITFIELD", "k", "GET", "u8"),
		st(rErr(resp.ErrNotInteger), "BITFIELD", "k", "SET", "u8", "0", "x"),
		st(rErr(resp.ErrBitfieldRO), "BITFIELD_RO", "k", "GET", "u8", "0", "INCRBY", "u8", "0", "1"),
		st(rErr(resp.ErrBitfieldType), "BITFIELD_RO", "k", "INCRBY", "u8", "0", "1", "GET", "x1", "0"),
		st(rErr(resp.ErrWrongType), "BITFIELD", "list"),
		st(rErr(resp.ErrWrongType), "BITFIELD", "list", "SET", "u8", "0", "1"),
		st(rErr(resp.ErrBitfieldRO), "BITFIELD_RO", "list", "SET", "u8", "0", "1"),
		st(rInt(0), "EXISTS", "k"),
	})
}

// TestBitfieldWindow checks field access in the 9-byte window against a
// bit-by-bit model, for every shift and width.
func TestBitfieldWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var w bfWindow
		for i := range w {
			w[i] = byte(rng.Uint32())
		}
		orig := w
		shift, bits := uint(rng.IntN(8)), uint(1+rng.IntN(64))
		var want uint64
		for i := range bits {
			want = want<<1 | uint64(bitAt(orig[:], shift+i))
		}
		if got := w.get(shift, bits); got != want {
			t.Fatalf("get(%d,%d) on %x = %#x, want %#x", shift, bits, orig, got, want)
		}
		v := rng.Uint64()
		w.set(shift, bits, v)
		for i := range uint(72) {
			wantBit := bitAt(orig[:], i)
			if i >= shift && i < shift+bits {
				wantBit = uint8(v >> (bits - 1 - (i - shift)) & 1)
			}
			if bitAt(w[:], i) != wantBit {
				t.Fatalf("set(%d,%d,%#x) on %x = %x: bit %d wrong", shift, bits, v, orig, w, i)
			}
		}
		if got := w.getSigned(shift, bits); got != int64(v<<(64-bits))>>(64-bits) {
			t.Fatalf("getSigned(%d,%d) after set %#x = %d", shift, bits, v, got)
		}
	}
}

func bitAt(b []byte, i uint) uint8 { return b[i/8] >> (7 - i%8) & 1 }

// TestBitfieldOverflowArithmetic checks the overflow functions against
// exact big-integer arithmetic: the true result is value+incr (value as
// stored: unsigned fields read the SET value as uint64, as Redis does);
// out of range means overflow, WRAP keeps the low bits, SAT clamps.
func TestBitfieldOverflowArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	edges := []int64{0, 1, -1, 2, -2, 1 << 62, -1 << 63, 1<<63 - 1, 127, -128, 255, 256}
	pick := func() int64 {
		if rng.IntN(3) == 0 {
			return edges[rng.IntN(len(edges))]
		}
		return int64(rng.Uint64()) >> rng.IntN(64)
	}
	for range 200000 {
		bits := uint(1 + rng.IntN(64))
		incr := pick()
		ow := bfOverflow(rng.IntN(3))
		if bits < 64 && rng.IntN(2) == 0 {
			// unsigned: value is a stored field, or a SET value with incr 0
			value := uint64(pick())
			if rng.IntN(2) == 0 {
				value &= 1<<bits - 1
			} else {
				incr = 0
			}
			maxv := new(big.Int).SetUint64(1<<bits - 1)
			sum := new(big.Int).Add(new(big.Int).SetUint64(value), big.NewInt(incr))
			wantDir := 0
			if sum.Cmp(maxv) > 0 {
				wantDir = 1
			} else if sum.Sign() < 0 {
				wantDir = -1
			}
			dir, got := unsignedOverflow(value, incr, bits, ow)
			if (dir != 0) != (wantDir != 0) {
				t.Fatalf("u%d %d%+d: overflow %d, want %d", bits, value, incr, dir, wantDir)
			}
			if dir == 0 {
				continue
			}
			var want uint64
			switch ow {
			case bfWrap:
				want = new(big.Int).And(sum, maxv).Uint64()
			case bfSat:
				if wantDir > 0 {
					want = maxv.Uint64()
				}
			default:
				continue
			}
			if got != want {
				t.Fatalf("u%d %d%+d mode %d: %d, want %d", bits, value, incr, ow, got, want)
			}
			continue
		}
		value := pick()
		if rng.IntN(2) == 0 && bits < 64 {
			value = value << (64 - bits) >> (64 - bits) // a stored field
		} else {
			incr = 0
		}
		minv := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), bits-1))
		maxv := new(big.Int).Sub(new(big.Int).Neg(minv), big.NewInt(1))
		sum := new(big.Int).Add(big.NewInt(value), big.NewInt(incr))
		wantDir := 0
		if sum.Cmp(maxv) > 0 {
			wantDir = 1
		} else if sum.Cmp(minv) < 0 {
			wantDir = -1
		}
		if bits < 64 && value < maxv.Int64()-math.MaxInt64 {
			// Redis's quirk: max-value wraps, so a SET of a value this
			// far below the range counts as above it (redis-server
			// 7.0.15: OVERFLOW SAT SET i31 0 -9223372036000000000 stores
			// 1073741823).
			wantDir = 1
		}
		dir, got := signedOverflow(value, incr, bits, ow)
		if (dir != 0) != (wantDir != 0) {
			t.Fatalf("i%d %d%+d: overflow %d, want %d", bits, value, incr, dir, wantDir)
		}
		if dir == 0 {
			continue
		}
		var want int64
		switch ow {
		case bfWrap:
			mod := new(big.Int).Lsh(big.NewInt(1), bits)
			r := new(big.Int).Mod(new(big.Int).Sub(sum, minv), mod)
			want = r.Add(r, minv).Int64()
		case bfSat:
			want = maxv.Int64()
			if wantDir < 0 {
				want = minv.Int64()
			}
		default:
			continue
		}
		if got != want {
			t.Fatalf("i%d %d%+d mode %d: %d, want %d", bits, value, incr, ow, got, want)
		}
	}
}

// bfModel is BITFIELD over a plain []byte, bit by bit, as the reference
// for the command on any string representation.
type bfModel struct{ b []byte }

func (m *bfModel) get(off int64, bits uint) uint64 {
	var v uint64
	for i := range int64(bits) {
		p := off + i
		v <<= 1
		if p>>3 < int64(len(m.b)) {
			v |= uint64(m.b[p>>3] >> (7 - p&7) & 1)
		}
	}
	return v
}

func (m *bfModel) set(off int64, bits uint, v uint64) {
	for i := range int64(bits) {
		p := off + i
		bit := byte(v >> (int64(bits) - 1 - i) & 1)
		m.b[p>>3] = m.b[p>>3]&^(0x80>>(p&7)) | bit<<(7-p&7)
	}
}

// run applies a parsed BITFIELD to the model and returns the reply.
func (m *bfModel) run(p bfParse) string {
	if p.writes && int64(len(m.b)) < p.highest>>3+1 {
		m.b = append(m.b, make([]byte, p.highest>>3+1-int64(len(m.b)))...)
	}
	var w resp.Writer
	w.Proto = 2
	w.Array(len(p.ops))
	for _, op := range p.ops {
		bits := uint(op.bits)
		old := m.get(op.off, bits)
		sold := int64(old<<(64-bits)) >> (64 - bits)
		var reply, nv uint64
		dir := 0
		switch {
		case op.op == bfGet && op.signed:
			w.Int(sold)
			continue
		case op.op == bfGet:
			w.Int(int64(old))
			continue
		case op.signed && op.op == bfIncrby:
			var wv int64
			dir, wv = signedOverflow(sold, op.val, bits, op.ow)
			nv = uint64(sold + op.val)
			if dir != 0 {
				nv = uint64(wv)
			}
			reply = nv
		case op.signed:
			var wv int64
			nv = uint64(op.val)
			if dir, wv = signedOverflow(op.val, 0, bits, op.ow); dir != 0 {
				nv = uint64(wv)
			}
			reply = uint64(sold)
		case op.op == bfIncrby:
			var wv uint64
			dir, wv = unsignedOverflow(old, op.val, bits, op.ow)
			nv = old + uint64(op.val)
			if dir != 0 {
				nv = wv
			}
			reply = nv
		default:
			var wv uint64
			nv = uint64(op.val)
			if dir, wv = unsignedOverflow(nv, 0, bits, op.ow); dir != 0 {
				nv = wv
			}
			reply = old
		}
		if dir != 0 && op.ow == bfFail {
			w.Null()
			continue
		}
		w.Int(int64(reply))
		m.set(op.off, bits, nv)
	}
	return string(w.B)
}

// TestBitfieldModel runs random BITFIELDs on strings that are plain,
// grown into paged Bitmaps by BITFIELD itself, or made Bitmaps by SETBIT,
// checking every reply and the final bytes against bfModel.
func TestBitfieldModel(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 9))
		s := newStrEnv(t)
		m := &bfModel{}
		key := "m"
		maxOff := []int{200, 70000, 3_000_000}[seed%3]
		if seed%4 == 3 {
			s.run("SETBIT", key, "1000000", "1")
			m.b = make([]byte, 1000000/8+1)
			m.b[125000] = 0x80 >> 0 // bit 1000000 = byte 125000, bit 0
			maxOff = 1_100_000
		}
		for range 300 {
			args := []string{"BITFIELD", key}
			for range 1 + rng.IntN(4) {
				typ := "u" + strconv.Itoa(1+rng.IntN(63))
				if rng.IntN(2) == 0 {
					typ = "i" + strconv.Itoa(1+rng.IntN(64))
				}
				off := strconv.Itoa(rng.IntN(maxOff))
				val := strconv.FormatInt(int64(rng.Uint64())>>rng.IntN(64), 10)
				switch rng.IntN(4) {
				case 0:
					args = append(args, "GET", typ, off)
				case 1:
					args = append(args, "SET", typ, off, val)
				case 2:
					args = append(args, "OVERFLOW", []string{"WRAP", "SAT", "FAIL"}[rng.IntN(3)])
				default:
					args = append(args, "INCRBY", typ, off, val)
				}
			}
			bargs := make([][]byte, len(args))
			for i, a := range args {
				bargs[i] = []byte(a)
			}
			p, errText := parseBitfield(bargs, nil)
			if errText != "" {
				t.Fatalf("%q: %s", args, errText)
			}
			want := m.run(p)
			if got := s.run(args...); got != want {
				t.Fatalf("seed %d %q: got %q, want %q", seed, args, got, want)
			}
		}
		e := s.entry(key)
		if e == nil {
			continue
		}
		if got := e.StrBytes(); !bytes.Equal(got, m.b) {
			t.Fatalf("seed %d: stored bytes differ from the model (len %d vs %d)", seed, len(got), len(m.b))
		}
		if maxOff > 100000 && e.Bits() == nil {
			t.Errorf("seed %d: a %d-byte string is not a Bitmap", seed, e.StrLen())
		}
	}
}

// TestBitfieldSeedUseCase: flags and a rank packed in one byte per user,
// and the streak counter of the issue, on a fixed script.
func TestBitfieldSeedUseCase(t *testing.T) {
	s := newStrEnv(t)
	arr := func(items ...string) string { return "*" + strconv.Itoa(len(items)) + "\r\n" + strings.Join(items, "") }
	runSteps(t, s, []step{
		// user 40: flags 1010, rank 5
		st(arr(rInt(0), rInt(0), rInt(0)), "BITFIELD", "users", "SET", "u1", "320", "1", "SET", "u1", "322", "1", "SET", "u4", "324", "5"),
		st(arr(rInt(10), rInt(5)), "BITFIELD_RO", "users", "GET", "u4", "#80", "GET", "u4", "#81"),
		st(arr(rInt(15)), "BITFIELD", "users", "OVERFLOW", "SAT", "INCRBY", "u4", "324", "100"),
		st(rBulk(string(make([]byte, 40))+"\xaf"), "GET", "users"),
		st(arr(rInt(1)), "BITFIELD", "streaks", "INCRBY", "u8", "#40", "1"),
		st(arr(rInt(2)), "BITFIELD", "streaks", "INCRBY", "u8", "#40", "1"),
		st(rInt(41), "STRLEN", "streaks"),
	})
}

// TestBitfieldZeroAlloc: the hot paths allocate nothing.
func TestBitfieldZeroAlloc(t *testing.T) {
	s := newStrEnv(t)
	s.run("BITFIELD", "streaks", "INCRBY", "u8", "#40", "1")
	s.run("SETBIT", "big", "1000000", "1")
	s.w.B = make([]byte, 0, 1<<16)
	for _, args := range [][]string{
		{"BITFIELD", "streaks", "INCRBY", "u8", "#40", "1"},
		{"BITFIELD", "streaks", "GET", "u8", "#40", "GET", "i5", "3"},
		{"BITFIELD_RO", "streaks", "GET", "u8", "#40"},
		{"BITFIELD", "big", "OVERFLOW", "SAT", "INCRBY", "u16", "999990", "7"},
		{"BITFIELD", "streaks", "SET", "u8", "0", "1", "SET", "u8", "8", "1", "SET", "u8", "16", "1", "SET", "u8", "24", "1",
			"SET", "u8", "32", "1", "SET", "u8", "40", "1", "SET", "u8", "48", "1", "SET", "u8", "56", "1"},
	} {
		bargs := make([][]byte, len(args))
		for i, a := range args {
			bargs[i] = []byte(a)
		}
		c := &Ctx{KS: s.ks, Args: bargs, W: &s.w, Now: s.now, Shard: s.ks.ShardOf(bargs[1])}
		h := s.h[strings.ToLower(args[0])]
		if n := testing.AllocsPerRun(200, func() {
			s.w.B = s.w.B[:0]
			h(c)
		}); n != 0 {
			t.Errorf("%q: %.1f allocations per run", args, n)
		}
	}
}

// TestBitfieldStatsAndDirty: dirty counts each write that grew the string
// or changed its field; reads count keyspace hits and misses.
func TestBitfieldStatsAndDirty(t *testing.T) {
	s := newStrEnv(t)
	for _, tc := range []struct {
		args  []string
		dirty int64
	}{
		{[]string{"BITFIELD", "d", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5"}, 0},
		{[]string{"BITFIELD", "d", "SET", "u8", "0", "0", "GET", "u8", "0", "SET", "u8", "8", "0"}, 2},
		{[]string{"BITFIELD", "d", "SET", "u8", "0", "1", "SET", "u8", "0", "1"}, 1},
		{[]string{"BITFIELD", "d", "INCRBY", "u8", "0", "0"}, 0},
		{[]string{"BITFIELD", "d2", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5", "SET", "u8", "0", "0"}, 1},
		{[]string{"BITFIELD", "d", "GET", "u8", "0"}, 0},
	} {
		d0 := s.ks.Changes()
		s.run(tc.args...)
		if got := s.ks.Changes() - d0; got != tc.dirty {
			t.Errorf("%q: dirty +%d, want +%d", tc.args, got, tc.dirty)
		}
	}
	hits, miss := s.ks.Stats.KeyspaceHits.Load(), s.ks.Stats.KeyspaceMiss.Load()
	s.run("BITFIELD", "d", "GET", "u8", "0")
	s.run("BITFIELD_RO", "nokey", "GET", "u8", "0")
	s.run("BITFIELD", "nokey2", "SET", "u8", "0", "1") // a write lookup counts nothing
	if dh, dm := s.ks.Stats.KeyspaceHits.Load()-hits, s.ks.Stats.KeyspaceMiss.Load()-miss; dh != 1 || dm != 1 {
		t.Errorf("hits +%d misses +%d, want +1 +1", dh, dm)
	}
}
