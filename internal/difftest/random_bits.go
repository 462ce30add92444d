package difftest

import "strconv"

// bitTemplates are the bitmap commands, on the same keys as the strings
// family so that bit and string commands meet the same values (integers,
// embstr, raw, binary). Offsets are mostly small, sometimes just around
// 64 KiB bits (where the node switches a growing string to its paged
// form) and rarely up to 2^26 bits (8 MB strings on both servers); the
// limits 4294967295/4294967296 appear only where they cannot allocate
// (GETBIT, and SETBIT with an invalid bit or offset): the real 512 MB
// case has its own test (node's TestDiffBitsMaxOffset).
func bitTemplates() []template {
	return []template{
		{10, func(g *Gen) Step { return exact("SETBIT", g.key(), g.bitOffset(), g.bitValue()) }},
		{6, func(g *Gen) Step { return exact("GETBIT", g.key(), g.bitOffsetOrLimit()) }},
		{6, func(g *Gen) Step { return exact(append([]string{"BITCOUNT", g.key()}, g.bitRangeArgs(2)...)...) }},
		{6, func(g *Gen) Step {
			return exact(append([]string{"BITPOS", g.key(), g.pick("0", "1", "0", "1", "2", "x")}, g.bitRangeArgs(3)...)...)
		}},
		{5, func(g *Gen) Step {
			op := g.pick("AND", "OR", "XOR", "NOT", "and", "not", "foo")
			n := 1 + g.rng.IntN(3)
			if op == "NOT" || op == "not" {
				n = 1
				if g.chance(0.1) {
					n = 2
				}
			}
			return exact(append([]string{"BITOP", op}, g.keysN(n+1)...)...)
		}},
		{2, func(g *Gen) Step {
			return exact("SETBIT", g.key(), g.pick("4294967295", "0"), g.pick("2", "-1", "x", ""))
		}},
	}
}

// bitOffset is a SETBIT offset: usually small, sometimes near the paged
// threshold, rarely large or invalid.
func (g *Gen) bitOffset() string {
	switch r := g.rng.IntN(100); {
	case r < 70:
		return strconv.Itoa(g.rng.IntN(200))
	case r < 85:
		return strconv.Itoa(65536 - 100 + g.rng.IntN(200))
	case r < 90:
		return strconv.Itoa(g.rng.IntN(1 << 26))
	default:
		return g.pick("-1", "4294967296", "abc", "+1", "01", "1.0", "")
	}
}

func (g *Gen) bitOffsetOrLimit() string {
	if g.chance(0.1) {
		return g.pick("4294967295", "4294967296", "-1")
	}
	return g.bitOffset()
}

func (g *Gen) bitValue() string {
	if g.chance(0.05) {
		return g.pick("2", "-1", "x", "", " 1")
	}
	return g.pick("0", "1")
}

// bitRangeArgs is what follows BITCOUNT's key (max 2 indexes) or BITPOS's
// bit (max 3): nothing, indexes, a unit, and now and then too many.
func (g *Gen) bitRangeArgs(maxIdx int) []string {
	n := g.rng.IntN(maxIdx + 1)
	var args []string
	for range n {
		args = append(args, g.bitIndex())
	}
	if n >= 2 && g.chance(0.5) {
		args = append(args, g.pick("BIT", "BYTE", "bit", "byte", "bits"))
	}
	if g.chance(0.03) {
		args = append(args, "1", "2", "3")
	}
	return args
}

func (g *Gen) bitIndex() string {
	if g.chance(0.5) {
		return strconv.Itoa(g.rng.IntN(80) - 40)
	}
	return g.index()
}
