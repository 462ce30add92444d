package node_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// HyperLogLog commands against redis-server 7.0.15. GET after each step
// compares the stored bytes: our HLLs are Redis's format byte for byte
// (sparse opcodes, dense registers, cached cardinality).

// hllElems returns n distinct elements with a prefix.
func hllElems(prefix string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(from+i)
	}
	return out
}

func pfadd(key string, elems ...string) []string {
	return append([]string{"PFADD", key}, elems...)
}

func TestDiffHLLBasics(t *testing.T) {
	p := difftest.Start(t)
	steps := [][]string{
		{"PFCOUNT", "h"},
		{"PFADD", "h"},
		{"GET", "h"},
		{"PFADD", "h"},
		{"PFADD", "h", "a", "b", "c"},
		{"GET", "h"},
		{"PFADD", "h", "a", "b", "c"},
		{"PFCOUNT", "h"},
		{"GET", "h"},
		{"PFCOUNT", "h"},
		{"PFADD", "h", "d"},
		{"GET", "h"},
		{"PFCOUNT", "h"},
		{"OBJECT", "ENCODING", "h"},
		{"TYPE", "h"},
		{"STRLEN", "h"},
		{"PFADD", "{h}x", "x", "y"},
		{"PFCOUNT", "h", "{h}x"},
		{"PFCOUNT", "h", "{h}missing", "{h}x"},
		{"PFCOUNT", "h", "{h}x", "h"},
		{"PFCOUNT", "h", "other"},
		{"PFMERGE", "{h}dst", "h", "{h}x"},
		{"GET", "{h}dst"},
		{"PFCOUNT", "{h}dst"},
		{"PFMERGE", "{h}new"},
		{"GET", "{h}new"},
		{"PFMERGE", "{h}new2", "{h}missing1", "{h}missing2"},
		{"GET", "{h}new2"},
		{"PFMERGE", "h", "{h}x"},
		{"GET", "h"},
		{"PFMERGE", "h", "h"},
		{"GET", "h"},
		{"PFMERGE", "h", "other"},
		{"PFDEBUG", "ENCODING", "h"},
		{"PFDEBUG", "DECODE", "h"},
		{"PFDEBUG", "ENCODING", "nokey"},
		{"PFDEBUG", "FOO", "h"},
		{"PFDEBUG", "FOO", "nokey"},
		{"PFDEBUG", "TODENSE", "h"},
		{"PFDEBUG", "TODENSE", "h"},
		{"PFDEBUG", "ENCODING", "h"},
		{"PFDEBUG", "DECODE", "h"},
		{"GET", "h"},
		{"PFCOUNT", "h"},
		{"PFADD"},
		{"PFCOUNT"},
		{"PFMERGE"},
		{"PFDEBUG", "GETREG"},
	}
	for _, s := range steps {
		p.Do(t, s...)
	}
	p.DoProto(t, 3, "PFCOUNT", "h")
	p.DoProto(t, 3, "PFADD", "h", "zz")
	p.DoProto(t, 3, "PFDEBUG", "GETREG", "h")
}

