package engine

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// HyperLogLog values, in Redis 7.0's own byte format.
//
// An HLL is a plain string value whose bytes are exactly what Redis stores:
// the 16-byte header ("HYLL", encoding byte, three unused bytes, the cached
// cardinality as 8 little-endian bytes whose top bit marks it stale), then
// either the sparse form (ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy and VAL
// 1vvvvvxx run-length opcodes) or the dense form (16384 6-bit registers,
// least significant bits first, 12288 bytes). Keeping Redis's format rather
// than a private one is what makes HLLs honest strings: GET returns Redis's
// bytes, SET of a value dumped from Redis is a working HLL on our node (and
// the other way round), and migration moves them as any other string.
//
// The hash is Redis's own, MurmurHash64A with seed 0xadc83b19, not xxhash:
// the register an element lands in and its run length are part of the
// stored bytes, so only Redis's hash gives identical registers, identical
// PFADD replies (1 exactly when a register grows) and identical PFCOUNT
// estimates for the same elements, and lets an HLL built by Redis keep
// counting correctly here (with another hash, re-adding an element Redis
// already counted would land elsewhere and count it twice). MurmurHash64A
// is also fast enough: a few ns for short elements, far below the cost of
// a command.
//
// Sparse updates follow Redis's algorithm step by step (split the opcode
// covering the register, then merge equal adjacent VALs scanning up to five
// opcodes from the previous one, promote to dense when a register exceeds
// 32 or the value would grow past hll-sparse-max-bytes), because the sparse
// bytes depend on that exact sequence. The estimator is Redis 7's (Ertl's
// improved raw estimator over the register histogram), so PFCOUNT matches
// Redis to the unit. Corrupted values behave as in Redis, byte for byte,
// but every access here is bounds-checked: the one byte Redis reads past a
// value's end is emulated (see hllTerm).

const (
	hllP         = 14
	hllQ         = 64 - hllP
	hllRegisters = 1 << hllP
	hllPMask     = hllRegisters - 1
	hllBits      = 6
	hllRegMax    = 1<<hllBits - 1
	hllHdrSize   = 16
	hllDenseSize = hllHdrSize + (hllRegisters*hllBits+7)/8

	hllEncDense  = 0
	hllEncSparse = 1

	// hllSparseMaxBytes is hll-sparse-max-bytes at its default: the
	// largest sparse value (header included) before promotion to dense.
	hllSparseMaxBytes = 3000

	hllSparseValMax    = 32
	hllSparseValMaxLen = 4
	hllSparseZeroMax   = 64
	hllSparseXZeroMax  = 16384

	hllSeed     = 0xadc83b19
	hllAlphaInf = 0.721347520444481703680 // 0.5/ln(2)
)

// hllMagic starts every HLL value.
const hllMagic = "HYLL"

// newHLL returns an empty HLL as Redis creates it: sparse, one XZERO
// covering all 16384 registers, cached cardinality 0.
func newHLL() []byte {
	b := make([]byte, hllHdrSize+2, hllHdrSize+64)
	copy(b, hllMagic)
	b[4] = hllEncSparse
	putXZero(b[hllHdrSize:], hllRegisters)
	return b
}

// isHLL reports whether s has the shape Redis's isHLLObjectOrReply
// accepts: the magic, a known encoding and, for dense, the exact size.
// (Redis also refuses integer-encoded strings; callers check that.)
func isHLL(s []byte) bool {
	if len(s) < hllHdrSize || string(s[:4]) != hllMagic || s[4] > hllEncSparse {
		return false
	}
	return s[4] != hllEncDense || len(s) == hllDenseSize
}

// hllCached returns the cached cardinality and whether it is valid.
func hllCached(s []byte) (uint64, bool) {
	return binary.LittleEndian.Uint64(s[8:16]), s[15]&0x80 == 0
}

func hllSetCached(s []byte, card uint64) { binary.LittleEndian.PutUint64(s[8:16], card) }

func hllInvalidate(s []byte) { s[15] |= 0x80 }

