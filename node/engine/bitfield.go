package engine

import (
	"encoding/binary"
	"math"

	"github.com/shardgate/shardgate/internal/resp"
)

// BITFIELD's pieces that do not touch the keyspace: the argument parser,
// field access in a 9-byte window, and Redis's overflow arithmetic. The
// command itself is in bitfield_cmds.go.
//
// A field of up to 64 bits starting at any bit spans at most 9 bytes, so
// every operation reads those 9 bytes (zeros past the end of the string,
// which is what Redis's GET sees), works on them in registers and writes
// back only the bytes the field covers. That keeps BITFIELD independent of
// how the string is stored (plain bytes or a paged Bitmap: both serve
// Entry.ReadStr and Entry.WriteStr) and allocation-free.

// bfOpcode is a BITFIELD subcommand.
type bfOpcode uint8

const (
	bfGet bfOpcode = iota
	bfSet
	bfIncrby
)

// bfOverflow is an OVERFLOW mode.
type bfOverflow uint8

const (
	bfWrap bfOverflow = iota
	bfSat
	bfFail
)

// bfOp is one parsed subcommand, with the OVERFLOW mode in force for it.
type bfOp struct {
	off    int64 // bit offset
	val    int64 // SET value or INCRBY increment
	op     bfOpcode
	ow     bfOverflow
	bits   uint8
	signed bool
}

// bfParse is the result of parsing a BITFIELD argument list.
type bfParse struct {
	ops []bfOp
	// writes is true when any SET or INCRBY is present; highest is then
	// the last bit any of them touches.
	writes  bool
	highest int64
}

// parseBitfield parses the subcommands of BITFIELD key ... (args[2:]) as
// Redis does, in order, stopping at the first bad one; ops are appended
// to dst. It returns the error reply text, or "" on success.
func parseBitfield(args [][]byte, dst []bfOp) (bfParse, string) {
	p := bfParse{ops: dst}
	ow := bfWrap
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		sub := cString(args[j])
		var op bfOpcode
		switch {
		case equalFoldASCII(sub, "get") && rem >= 2:
			op = bfGet
		case equalFoldASCII(sub, "set") && rem >= 3:
			op = bfSet
		case equalFoldASCII(sub, "incrby") && rem >= 3:
			op = bfIncrby
		case equalFoldASCII(sub, "overflow") && rem >= 1:
			j++
			switch name := cString(args[j]); {
			case equalFoldASCII(name, "wrap"):
				ow = bfWrap
			case equalFoldASCII(name, "sat"):
				ow = bfSat
			case equalFoldASCII(name, "fail"):
				ow = bfFail
			default:
				return p, resp.ErrBitfieldOverflow
			}
			continue
		default:
			return p, resp.ErrSyntax
		}
		signed, bits, ok := parseBitfieldType(args[j+1])
		if !ok {
			return p, resp.ErrBitfieldType
		}
		off, ok := parseBitfieldOffset(args[j+2], bits)
		if !ok {
			return p, resp.ErrBitOffset
		}
		var val int64
		if op != bfGet {
			p.writes = true
			p.highest = max(p.highest, off+int64(bits)-1)
			if val, ok = resp.ParseInt(args[j+3]); !ok {
				return p, resp.ErrNotInteger
			}
			j++
		}
		p.ops = append(p.ops, bfOp{off: off, val: val, op: op, ow: ow, bits: bits, signed: signed})
		j += 2
	}
	return p, ""
}

// parseBitfieldType parses i1..i64 or u1..u63 (the letter is case
// sensitive, and the number ends at a NUL byte as in Redis's C string).
func parseBitfieldType(arg []byte) (signed bool, bits uint8, ok bool) {
	if len(arg) == 0 {
		return false, 0, false
	}
	switch arg[0] {
	case 'i':
		signed = true
	case 'u':
	default:
		return false, 0, false
	}
	n, ok := resp.ParseInt(cString(arg[1:]))
	if !ok || n < 1 || signed && n > 64 || !signed && n > 63 {
		return false, 0, false
	}
	return signed, uint8(n), true
}

