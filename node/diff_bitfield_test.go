package node_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// BITFIELD and BITFIELD_RO against redis-server 7.0.15: every type width,
// plain and #N offsets, the three OVERFLOW modes at and around the limits,
// argument errors in every position, and the stored bytes (GET) after
// writes.

func TestDiffBitfieldBasics(t *testing.T) {
	p := difftest.Start(t)
	steps := [][]string{
		{"BITFIELD", "k"},
		{"BITFIELD_RO", "k"},
		{"EXISTS", "k"},
		{"BITFIELD", "k", "GET", "u8", "0"},
		{"EXISTS", "k"},
		{"BITFIELD", "k", "SET", "i8", "0", "-100", "SET", "i8", "0", "101", "GET", "i8", "0"},
		{"GET", "k"},
		{"BITFIELD", "k", "SET", "u8", "0", "255", "SET", "u8", "0", "100", "GET", "u8", "0"},
		{"BITFIELD", "k", "set", "u4", "1", "15", "get", "u4", "0", "Get", "u4", "4", "gEt", "i4", "1"},
		{"BITFIELD", "k", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1"},
		{"GET", "k"},
		{"STRLEN", "k"},
		{"BITFIELD", "k", "GET", "u63", "0", "GET", "i64", "0", "GET", "i64", "3", "GET", "u1", "7"},
		{"BITFIELD", "k", "GET", "u8", "4294967288", "GET", "u8", "4294967289", "GET", "i64", "4294967295"},
		{"BITFIELD", "k", "SET", "i64", "#0", "-1", "GET", "u63", "#0", "GET", "i64", "1"},
		{"GET", "k"},
		{"BITFIELD", "k", "OVERFLOW", "FAIL"},
		{"BITFIELD_RO", "k", "GET", "i8", "0", "GET", "u8", "#1", "OVERFLOW", "SAT"},
		{"OBJECT", "ENCODING", "k"},
	}
	for _, s := range steps {
		p.Do(t, s...)
	}
	p.DoProto(t, 3, "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9", "GET", "u8", "0")
	p.DoProto(t, 3, "BITFIELD_RO", "k", "GET", "i3", "5")
	p.DoProto(t, 3, "BITFIELD", "k")
}

// TestDiffBitfieldErrors: each error, and which error wins when several
// arguments are bad (the first bad subcommand, checked in order type,
// offset, value).
func TestDiffBitfieldErrors(t *testing.T) {
	p := difftest.Start(t)
	p.Do(t, "SET", "s", "abc")
	p.Do(t, "SET", "n", "12345")
	p.Do(t, "PFADD", "h", "a")
	cases := [][]string{
		{"GET", "u64", "0"}, {"GET", "i65", "0"}, {"GET", "x8", "0"}, {"GET", "U8", "0"},
		{"GET", "I8", "0"}, {"GET", "u0", "0"}, {"GET", "i0", "0"}, {"GET", "u-1", "0"},
		{"GET", "u08", "0"}, {"GET", "u+8", "0"}, {"GET", "u", "0"}, {"GET", "", "0"},
		{"GET", "u8\x00x", "0"}, {"GET", "u 8", "0"}, {"GET", "i64", "0"}, {"GET", "u63", "0"},
		{"GET", "u8", "-1"}, {"GET", "u8", "4294967296"}, {"GET", "u8", "4294967295"},
		{"GET", "u8", "#536870911"}, {"GET", "u8", "#536870912"}, {"GET", "i64", "#67108863"},
		{"GET", "i64", "#67108864"}, {"GET", "u8", "#"}, {"GET", "u8", "#-1"}, {"GET", "u8", "#-0"},
		{"GET", "u8", "-0"}, {"GET", "u8", "01"}, {"GET", "u8", "1.0"}, {"GET", "u8", " 1"},
		{"GET", "u8", "#2305843009213693953"}, {"GET", "u8", "##1"}, {"GET", "u8", "x"},
		{"GET", "u8", "99999999999999999999"}, {"GET", "u8"}, {"GET"},
		{"SET", "u8", "0"}, {"SET", "u8", "0", "x"}, {"SET", "u8", "0", "1.5"},
		{"SET", "u8", "0", "9223372036854775808"}, {"INCRBY", "u8", "0", ""},
		{"INCRBY", "u8", "0"}, {"OVERFLOW"}, {"OVERFLOW", "foo"}, {"OVERFLOW", "wrapx"},
		{"OVERFLOW", "fail\x00x", "INCRBY", "u2", "0", "5"}, {"get\x00x", "u8", "0"},
		{"FOO"}, {"FOO", "u8", "0"}, {"GETX", "u8", "0"},
		{"GET", "u8", "0", "SET", "u64", "0", "1"},
		{"SET", "u8", "0", "1", "GET", "x8", "0"},
		{"SET", "u8", "0", "x", "GET", "x8", "0"},
		{"SET", "x8", "0", "x"},
		{"SET", "u8", "-5", "x"},
		{"INCRBY", "u8", "0", "1", "OVERFLOW", "bad", "GET", "x1", "0"},
		{"GET", "u8", "0", "BOGUS"},
	}
	for _, key := range []string{"missing", "s", "n", "h"} {
		for _, c := range cases {
			p.Do(t, append([]string{"BITFIELD", key}, c...)...)
			p.Do(t, append([]string{"BITFIELD_RO", key}, c...)...)
		}
		p.Do(t, "GET", key)
	}
	p.Do(t, "EXISTS", "missing")
}

// TestDiffBitfieldOverflow: INCRBY and SET at and around every limit of a
// selection of widths, in each OVERFLOW mode, signed and unsigned.
func TestDiffBitfieldOverflow(t *testing.T) {
	p := difftest.Start(t)
	widths := []int{1, 2, 3, 7, 8, 9, 15, 16, 31, 32, 33, 62, 63, 64}
	for _, bits := range widths {
		for _, signed := range []bool{true, false} {
			if !signed && bits == 64 {
				continue
			}
			typ := "u" + strconv.Itoa(bits)
			var lo, hi int64 = 0, 1<<bits - 1
			if bits == 63 {
				hi = 1<<63 - 1
			}
			if signed {
				typ = "i" + strconv.Itoa(bits)
				hi = 1<<(bits-1) - 1
				lo = -hi - 1
			}
			starts := []int64{lo, lo + 1, -1, 0, 1, hi - 1, hi}
			incrs := []int64{-1, 1, 2, -2, hi, lo, -hi, 1 << 62, -1 << 63, 1<<63 - 1}
			for _, mode := range []string{"WRAP", "SAT", "FAIL"} {
				for _, s := range starts {
					for _, inc := range incrs {
						p.Do(t, "BITFIELD", "o", "SET", typ, "3", fmt.Sprint(s),
							"OVERFLOW", mode, "INCRBY", typ, "3", fmt.Sprint(inc), "GET", typ, "3")
					}
					p.Do(t, "BITFIELD", "o", "OVERFLOW", mode, "SET", typ, "5", fmt.Sprint(s),
						"SET", typ, "5", fmt.Sprint(hi), "SET", typ, "5", fmt.Sprint(lo),
						"SET", typ, "5", "-1", "SET", typ, "5", "9223372036854775807",
						"SET", typ, "5", "-9223372036854775808", "GET", typ, "5")
				}
			}
			p.Do(t, "GET", "o")
		}
	}
}

// TestDiffBitfieldGrowth: writes grow the string to the last byte the
// highest write touches, GETs never do; FAIL still grows; replies and
// bytes at the end of the string and across byte boundaries.
func TestDiffBitfieldGrowth(t *testing.T) {
	p := difftest.Start(t)
	steps := [][]string{
		{"BITFIELD", "g", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5"},
		{"EXISTS", "g"},
		{"GET", "g"},
		{"BITFIELD", "g", "GET", "u8", "1000"},
		{"STRLEN", "g"},
		{"BITFIELD", "g", "SET", "u1", "100", "1", "GET", "u1", "100"},
		{"GET", "g"},
		{"BITFIELD", "g", "OVERFLOW", "FAIL", "SET", "u2", "200", "9"},
		{"STRLEN", "g"},
		{"BITFIELD", "g", "SET", "i64", "61", "-2", "GET", "u63", "61", "GET", "u8", "120"},
		{"GET", "g"},
		{"BITFIELD", "g", "SET", "u8", "#1000", "7", "GET", "u8", "#1000"},
		{"STRLEN", "g"},
		{"SET", "n", "123"},
		{"BITFIELD", "n", "GET", "u8", "0"},
		{"OBJECT", "ENCODING", "n"},
		{"BITFIELD", "n", "SET", "u8", "100", "1"},
		{"OBJECT", "ENCODING", "n"},
		{"GET", "n"},
		{"SET", "e", "hello"},
		{"BITFIELD", "e", "INCRBY", "u8", "0", "1"},
		{"OBJECT", "ENCODING", "e"},
		{"GET", "e"},
		{"SETBIT", "big", "80000", "1"},
		{"BITFIELD", "big", "GET", "u16", "79992", "SET", "u16", "79990", "65535", "INCRBY", "i5", "200000", "3"},
		{"STRLEN", "big"},
		{"BITCOUNT", "big"},
		{"GETRANGE", "big", "9990", "-1"},
		{"BITFIELD", "huge", "SET", "u8", "4294967289", "255"},
		{"STRLEN", "huge"},
		{"BITFIELD", "huge", "GET", "u8", "4294967288", "GET", "u8", "4294967289", "GET", "u16", "4294967280"},
		{"BITCOUNT", "huge"},
		{"GETRANGE", "huge", "-3", "-1"},
	}
	for _, s := range steps {
		p.Do(t, s...)
	}
}

// TestDiffBitfieldSeedUseCase: one byte per user packing four flags and a
// 4-bit rank, and a per-user 8-bit streak counter bumped with #N offsets.
func TestDiffBitfieldSeedUseCase(t *testing.T) {
	p := difftest.Start(t)
	rng := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		uid := rng.IntN(64)
		base := uid * 8
		switch rng.IntN(4) {
		case 0: // set a flag
			p.Do(t, "BITFIELD", "users", "SET", "u1", strconv.Itoa(base+rng.IntN(4)), "1")
		case 1: // set the rank, saturating
			p.Do(t, "BITFIELD", "users", "OVERFLOW", "SAT", "INCRBY", "u4", strconv.Itoa(base+4), strconv.Itoa(rng.IntN(7)-2))
		case 2: // read flags and rank together
			p.Do(t, "BITFIELD_RO", "users", "GET", "u4", strconv.Itoa(base), "GET", "u4", strconv.Itoa(base+4))
		default:
			p.Do(t, "BITFIELD", "streaks", "INCRBY", "u8", "#"+strconv.Itoa(uid), "1")
		}
	}
	p.Do(t, "BITFIELD", "streaks", "INCRBY", "u8", "#40", "1")
	p.Do(t, "GET", "users")
	p.Do(t, "GET", "streaks")
	for range 300 {
		p.Do(t, "BITFIELD", "streaks", "INCRBY", "u8", "#40", "1")
	}
	p.Do(t, "BITFIELD", "streaks", "OVERFLOW", "FAIL", "INCRBY", "u8", "#40", "255")
	p.Do(t, "GET", "streaks")
}

// TestDiffBitfieldRandom: random mixes of widths, offsets and modes on a
// few keys, checking every reply and then the bytes.
func TestDiffBitfieldRandom(t *testing.T) {
	p := difftest.Start(t)
	rng := rand.New(rand.NewPCG(11, 5))
	typ := func() string {
		if rng.IntN(2) == 0 {
			return "i" + strconv.Itoa(1+rng.IntN(64))
		}
		return "u" + strconv.Itoa(1+rng.IntN(63))
	}
	num := func() string {
		switch rng.IntN(4) {
		case 0:
			return strconv.FormatInt(int64(rng.Uint64()), 10)
		case 1:
			return strconv.Itoa(rng.IntN(100) - 50)
		default:
			return strconv.FormatInt(rng.Int64N(1<<40)-1<<39, 10)
		}
	}
	for i := range 400 {
		key := "r" + strconv.Itoa(rng.IntN(3))
		args := []string{"BITFIELD", key}
		for range 1 + rng.IntN(5) {
			off := strconv.Itoa(rng.IntN(300))
			if rng.IntN(4) == 0 {
				off = "#" + strconv.Itoa(rng.IntN(10))
			}
			switch rng.IntN(5) {
			case 0:
				args = append(args, "GET", typ(), off)
			case 1:
				args = append(args, "SET", typ(), off, num())
			case 2:
				args = append(args, "OVERFLOW", []string{"WRAP", "SAT", "FAIL"}[rng.IntN(3)])
			default:
				args = append(args, "INCRBY", typ(), off, num())
			}
		}
		p.Do(t, args...)
		if i%20 == 0 {
			p.Do(t, "GET", key)
		}
	}
	for k := range 3 {
		p.Do(t, "GET", "r"+strconv.Itoa(k))
	}
}

// TestDiffBitfieldWatchAndInfo: which BITFIELDs touch a WATCHed key and
// count as changes (a write that changes nothing and grows nothing does
// not; a FAIL that only grows the string does not either).
func TestDiffBitfieldWatchAndInfo(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConn(t)
	for _, tc := range [][]string{
		{"BITFIELD", "w", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "5"}, // creates, no change
		{"BITFIELD", "w", "SET", "u8", "0", "0"},                        // same value
		{"BITFIELD", "w", "SET", "u8", "0", "7"},                        // change
		{"BITFIELD", "w", "SET", "u8", "8", "0"},                        // grows
		{"BITFIELD", "w", "INCRBY", "u8", "0", "0"},                     // no change
		{"BITFIELD", "w", "GET", "u8", "0"},
		{"BITFIELD_RO", "w", "GET", "u8", "0"},
		{"BITFIELD", "w", "OVERFLOW", "FAIL", "SET", "u8", "64", "300", "SET", "u8", "0", "7"},
	} {
		p.Do(t, "WATCH", "w")
		c.Do(t, tc...)
		p.Do(t, "MULTI")
		p.Do(t, "PING")
		p.Do(t, "EXEC")
	}
	p.Do(t, "MULTI")
	p.Do(t, "BITFIELD", "w", "INCRBY", "u8", "#0", "1")
	p.Do(t, "BITFIELD_RO", "w", "SET", "u8", "0", "1")
	p.Do(t, "BITFIELD", "w", "GET", "u99", "0")
	p.Do(t, "EXEC")
	p.Do(t, "GET", "w")
}
