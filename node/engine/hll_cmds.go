package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// The HyperLogLog commands, as Redis 7.0's hyperloglog.c answers them. The
// value format and algorithms are in hll.go; this file is the commands'
// bookkeeping, which INFO, WATCH and OBJECT ENCODING observe:
//   - reads Redis does with lookupKeyRead (PFCOUNT, the sources of PFMERGE)
//     count keyspace hits and misses; PFADD, PFMERGE's destination and
//     PFDEBUG look up for writing and count nothing;
//   - PFADD counts one change per register raised (plus one for creating
//     the key); PFCOUNT counts one and touches the key when it refreshes
//     the cached cardinality, since that rewrites the string;
//   - any command that may write an existing value leaves it "raw", as
//     Redis's dbUnshareStringValue does with an embstr.

func registerHLL(h map[string]Handler) {
	h["pfadd"] = cmdPfadd
	h["pfcount"] = cmdPfcount
	h["pfmerge"] = cmdPfmerge
	h["pfdebug"] = cmdPfdebug
	h["pfselftest"] = cmdPfselftest
}

// hllOf returns the HLL bytes of e, or replies WRONGTYPE (for other types
// and for strings that are not HLLs, each with Redis's text) and returns
// ok=false. A Bitmap-held value is returned as a copy; writers store what
// they change back with SetStrBytes.
func hllOf(c *Ctx, e *Entry) (s []byte, ok bool) {
	if e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return nil, false
	}
	if e.Enc.IsInt() {
		c.W.Error(resp.ErrNotHLL)
		return nil, false
	}
	if bm := e.Bits(); bm != nil {
		// Check the header before copying a possibly huge value.
		var hdr [hllHdrSize]byte
		if bm.Len() < hllHdrSize {
			c.W.Error(resp.ErrNotHLL)
			return nil, false
		}
		bm.ReadAt(hdr[:], 0)
		if string(hdr[:4]) != hllMagic || hdr[4] > hllEncSparse ||
			hdr[4] == hllEncDense && bm.Len() != hllDenseSize {
			c.W.Error(resp.ErrNotHLL)
			return nil, false
		}
		return e.StrBytes(), true
	}
	if !isHLL(e.Str) {
		c.W.Error(resp.ErrNotHLL)
		return nil, false
	}
	return e.Str, true
}

// cmdPfadd is PFADD key [element ...]: 1 if the key was created or any
// register grew, else 0.
func cmdPfadd(c *Ctx) {
	key := c.Args[1]
	e := c.Lookup(key)
	updated := 0
	var s []byte
	if e == nil {
		s = newHLL()
		e = &Entry{Kind: KindString, Enc: EncRaw, Str: s}
		c.KS.Set(c.Shard, key, e)
		updated++
	} else {
		var ok bool
		if s, ok = hllOf(c, e); !ok {
			return
		}
		e.Enc = EncRaw
	}
	for _, ele := range c.Args[2:] {
		var r int
		s, r = hllAdd(s, ele)
		if r < 0 {
			// Redis keeps whatever the elements before changed.
			e.SetStrBytes(s)
			c.W.Error(resp.ErrCorruptHLL)
			return
		}
		updated += r
	}
	e.SetStrBytes(s)
	if updated == 0 {
		c.W.Int(0)
		return
	}
	hllInvalidate(s)
	c.Shard.TouchBytes(key)
	c.KS.Dirty(int64(updated))
	c.W.Int(1)
}