// parseBitfieldOffset parses a bit offset, plain or "#N" (N fields of the
// type's width). Like Redis it multiplies in 64-bit arithmetic that wraps,
// then requires 0 <= offset < 2^32.
func parseBitfieldOffset(arg []byte, bits uint8) (int64, bool) {
	hash := len(arg) > 1 && arg[0] == '#'
	if hash {
		arg = arg[1:]
	}
	n, ok := resp.ParseInt(arg)
	if !ok {
		return 0, false
	}
	if hash {
		n *= int64(bits)
	}
	if n < 0 || n>>3 >= maxStringLen {
		return 0, false
	}
	return n, true
}

// bfWindow is the 9 bytes around a field; shift is the field's first bit
// within the first byte (bit 0 is the most significant, as in Redis).
type bfWindow [9]byte

// get returns the field's bits as an unsigned number.
func (w *bfWindow) get(shift, bits uint) uint64 {
	v := binary.BigEndian.Uint64(w[:8])<<shift | uint64(w[8])>>(8-shift)
	return v >> (64 - bits)
}

// getSigned returns the field as a two's complement number.
func (w *bfWindow) getSigned(shift, bits uint) int64 {
	return int64(w.get(shift, bits)<<(64-bits)) >> (64 - bits)
}

// set stores the low bits of v in the field.
func (w *bfWindow) set(shift, bits uint, v uint64) {
	m := ^uint64(0) << (64 - bits) // the field, aligned to the top
	v <<= 64 - bits
	hi := binary.BigEndian.Uint64(w[:8])
	binary.BigEndian.PutUint64(w[:8], hi&^(m>>shift)|v>>shift)
	// The bits shifted out of the first 8 bytes land in the ninth.
	lm := byte(m << (64 - shift) >> 56)
	w[8] = w[8]&^lm | byte(v<<(64-shift)>>56)&lm
}

// span is the number of bytes a field covers.
func bfSpan(shift, bits uint) int { return int(shift+bits+7) / 8 }

// signedOverflow is Redis's checkSignedBitfieldOverflow: whether value +
// incr leaves the range of a bits-wide signed field (1 above, -1 below,
// 0 inside), and the value to store instead under WRAP or SAT.
func signedOverflow(value, incr int64, bits uint, ow bfOverflow) (int, int64) {
	maxv := int64(math.MaxInt64)
	if bits != 64 {
		maxv = 1<<(bits-1) - 1
	}
	minv := -maxv - 1
	// maxincr and minincr may wrap; they are used only where they do not.
	maxincr := int64(uint64(maxv) - uint64(value))
	minincr := minv - value
	dir := 0
	switch {
	case value > maxv || bits != 64 && incr > maxincr || value >= 0 && incr > 0 && incr > maxincr:
		dir = 1
	case value < minv || bits != 64 && incr < minincr || value < 0 && incr < 0 && incr < minincr:
		dir = -1
	default:
		return 0, 0
	}
	switch ow {
	case bfWrap:
		c := uint64(value) + uint64(incr)
		if bits < 64 {
			mask := ^uint64(0) << bits
			if c&(1<<(bits-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return 1, int64(c)
	case bfSat:
		if dir > 0 {
			return 1, maxv
		}
		return -1, minv
	}
	return dir, 0
}

// unsignedOverflow is Redis's checkUnsignedBitfieldOverflow (bits < 64).
func unsignedOverflow(value uint64, incr int64, bits uint, ow bfOverflow) (int, uint64) {
	maxv := uint64(1)<<bits - 1
	maxincr := int64(maxv - value)
	minincr := -int64(value)
	dir := 0
	switch {
	case value > maxv || incr > 0 && incr > maxincr:
		dir = 1
	case incr < 0 && incr < minincr:
		dir = -1
	default:
		return 0, 0
	}
	switch ow {
	case bfWrap:
		return 1, (value + uint64(incr)) &^ (^uint64(0) << bits)
	case bfSat:
		if dir > 0 {
			return 1, maxv
		}
		return -1, 0
	}
	return dir, 0
}
