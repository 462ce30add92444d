package difftest

import (
	"strconv"
	"strings"
)

// hllTemplates are the HyperLogLog commands, on the same keys as the
// strings and bits families, so HLLs meet plain strings (WRONGTYPE's HLL
// text), integers, values that bit and range commands corrupted
// (INVALIDOBJ, or a silently accepted update where Redis does not notice),
// and other types. GET compares the stored bytes: the node keeps Redis's
// exact format. Elements come from a small pool, so many PFADDs change
// nothing, and now and then in a burst of hundreds of new ones, so HLLs
// cross the sparse/dense promotion.
func hllTemplates() []template {
	return []template{
		{10, func(g *Gen) Step { return exact(append([]string{"PFADD", g.key()}, g.hllElements()...)...) }},
		{3, func(g *Gen) Step { return exact(append([]string{"PFADD", g.key()}, g.hllBurst()...)...) }},
		{1, func(g *Gen) Step { return exact("PFADD", g.key()) }},
		{6, func(g *Gen) Step { return exact("PFCOUNT", g.key()) }},
		{4, func(g *Gen) Step { return exact(append([]string{"PFCOUNT"}, g.keysN(2+g.rng.IntN(2))...)...) }},
		{4, func(g *Gen) Step { return exact(append([]string{"PFMERGE"}, g.keysN(1+g.rng.IntN(3))...)...) }},
		{5, func(g *Gen) Step { return exact("GET", g.key()) }},
		{1, func(g *Gen) Step { return exact("STRLEN", g.key()) }},
		{2, func(g *Gen) Step {
			return exact("PFDEBUG", g.pick("ENCODING", "DECODE", "TODENSE", "encoding", "what"), g.key())
		}},
		{1, func(g *Gen) Step { return exact("SET", g.key(), g.hllValue()) }},
		{1, func(g *Gen) Step { return exact("SET", g.key(), g.value()) }},
		{1, func(g *Gen) Step { return exact("DEL", g.key()) }},
	}
}

// hllElements is one to five elements from a small pool (binary ones
// included).
func (g *Gen) hllElements() []string {
	out := make([]string, 1+g.rng.IntN(5))
	for i := range out {
		if g.chance(0.1) {
			out[i] = g.value()
		} else {
			out[i] = "m" + strconv.Itoa(g.rng.IntN(300))
		}
	}
	return out
}

// hllBurst is 100 to 1500 elements, mostly new.
func (g *Gen) hllBurst() []string {
	out := make([]string, 100+g.rng.IntN(1400))
	base := g.rng.IntN(1 << 30)
	for i := range out {
		out[i] = "b" + strconv.Itoa(base+i)
	}
	return out
}

// hllValue is a string with an HLL header and a register area that may be
// valid or not: an empty sparse HLL, sparse opcodes that cover too few or
// too many registers or end inside an XZERO, a dense HLL with random
// registers below 51 (51 cannot come from a 64-bit hash) or of the wrong
// length, a bad encoding byte or a cached cardinality marked valid.
func (g *Gen) hllValue() string {
	var hdr strings.Builder
	hdr.WriteString("HYLL")
	enc := g.pick("\x01", "\x01", "\x00", "\x00", "\x02")
	hdr.WriteString(enc)
	hdr.WriteString("\x00\x00\x00")
	if g.chance(0.3) {
		hdr.WriteString("\x05\x00\x00\x00\x00\x00\x00\x00") // cached 5, valid
	} else {
		hdr.WriteString("\x00\x00\x00\x00\x00\x00\x00\x80")
	}
	body := ""
	switch {
	case enc == "\x00":
		n := 12288
		if g.chance(0.2) {
			n -= 1 + g.rng.IntN(3)
		}
		b := make([]byte, n)
		for i := 0; i+2 < n; i += 3 {
			// four registers per three bytes, each below 51
			r := [4]byte{}
			for k := range r {
				if g.chance(0.05) {
					r[k] = byte(g.rng.IntN(51))
				}
			}
			b[i] = r[0] | r[1]<<6
			b[i+1] = r[1]>>2 | r[2]<<4
			b[i+2] = r[2]>>4 | r[3]<<2
		}
		body = string(b)
	default:
		body = g.pick(
			"\x7f\xff",             // empty
			"\x7f\xfe",             // 16383 registers
			"\x7f\xff\x00",         // 16385
			"\x7f",                 // truncated XZERO
			"\x80\x84\x7f\xfd",     // VALs then XZERO: 16384
			"\x40\x00\xfc\x7f\xfc", // VAL 32
			"\x00\x8c\x7f\xfc\x00", // ZERO, VAL 4, XZERO, ZERO
			"",
		)
	}
	return hdr.String() + body
}