// TestDiffHLLWrongType: plain strings, integers, short or
// malformed headers, each with Redis's error. (Other types are covered by the
// engine's unit tests until the node serves them.)
func TestDiffHLLWrongType(t *testing.T) {
	p := difftest.Start(t)
	hdr := func(enc byte, body string) string {
		return "HYLL" + string([]byte{enc, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) + body
	}
	p.Do(t, "SET", "str", "hello")
	p.Do(t, "SET", "int", "12345")
	p.Do(t, "SET", "empty", "")
	p.Do(t, "SET", "short", "HYLL\x01")
	p.Do(t, "SET", "badmagic", "HYLX"+hdr(1, "\x7f\xff")[4:])
	p.Do(t, "SET", "badenc", hdr(2, "\x7f\xff"))
	p.Do(t, "SET", "denseshort", hdr(0, "\x00\x00"))
	p.Do(t, "SET", "hdronly", hdr(1, ""))
	for _, k := range []string{"str", "int", "empty", "short", "badmagic", "badenc", "denseshort", "hdronly"} {
		p.Do(t, "PFADD", k, "a")
		p.Do(t, "PFCOUNT", k)
		p.Do(t, "PFCOUNT", k, "nokey")
		p.Do(t, "PFMERGE", k, "nokey")
		p.Do(t, "PFDEBUG", "ENCODING", k)
		p.Do(t, "GET", k)
	}
	p.Do(t, "PFADD", "{x}h", "a")
	p.Do(t, "PFMERGE", "{x}h", "{x}str")
	p.Do(t, "SET", "{x}str", "plain")
	p.Do(t, "PFMERGE", "{x}h", "{x}str")
	p.Do(t, "PFCOUNT", "{x}h", "{x}str")
	p.Do(t, "PFCOUNT", "{x}h", "{y}")
	p.Do(t, "INFO", "keyspace")
}

// TestDiffHLLCorrupted: sparse opcodes that do not cover 16384 registers
// give INVALIDOBJ where Redis detects it.
func TestDiffHLLCorrupted(t *testing.T) {
	p := difftest.Start(t)
	hdr := "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"
	cases := map[string]string{
		"short":    hdr + "\x7f\xfe",             // 16383 registers
		"long":     hdr + "\x7f\xff\x00",         // 16385
		"val":      hdr + "\x7f\xfe\x80\x80",     // 16385 with VALs
		"valsonly": hdr + "\x80\x84\x88",         // 3 registers
		"onlyzero": hdr + "\x00",                 // 1 register
		"bigval":   hdr + "\x40\x00\xfc\x7f\xfc", // VAL 32 then XZERO
		"dense":    "HYLL\x00\x00\x00\x00" + "\xff\xff\xff\xff\xff\xff\xff\xff" + string(make([]byte, 12288)),
	}
	for k, v := range cases {
		p.Do(t, "SET", k, v)
		p.Do(t, "PFCOUNT", k)
		p.Do(t, "GET", k)
		p.Do(t, "PFCOUNT", k, "nokey")
		p.Do(t, "PFMERGE", "{"+k+"}dst", k)
		p.Do(t, "PFDEBUG", "DECODE", k)
		p.Do(t, "PFADD", k, "a", "b", "c", "d", "e", "f", "g", "h")
		p.Do(t, "GET", k)
		p.Do(t, pfadd(k, hllElems("e", 0, 200)...)...)
		p.Do(t, "GET", k)
	}
	// A sparse value ending inside an XZERO: Redis reads the missing byte
	// past the string's end, its terminator, which its own split of that
	// opcode then overwrites; later updates read what it wrote there.
	p.Do(t, "SET", "half", hdr+"\x7f")
	p.Do(t, "PFCOUNT", "half")
	for _, e := range []string{"m268", "35", "m152", "m167", "m181"} {
		p.Do(t, "PFADD", "half", e)
		p.Do(t, "GET", "half")
		p.Do(t, "PFDEBUG", "DECODE", "half")
	}
	p.Do(t, "SETRANGE", "half", "16", "\x7f\xf0")
	p.Do(t, pfadd("half", hllElems("t", 0, 50)...)...)
	p.Do(t, "GET", "half")
	p.Do(t, "PFCOUNT", "half")
}

// TestDiffHLLSparseToDense grows an HLL element by element across the
// sparse/dense promotion, comparing the bytes after every batch.
func TestDiffHLLSparseToDense(t *testing.T) {
	p := difftest.Start(t)
	for i := 0; i < 3000; i += 25 {
		p.Do(t, pfadd("h", hllElems("user:", i, 25)...)...)
		p.Do(t, "GET", "h")
		if i%200 == 0 {
			p.Do(t, "PFCOUNT", "h")
			p.Do(t, "PFDEBUG", "ENCODING", "h")
		}
	}
	p.Do(t, "PFCOUNT", "h")
	p.Do(t, "GET", "h")
	// One element at a time near the limit, on a second key.
	for i := 0; i < 1500; i++ {
		a := p.Do(t, "PFADD", "g", "x"+strconv.Itoa(i))
		if a.IsError() {
			break
		}
		if i > 1100 {
			p.Do(t, "STRLEN", "g")
		}
	}
	p.Do(t, "GET", "g")
	p.Do(t, "PFCOUNT", "g")
}

// TestDiffHLLMerge merges sparse and dense HLLs in every combination.
func TestDiffHLLMerge(t *testing.T) {
	p := difftest.Start(t)
	p.Do(t, pfadd("{m}s1", hllElems("a", 0, 50)...)...)
	p.Do(t, pfadd("{m}s2", hllElems("a", 25, 100)...)...)
	p.Do(t, pfadd("{m}d1", hllElems("b", 0, 5000)...)...)
	p.Do(t, pfadd("{m}d2", hllElems("b", 4000, 3000)...)...)
	merges := [][]string{
		{"PFMERGE", "{m}r1", "{m}s1", "{m}s2"},
		{"PFMERGE", "{m}r2", "{m}s1", "{m}d1"},
		{"PFMERGE", "{m}r3", "{m}d1", "{m}d2", "{m}missing"},
		{"PFMERGE", "{m}s1", "{m}s2"},
		{"PFMERGE", "{m}s2", "{m}d2"},
		{"PFMERGE", "{m}d1", "{m}s1"},
		{"PFMERGE", "{m}big", "{m}s1", "{m}s2", "{m}d1", "{m}d2"},
	}
	for _, m := range merges {
		p.Do(t, m...)
		p.Do(t, "GET", m[1])
		p.Do(t, "PFCOUNT", m[1])
	}
	p.Do(t, "PFCOUNT", "{m}s1", "{m}s2", "{m}d1", "{m}d2")
	p.Do(t, "PFCOUNT", "{m}s1", "{m}missing")
	p.Do(t, "PFCOUNT", "{m}d1", "{m}s2")
	// Many small sparse sources merged into a sparse destination that
	// reaches the promotion limit while being written.
	var keys []string
	for i := range 40 {
		k := "{m}src" + strconv.Itoa(i)
		keys = append(keys, k)
		p.Do(t, pfadd(k, hllElems("c"+strconv.Itoa(i)+":", 0, 30)...)...)
	}
	p.Do(t, append([]string{"PFMERGE", "{m}many"}, keys...)...)
	p.Do(t, "GET", "{m}many")
	p.Do(t, "PFCOUNT", "{m}many")
	p.Do(t, append([]string{"PFCOUNT"}, keys...)...)
}

// TestDiffHLLFromRedis stores HLL strings Redis made (read with GET from
// the oracle) on both sides with SET, then counts and adds there: values
// move between Redis and shardgate.
func TestDiffHLLFromRedis(t *testing.T) {
	p := difftest.Start(t)
	for _, n := range []int{3, 300, 20000} {
		src := "src" + strconv.Itoa(n)
		p.Do(t, pfadd(src, hllElems("r", 0, n)...)...)
		a, _ := p.Both(t, "GET", src)
		if a.Kind != difftest.Bulk {
			t.Fatalf("GET %s from redis: %s", src, a)
		}
		dst := "copy" + strconv.Itoa(n)
		p.Do(t, "SET", dst, string(a.Str))
		p.Do(t, "PFCOUNT", dst)
		p.Do(t, "PFADD", dst, "r0", "r1")
		p.Do(t, pfadd(dst, hllElems("new", 0, 100)...)...)
		p.Do(t, "GET", dst)
		p.Do(t, "PFCOUNT", dst)
		p.Do(t, "OBJECT", "ENCODING", dst)
	}
}

// TestDiffHLLRandomElements adds random binary elements of every length
// (all MurmurHash64A tail cases) and compares bytes and counts.
func TestDiffHLLRandomElements(t *testing.T) {
	p := difftest.Start(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 40 {
		key := fmt.Sprintf("r%d", round%4)
		args := []string{"PFADD", key}
		for range 1 + rng.IntN(60) {
			b := make([]byte, rng.IntN(33))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			args = append(args, string(b))
		}
		p.Do(t, args...)
		p.Do(t, "GET", key)
		p.Do(t, "PFCOUNT", key)
	}
	// Elements that are 8-byte little endian integers, as PFSELFTEST adds.
	var b [8]byte
	args := []string{"PFADD", "ints"}
	for i := range 4000 {
		binary.LittleEndian.PutUint64(b[:], uint64(i)*0x9e3779b97f4a7c15)
		args = append(args, string(b[:]))
	}
	p.Do(t, args...)
	p.Do(t, "GET", "ints")
	p.Do(t, "PFCOUNT", "ints")
}

// TestDiffHLLWatchAndInfo: PFADD that changes nothing does not touch a
// WATCHed key; PFCOUNT that refreshes the cache does; dirty counters match.
func TestDiffHLLWatchAndInfo(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConn(t)
	p.Do(t, "PFADD", "w", "a")
	p.Do(t, "PFCOUNT", "w")
	for _, tc := range [][]string{
		{"PFADD", "w", "a"},   // no change
		{"PFCOUNT", "w"},      // cache valid
		{"PFADD", "w", "b"},   // change
		{"PFCOUNT", "w"},      // cache refreshed
		{"PFMERGE", "w", "w"}, // always a change
	} {
		p.Do(t, "WATCH", "w")
		c.Do(t, tc...)
		p.Do(t, "MULTI")
		p.Do(t, "PING")
		p.Do(t, "EXEC")
	}
	p.Do(t, "MULTI")
	p.Do(t, "PFADD", "w", "c", "d")
	p.Do(t, "PFCOUNT", "w")
	p.Do(t, "PFCOUNT", "w", "other")
	p.Do(t, "EXEC")
}

// TestDiffHLLEstimatorEdges: dense values with register histograms no
// hash produces in practice (registers at 51, the hllTau branch, and
// above, and all alike), so the estimator's floating point must round
// exactly as Redis's C does.
func TestDiffHLLEstimatorEdges(t *testing.T) {
	p := difftest.Start(t)
	rng := rand.New(rand.NewPCG(5, 8))
	dense := func(reg func(r int) byte) string {
		b := make([]byte, 12288)
		for r := range 16384 {
			v := uint(reg(r) & 63)
			bit := r * 6
			b[bit/8] |= byte(v << (bit % 8))
			if bit%8 > 2 {
				b[bit/8+1] |= byte(v >> (8 - bit%8))
			}
		}
		return "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80" + string(b)
	}
	cases := []func(r int) byte{
		func(int) byte { return 51 },
		func(r int) byte { return byte(51 * (r % 2)) },
		func(r int) byte { return byte(r % 64) },
		func(int) byte { return 1 },
		func(int) byte { return 63 },
		func(r int) byte { return byte(50 + r%2) },
		func(int) byte { return byte(rng.IntN(64)) },
		func(int) byte { return byte(rng.IntN(52)) },
		func(r int) byte {
			if r < 3 {
				return 51
			}
			return byte(rng.IntN(20))
		},
		func(r int) byte {
			if r < 16000 {
				return 0
			}
			return byte(1 + rng.IntN(51))
		},
	}
	for i, reg := range cases {
		k := fmt.Sprintf("{e}%d", i)
		p.Do(t, "SET", k, dense(reg))
		p.Do(t, "PFCOUNT", k)
		p.Do(t, "PFCOUNT", k, "{e}missing")
		p.Do(t, "PFADD", k, "x", "y", "z")
		p.Do(t, "PFCOUNT", k)
	}
	p.Do(t, "PFCOUNT", "{e}0", "{e}2", "{e}6")
	p.Do(t, "PFMERGE", "{e}all", "{e}1", "{e}7", "{e}9")
	p.Do(t, "GET", "{e}all")
	p.Do(t, "PFCOUNT", "{e}all")
}
