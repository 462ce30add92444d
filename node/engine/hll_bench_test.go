package engine

import (
	"encoding/binary"
	"strconv"
	"testing"
)

// Benchmarks of the HLL commands through engine.Ctx (locks excluded). Run
// with go test ./node/engine -run '^$' -bench 'PF' -benchmem.

// benchHLL makes key a dense HLL of 20000 elements.
func benchHLL(s *strEnv, key string) {
	args := []string{"PFADD", key}
	for i := range 20000 {
		args = append(args, "seed:"+strconv.Itoa(i))
	}
	s.run(args...)
}

// BenchmarkPFADDDense adds a new element to a dense HLL each time (most
// land in a register that does not grow, as in production).
func BenchmarkPFADDDense(b *testing.B) {
	s := newStrEnv(b)
	benchHLL(s, "hll")
	c := benchCtx(b, s, "PFADD", "hll", "element:00000000")
	ele := c.Args[2][8:]
	var n uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n++
		binary.LittleEndian.PutUint64(ele, n)
		s.w.B = s.w.B[:0]
		cmdPfadd(c)
	}
}

// BenchmarkPFADDSparse adds an already counted element to a sparse HLL of
// 500 elements (the scan for its register is the cost).
func BenchmarkPFADDSparse(b *testing.B) {
	s := newStrEnv(b)
	args := []string{"PFADD", "hll"}
	for i := range 500 {
		args = append(args, "e"+strconv.Itoa(i))
	}
	s.run(args...)
	c := benchCtx(b, s, "PFADD", "hll", "e250")
	benchRun(b, s, c, cmdPfadd)
}

// BenchmarkPFCOUNTCached reads the cached cardinality.
func BenchmarkPFCOUNTCached(b *testing.B) {
	s := newStrEnv(b)
	benchHLL(s, "hll")
	c := benchCtx(b, s, "PFCOUNT", "hll")
	benchRun(b, s, c, cmdPfcount)
}

// BenchmarkPFCOUNTDense recomputes the estimate of a dense HLL every time
// (as after each PFADD that changed a register).
func BenchmarkPFCOUNTDense(b *testing.B) {
	s := newStrEnv(b)
	benchHLL(s, "hll")
	c := benchCtx(b, s, "PFCOUNT", "hll")
	str := s.entry("hll").Str
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		hllInvalidate(str)
		s.w.B = s.w.B[:0]
		cmdPfcount(c)
	}
}

// BenchmarkPFCOUNTUnion counts the union of two dense HLLs.
func BenchmarkPFCOUNTUnion(b *testing.B) {
	s := newStrEnv(b)
	benchHLL(s, "{h}a")
	benchHLL(s, "{h}b")
	c := benchCtx(b, s, "PFCOUNT", "{h}a", "{h}b")
	benchRun(b, s, c, cmdPfcount)
}