// bitfieldTemplates are BITFIELD and BITFIELD_RO on the shared keys:
// widths i1..i64 and u1..u63 (and now and then an invalid one), plain and
// #N offsets mostly small, sometimes around 64 KiB bits (where the node
// pages a growing string) or up to 2^20 bits, and reads (never writes) up
// to the 2^32 limit; values around the limits; all three OVERFLOW modes.
func bitfieldTemplates() []template {
	return []template{
		{10, func(g *Gen) Step { return exact(append([]string{"BITFIELD", g.key()}, g.bitfieldOps(true)...)...) }},
		{4, func(g *Gen) Step {
			return exact(append([]string{"BITFIELD_RO", g.key()}, g.bitfieldOps(g.chance(0.1))...)...)
		}},
		{3, func(g *Gen) Step { return exact("GET", g.key()) }},
		{1, func(g *Gen) Step { return exact("STRLEN", g.key()) }},
		{1, func(g *Gen) Step { return exact("BITFIELD", g.key()) }},
		{1, func(g *Gen) Step {
			return exact("BITFIELD", g.key(), "INCRBY", "u8", "#"+strconv.Itoa(g.rng.IntN(64)), "1")
		}},
	}
}

// bitfieldOps is one to five subcommands (GETs only unless writes).
func (g *Gen) bitfieldOps(writes bool) []string {
	var out []string
	for range 1 + g.rng.IntN(5) {
		r := g.rng.IntN(10)
		switch {
		case !writes || r < 3:
			out = append(out, g.randomCase("GET"), g.bitfieldType(), g.bitfieldOffset(false))
		case r < 5:
			out = append(out, g.randomCase("SET"), g.bitfieldType(), g.bitfieldOffset(true), g.bitfieldValue())
		case r < 8:
			out = append(out, g.randomCase("INCRBY"), g.bitfieldType(), g.bitfieldOffset(true), g.bitfieldValue())
		default:
			out = append(out, "OVERFLOW", g.pick("WRAP", "SAT", "FAIL", "sat", "fail", "bogus"))
		}
	}
	if g.chance(0.03) {
		out = append(out, g.pick("GET", "SET", "FOO"))
	}
	return out
}

func (g *Gen) bitfieldType() string {
	if g.chance(0.03) {
		return g.pick("u64", "i65", "x8", "u0", "I8", "u", "i08", "")
	}
	if g.chance(0.5) {
		return "i" + strconv.Itoa(1+g.rng.IntN(64))
	}
	return "u" + strconv.Itoa(1+g.rng.IntN(63))
}

// bitfieldOffset: writes stay below 2^20 bits (128 KiB, many 8 KiB pages)
// so that GETs of the values stay cheap for both servers.
func (g *Gen) bitfieldOffset(write bool) string {
	switch r := g.rng.IntN(100); {
	case r < 55:
		return strconv.Itoa(g.rng.IntN(300))
	case r < 70:
		return "#" + strconv.Itoa(g.rng.IntN(40))
	case r < 82:
		return strconv.Itoa(65536 - 100 + g.rng.IntN(200))
	case r < 87:
		return strconv.Itoa(g.rng.IntN(1 << 20))
	case r < 92 && !write:
		return g.pick("4294967295", "4294967232", "#67108863", "#2305843009213693953")
	default:
		return g.pick("-1", "4294967296", "#4294967296", "#", "#-1", "x", "01", "")
	}
}

func (g *Gen) bitfieldValue() string {
	switch r := g.rng.IntN(100); {
	case r < 50:
		return strconv.Itoa(g.rng.IntN(41) - 20)
	case r < 80:
		return strconv.FormatInt(int64(g.rng.Uint64())>>g.rng.IntN(64), 10)
	case r < 95:
		return g.pick("9223372036854775807", "-9223372036854775808", "127", "-128", "255", "256", "65535", "-1")
	default:
		return g.pick("x", "1.5", "", "9223372036854775808", " 1")
	}
}