// cmdPfcount is PFCOUNT key [key ...]. One key uses and refreshes the
// cached cardinality; several keys are counted as their union, changing
// nothing.
func cmdPfcount(c *Ctx) {
	if len(c.Args) > 2 {
		var max [hllRegisters]uint8
		for _, key := range c.Args[1:] {
			e := lookupRead(c, key)
			if e == nil {
				continue
			}
			s, ok := hllOf(c, e)
			if !ok {
				return
			}
			if !hllMerge(&max, s) {
				c.W.Error(resp.ErrCorruptHLL)
				return
			}
		}
		c.W.Int(int64(rawCount(&max)))
		return
	}
	key := c.Args[1]
	e := lookupRead(c, key)
	if e == nil {
		c.W.Int(0)
		return
	}
	s, ok := hllOf(c, e)
	if !ok {
		return
	}
	e.Enc = EncRaw
	card, valid := hllCached(s)
	if !valid {
		if card, ok = hllCount(s); !ok {
			c.W.Error(resp.ErrCorruptHLL)
			return
		}
		hllSetCached(s, card)
		e.SetStrBytes(s)
		c.Shard.TouchBytes(key)
		c.KS.Dirty(1)
		c.Propagate = true
	}
	c.W.Int(int64(card))
}

// cmdPfmerge is PFMERGE destkey [sourcekey ...]: the destination becomes
// the union of itself and the sources (created empty if missing). It is
// written register by register as Redis does, so a sparse destination
// ends up byte for byte as Redis's; it turns dense at once if any input is
// dense.
func cmdPfmerge(c *Ctx) {
	var max [hllRegisters]uint8
	useDense := false
	for _, key := range c.Args[1:] {
		e := lookupRead(c, key)
		if e == nil {
			continue
		}
		s, ok := hllOf(c, e)
		if !ok {
			return
		}
		if s[4] == hllEncDense {
			useDense = true
		}
		if !hllMerge(&max, s) {
			c.W.Error(resp.ErrCorruptHLL)
			return
		}
	}
	key := c.Args[1]
	e := c.Lookup(key)
	var s []byte
	if e == nil {
		s = newHLL()
		e = &Entry{Kind: KindString, Enc: EncRaw, Str: s}
		c.KS.Set(c.Shard, key, e)
	} else {
		// The destination was checked as a source above.
		s = e.StrBytes()
		e.Enc = EncRaw
	}
	if useDense && s[4] == hllEncSparse {
		d, ok := sparseToDense(s)
		if !ok {
			c.W.Error(resp.ErrCorruptHLL)
			return
		}
		s = d
	}
	for r, v := range max {
		if v != 0 {
			s, _ = hllSet(s, r, v)
		}
	}
	hllInvalidate(s)
	e.SetStrBytes(s)
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	c.W.OK()
}

// cmdPfdebug is PFDEBUG GETREG|DECODE|ENCODING|TODENSE key, Redis's
// debugging view of an HLL. The key is checked before the subcommand, as
// in Redis.
func cmdPfdebug(c *Ctx) {
	sub, key := c.Args[1], c.Args[2]
	e := c.Lookup(key)
	if e == nil {
		c.W.Error(resp.ErrPFDebugNoKey)
		return
	}
	s, ok := hllOf(c, e)
	if !ok {
		return
	}
	e.Enc = EncRaw
	toDense := func() bool {
		if s[4] != hllEncSparse {
			return false
		}
		d, ok := sparseToDense(s)
		if !ok {
			c.W.Error(resp.ErrCorruptHLL)
			return false
		}
		s = d
		e.SetStrBytes(s)
		c.KS.Dirty(1) // Redis forces propagation of the encoding change
		return true
	}
	switch {
	case equalFoldASCII(sub, "getreg"):
		if s[4] == hllEncSparse && !toDense() {
			return
		}
		c.W.Array(hllRegisters)
		for r := range hllRegisters {
			c.W.Int(int64(denseGet(s[hllHdrSize:], r)))
		}
	case equalFoldASCII(sub, "decode"):
		if s[4] != hllEncSparse {
			c.W.Error(resp.ErrPFDebugNotSparse)
			return
		}
		c.W.Bulk(hllDecode(s))
	case equalFoldASCII(sub, "encoding"):
		if s[4] == hllEncDense {
			c.W.Simple("dense")
		} else {
			c.W.Simple("sparse")
		}
	case equalFoldASCII(sub, "todense"):
		if s[4] != hllEncSparse {
			c.W.Int(0)
			return
		}
		if toDense() {
			c.W.Int(1)
		}
	default:
		c.W.Error(fmt.Sprintf(resp.ErrPFDebugUnknown, cString(sub)))
	}
}