// murmur64A is MurmurHash2's 64-bit variant as Redis uses it (endian
// neutral: 8-byte blocks are read little endian).
func murmur64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if n := len(key); n > 0 {
		var t uint64
		for i := n - 1; i >= 0; i-- {
			t = t<<8 | uint64(key[i])
		}
		h ^= t
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen hashes an element to its register and the length of the
// "000..1" pattern above the register bits (1..hllQ+1).
func hllPatLen(ele []byte) (index int, count uint8) {
	h := murmur64A(ele, hllSeed)
	index = int(h & hllPMask)
	h >>= hllP
	h |= 1 << hllQ
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// Dense registers: register r occupies bits 6r..6r+5 of the register
// area, least significant bit first.

func denseGet(regs []byte, r int) uint8 {
	byt := r * hllBits / 8
	fb := uint(r * hllBits & 7)
	v := uint(regs[byt]) >> fb
	if byt+1 < len(regs) {
		v |= uint(regs[byt+1]) << (8 - fb)
	}
	return uint8(v & hllRegMax)
}

func denseSet(regs []byte, r int, val uint8) {
	byt := r * hllBits / 8
	fb := uint(r * hllBits & 7)
	v := uint(val)
	regs[byt] = regs[byt]&^byte(hllRegMax<<fb) | byte(v<<fb)
	if byt+1 < len(regs) {
		regs[byt+1] = regs[byt+1]&^byte(hllRegMax>>(8-fb)) | byte(v>>(8-fb))
	}
}

// denseMax raises register r to count if it is lower, reporting a change.
func denseMax(regs []byte, r int, count uint8) bool {
	if count > denseGet(regs, r) {
		denseSet(regs, r, count)
		return true
	}
	return false
}

// denseHisto adds the dense registers to a histogram of register values,
// four registers (three bytes) at a time.
func denseHisto(regs []byte, h *[64]int) {
	regs = regs[:hllRegisters*hllBits/8]
	for i := 0; i+2 < len(regs); i += 3 {
		b0, b1, b2 := regs[i], regs[i+1], regs[i+2]
		h[b0&63]++
		h[(b0>>6|b1<<2)&63]++
		h[(b1>>4|b2<<4)&63]++
		h[b2>>2]++
	}
}

// denseMerge raises max[r] to every dense register r, four registers
// (three bytes) at a time.
func denseMerge(max *[hllRegisters]uint8, regs []byte) {
	regs = regs[:hllRegisters*hllBits/8]
	for i, r := 0, 0; i+2 < len(regs); i, r = i+3, r+4 {
		b0, b1, b2 := regs[i], regs[i+1], regs[i+2]
		m := max[r : r+4 : r+4]
		if v := b0 & 63; v > m[0] {
			m[0] = v
		}
		if v := (b0>>6 | b1<<2) & 63; v > m[1] {
			m[1] = v
		}
		if v := (b1>>4 | b2<<4) & 63; v > m[2] {
			m[2] = v
		}
		if v := b2 >> 2; v > m[3] {
			m[3] = v
		}
	}
}

// Sparse opcodes.

func isZero(b byte) bool  { return b&0xc0 == 0 }
func isXZero(b byte) bool { return b&0xc0 == 0x40 }
func isVal(b byte) bool   { return b&0x80 != 0 }
func zeroLen(b byte) int  { return int(b&0x3f) + 1 }
func valLen(b byte) int   { return int(b&3) + 1 }
func valValue(b byte) int { return int(b>>2&0x1f) + 1 }

// xzeroLen reads the XZERO at s[p]. A second byte past the end is the
// byte Redis finds there: the string's terminator (see hllTerm).
func xzeroLen(s []byte, p int) int {
	lo := int(hllTerm(s))
	if p+1 < len(s) {
		lo = int(s[p+1])
	}
	return (int(s[p]&0x3f)<<8 | lo) + 1
}

// The terminator byte. Redis's sds strings have a byte past their end,
// normally a NUL, and a sparse value ending inside an XZERO (a corrupted
// value: Redis never writes one itself) makes Redis read it as the
// XZERO's second byte. Redis's own split of such an opcode writes its
// last new byte over that terminator, so later reads of the same value
// see that byte instead of 0, until a change of length rewrites it. To
// answer the same, hllSetTerm keeps the byte just past the value's end in
// spare capacity, with a check byte after it that ties it to the length;
// any buffer not marked that way (every value other commands build)
// reads 0, as a fresh Redis string does.

// hllTerm returns the byte Redis has just past the end of s.
func hllTerm(s []byte) byte {
	n := len(s)
	if cap(s)-n < 2 {
		return 0
	}
	t := s[:n+2]
	if t[n] == 0 || t[n+1] != termCheck(t[n], n) {
		return 0
	}
	return t[n]
}

// hllSetTerm makes b the byte past the end of s (growing its capacity if
// needed) and returns s.
func hllSetTerm(s []byte, b byte) []byte {
	n := len(s)
	if b == 0 {
		if cap(s) > n {
			s[:n+1][n] = 0
		}
		return s
	}
	if cap(s)-n < 2 {
		s = append(s[:n:n], b, 0)[:n]
	}
	t := s[:n+2]
	t[n], t[n+1] = b, termCheck(b, n)
	return s
}

func termCheck(b byte, n int) byte { return ^b ^ byte(n) ^ byte(n>>8) ^ 0x5a }

func valOp(val, n int) byte { return byte((val-1)<<2|(n-1)) | 0x80 }

func putXZero(b []byte, n int) {
	n--
	b[0] = byte(n>>8) | 0x40
	b[1] = byte(n)
}

// appendZeros appends the shortest opcode for a run of n zero registers
// (ZERO up to 64, XZERO beyond), as Redis's split does.
func appendZeros(b []byte, n int) []byte {
	if n > hllSparseZeroMax {
		n--
		return append(b, byte(n>>8)|0x40, byte(n))
	}
	return append(b, byte(n-1))
}

// sparseToDense returns the dense form of a sparse HLL (header copied,
// cached cardinality included, as Redis does), or ok=false if the opcodes
// do not cover exactly 16384 registers.
func sparseToDense(s []byte) (dense []byte, ok bool) {
	dense = make([]byte, hllDenseSize)
	copy(dense, s[:hllHdrSize])
	dense[4] = hllEncDense
	regs := dense[hllHdrSize:]
	idx := 0
	for p := hllHdrSize; p < len(s); {
		b := s[p]
		switch {
		case isZero(b):
			idx += zeroLen(b)
			p++
		case isXZero(b):
			idx += xzeroLen(s, p)
			p += 2
		default:
			n, v := valLen(b), valValue(b)
			if idx+n > hllRegisters {
				return nil, false
			}
			for ; n > 0; n-- {
				denseSet(regs, idx, uint8(v))
				idx++
			}
			p++
		}
	}
	return dense, idx == hllRegisters
}

// sparseHisto adds a sparse HLL's registers to a histogram, reporting
// whether the opcodes cover exactly 16384 registers.
func sparseHisto(s []byte, h *[64]int) bool {
	idx := 0
	for p := hllHdrSize; p < len(s); {
		b := s[p]
		switch {
		case isZero(b):
			n := zeroLen(b)
			idx += n
			h[0] += n
			p++
		case isXZero(b):
			n := xzeroLen(s, p)
			idx += n
			h[0] += n
			p += 2
		default:
			n := valLen(b)
			idx += n
			h[valValue(b)] += n
			p++
		}
	}
	return idx == hllRegisters
}

// hllMerge raises max[r] to each register of the HLL s (already checked
// with isHLL), reporting false for a corrupted sparse form.
func hllMerge(max *[hllRegisters]uint8, s []byte) bool {
	if s[4] == hllEncDense {
		denseMerge(max, s[hllHdrSize:])
		return true
	}
	i := 0
	for p := hllHdrSize; p < len(s); {
		b := s[p]
		switch {
		case isZero(b):
			i += zeroLen(b)
			p++
		case isXZero(b):
			i += xzeroLen(s, p)
			p += 2
		default:
			n, v := valLen(b), uint8(valValue(b))
			if i+n > hllRegisters {
				return false
			}
			for ; n > 0; n-- {
				if v > max[i] {
					max[i] = v
				}
				i++
			}
			p++
		}
	}
	return i == hllRegisters
}

// hllSparseSet raises register index of the sparse HLL s to count, as
// Redis's hllSparseSet does, byte for byte. It returns the new value (s
// grown or shrunk in place, or a new dense value after a promotion) and 1
// if a register changed, 0 if not, -1 if s is corrupted.
func hllSparseSet(s []byte, index int, count uint8) ([]byte, int) {
	if count > hllSparseValMax {
		return hllPromote(s, index, count)
	}
	// Step 1: find the opcode covering index.
	end := len(s)
	p, first, span, prev := hllHdrSize, 0, 0, -1
	for p < end {
		b, oplen := s[p], 1
		switch {
		case isZero(b):
			span = zeroLen(b)
		case isVal(b):
			span = valLen(b)
		default:
			span = xzeroLen(s, p)
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return s, -1
	}
	b := s[p]
	// Step 2: the trivial in-place cases.
	if isVal(b) {
		if valValue(b) >= int(count) {
			return s, 0
		}
		if valLen(b) == 1 {
			s[p] = valOp(int(count), 1)
			return hllSparseMergeVals(s, prev), 1
		}
	}
	if isZero(b) && zeroLen(b) == 1 {
		s[p] = valOp(int(count), 1)
		return hllSparseMergeVals(s, prev), 1
	}
	// General case: split the opcode into up to three (at most 5 bytes).
	var seqBuf [5]byte
	seq := seqBuf[:0]
	last := first + span - 1
	oldlen := 1
	if isVal(b) {
		cur := valValue(b)
		if index != first {
			seq = append(seq, valOp(cur, index-first))
		}
		seq = append(seq, valOp(int(count), 1))
		if index != last {
			seq = append(seq, valOp(cur, last-index))
		}
	} else {
		if isXZero(b) {
			oldlen = 2
		}
		if index != first {
			seq = appendZeros(seq, index-first)
		}
		seq = append(seq, valOp(int(count), 1))
		if index != last {
			seq = appendZeros(seq, last-index)
		}
	}
	// Step 3: put the sequence in place of the old opcode.
	delta := len(seq) - oldlen
	if delta > 0 && len(s)+delta > hllSparseMaxBytes {
		return hllPromote(s, index, count)
	}
	newLen := len(s) + delta
	// Move the tail after the new sequence (a truncated trailing XZERO has
	// no tail, and its missing byte is not counted in newLen), then write
	// the sequence.
	tail := min(p+oldlen, end)
	need := p + len(seq) + end - tail
	if need > len(s) {
		s = append(s, seqBuf[:need-len(s)]...)
	}
	copy(s[p+len(seq):need], s[tail:end])
	copy(s[p:], seq)
	term := byte(0)
	if need > newLen {
		term = s[newLen] // the sequence's last byte, past the new end
	}
	s = hllSetTerm(s[:newLen], term)
	return hllSparseMergeVals(s, prev), 1
}

// hllSparseMergeVals is step 4 of Redis's sparse update: starting at the
// opcode before the changed one, scan up to five opcodes merging adjacent
// VALs of equal value whose lengths fit in one; then mark the cached
// cardinality stale.
func hllSparseMergeVals(s []byte, prev int) []byte {
	p := hllHdrSize
	if prev >= 0 {
		p = prev
	}
	for scan := 5; p < len(s) && scan > 0; scan-- {
		b := s[p]
		if isXZero(b) {
			p += 2
			continue
		}
		if isZero(b) {
			p++
			continue
		}
		if p+1 < len(s) && isVal(s[p+1]) {
			v := valValue(b)
			if n := valLen(b) + valLen(s[p+1]); v == valValue(s[p+1]) && n <= hllSparseValMaxLen {
				s[p+1] = valOp(v, n)
				copy(s[p:], s[p+1:])
				s = hllSetTerm(s[:len(s)-1], 0)
				continue // try again with the merged opcode
			}
		}
		p++
	}
	hllInvalidate(s)
	return s
}

// hllPromote converts a sparse HLL to dense and sets the register there.
func hllPromote(s []byte, index int, count uint8) ([]byte, int) {
	d, ok := sparseToDense(s)
	if !ok {
		return s, -1
	}
	if denseMax(d[hllHdrSize:], index, count) {
		return d, 1
	}
	return d, 0
}

// hllSet raises register index to count in the HLL s (checked with
// isHLL), returning the possibly reallocated value and 1, 0 or -1 as
// hllSparseSet does.
func hllSet(s []byte, index int, count uint8) ([]byte, int) {
	if s[4] == hllEncDense {
		if denseMax(s[hllHdrSize:], index, count) {
			return s, 1
		}
		return s, 0
	}
	return hllSparseSet(s, index, count)
}

// hllAdd adds one element to the HLL s.
func hllAdd(s []byte, ele []byte) ([]byte, int) {
	index, count := hllPatLen(ele)
	return hllSet(s, index, count)
}

// hllCount estimates the cardinality of the HLL s, reporting ok=false if a
// sparse form is corrupted.
func hllCount(s []byte) (uint64, bool) {
	var h [64]int
	if s[4] == hllEncDense {
		denseHisto(s[hllHdrSize:], &h)
	} else if !sparseHisto(s, &h) {
		return 0, false
	}
	return hllEstimate(&h), true
}

// rawCount estimates the cardinality of registers held one per byte (the
// union PFCOUNT builds for several keys).
func rawCount(regs *[hllRegisters]uint8) uint64 {
	var h [64]int
	for _, v := range regs {
		h[v&63]++
	}
	return hllEstimate(&h)
}

// hllEstimate is Redis 7's estimator (Otmar Ertl, "New cardinality
// estimation algorithms for HyperLogLog sketches", arXiv:1702.01284) over
// the register histogram. Every product is converted explicitly so the
// compiler cannot fuse it into an FMA: the result must round exactly as
// Redis's C does.
func hllEstimate(h *[64]int) uint64 {
	m := float64(hllRegisters)
	z := float64(m * hllTau((m-float64(h[hllQ+1]))/m))
	for j := hllQ; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(h[0])/m))
	return uint64(math.Round(float64(float64(float64(hllAlphaInf)*m)*m) / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += float64(x * y)
		y += y
		if zPrime == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if zPrime == z {
			return z / 3
		}
	}
}