// hllDecode lists a sparse HLL's opcodes as PFDEBUG DECODE prints them:
// "z:len" (ZERO), "Z:len" (XZERO), "v:value,len" (VAL), space separated.
func hllDecode(s []byte) []byte {
	var out []byte
	for p := hllHdrSize; p < len(s); {
		b := s[p]
		if len(out) > 0 {
			out = append(out, ' ')
		}
		switch {
		case isZero(b):
			out = append(out, "z:"...)
			out = strconv.AppendInt(out, int64(zeroLen(b)), 10)
			p++
		case isXZero(b):
			out = append(out, "Z:"...)
			out = strconv.AppendInt(out, int64(xzeroLen(s, p)), 10)
			p += 2
		default:
			out = append(out, "v:"...)
			out = strconv.AppendInt(out, int64(valValue(b)), 10)
			out = append(out, ',')
			out = strconv.AppendInt(out, int64(valLen(b)), 10)
			p++
		}
	}
	return out
}

// cmdPfselftest is PFSELFTEST: Redis's self-test of the register code and
// of the estimator, run on this implementation. It replies OK, or a
// TESTFAILED error naming what failed.
func cmdPfselftest(c *Ctx) {
	if msg := hllSelfTest(rand.Uint64()); msg != "" {
		c.W.Error(fmt.Sprintf(resp.ErrPFSelfTestFailed, msg))
		return
	}
	c.W.OK()
}

// hllSelfTest checks, as Redis's PFSELFTEST does, that dense registers
// read back what was written without disturbing their neighbours, and
// that a dense and a sparse HLL fed the same ten million elements agree
// and stay within six standard errors of the truth at every power of ten.
// It returns "" on success.
func hllSelfTest(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dense := make([]byte, hllDenseSize)
	regs := dense[hllHdrSize:]
	var want [hllRegisters]uint8
	for range 1000 {
		for r := range hllRegisters {
			v := uint8(rng.Uint32() & hllRegMax)
			want[r] = v
			denseSet(regs, r, v)
		}
		for r := range hllRegisters {
			if got := denseGet(regs, r); got != want[r] {
				return fmt.Sprintf("Register %d should be %d but is %d", r, want[r], got)
			}
		}
	}

	clear(regs)
	copy(dense, hllMagic)
	sparse := newHLL()
	relErr := 1.04 / math.Sqrt(hllRegisters)
	checkpoint := uint64(1)
	base := rng.Uint64()
	var ele [8]byte
	for j := uint64(1); j <= 10_000_000; j++ {
		v := j ^ base
		for i := range ele {
			ele[i] = byte(v >> (8 * i))
		}
		index, count := hllPatLen(ele[:])
		denseMax(regs, index, count)
		sparse, _ = hllSet(sparse, index, count)
		if j != checkpoint {
			continue
		}
		if j < hllSparseMaxBytes/2 && sparse[4] != hllEncSparse {
			return "sparse encoding not used"
		}
		dc, _ := hllCount(dense)
		sc, _ := hllCount(sparse)
		if dc != sc {
			return "dense/sparse disagree"
		}
		maxErr := uint64(math.Ceil(relErr * 6 * float64(checkpoint)))
		if j == 10 {
			maxErr = 1
		}
		absErr := int64(checkpoint) - int64(dc)
		if absErr < 0 {
			absErr = -absErr
		}
		if uint64(absErr) > maxErr {
			return fmt.Sprintf("Too big error. card:%d abserr:%d", checkpoint, absErr)
		}
		checkpoint *= 10
	}
	return ""
}
