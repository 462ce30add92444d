package difftest

import (
	"strconv"
	"strings"
)

// listTemplates are the non-blocking list commands on the shared keys, so
// lists meet strings (WRONGTYPE both ways), empty out and get deleted,
// move between keys of one hash tag and rotate onto themselves. Elements
// come mostly from a small pool so LREM, LINSERT and LPOS find matches;
// now and then a burst of hundreds, or big elements, makes lists span
// several packed chunks.
func listTemplates() []template {
	return []template{
		{10, func(g *Gen) Step {
			return exact(append([]string{g.pick("LPUSH", "RPUSH"), g.key()}, g.listElems(1+g.rng.IntN(4))...)...)
		}},
		{2, func(g *Gen) Step {
			return exact(append([]string{g.pick("LPUSH", "RPUSH"), g.key()}, g.listBurst()...)...)
		}},
		{3, func(g *Gen) Step {
			return exact(append([]string{g.pick("LPUSHX", "RPUSHX"), g.key()}, g.listElems(1+g.rng.IntN(2))...)...)
		}},
		{6, func(g *Gen) Step {
			cmd := g.pick("LPOP", "RPOP")
			if g.chance(0.5) {
				return exact(cmd, g.key())
			}
			return exact(cmd, g.key(), g.listCount())
		}},
		{4, func(g *Gen) Step { return exact("LLEN", g.key()) }},
		{6, func(g *Gen) Step { return exact("LRANGE", g.key(), g.listIndex(), g.listIndex()) }},
		{4, func(g *Gen) Step { return exact("LINDEX", g.key(), g.listIndex()) }},
		{3, func(g *Gen) Step { return exact("LSET", g.key(), g.listIndex(), g.listElem()) }},
		{3, func(g *Gen) Step {
			return exact("LINSERT", g.key(), g.pick("BEFORE", "AFTER", "after", "middle"), g.listElem(), g.listElem())
		}},
		{3, func(g *Gen) Step {
			return exact("LREM", g.key(), g.pick("0", "1", "2", "-1", "-2", "100", "-100", "x"), g.listElem())
		}},
		{3, func(g *Gen) Step { return exact("LTRIM", g.key(), g.listIndex(), g.listIndex()) }},
		{4, func(g *Gen) Step { return exact(g.lposArgs()...) }},
		{4, func(g *Gen) Step {
			k := g.keysN(2)
			return exact("LMOVE", k[0], k[1], g.listWhere(), g.listWhere())
		}},
		{2, func(g *Gen) Step {
			k := g.keysN(2)
			return exact("RPOPLPUSH", k[0], k[1])
		}},
		{3, func(g *Gen) Step { return exact(g.lmpopArgs()...) }},
		{2, func(g *Gen) Step {
			return exact(append([]string{g.pick("LPUSH", "RPUSH"), g.key()}, g.sortElems(1+g.rng.IntN(8))...)...)
		}},
		{4, func(g *Gen) Step { return exact(g.sortArgs()...) }},
		{2, func(g *Gen) Step { return exact("TYPE", g.key()) }},
		{1, func(g *Gen) Step { return exact("OBJECT", "ENCODING", g.key()) }},
		{2, func(g *Gen) Step { return exact("SET", g.key(), g.value()) }},
		{2, func(g *Gen) Step { return exact("GET", g.key()) }},
		{1, func(g *Gen) Step { return exact("APPEND", g.key(), g.value()) }},
		{1, func(g *Gen) Step { return exact("DEL", g.key()) }},
		{1, func(g *Gen) Step {
			k := g.keysN(2)
			return exact("COPY", k[0], k[1], "REPLACE")
		}},
		{1, func(g *Gen) Step {
			k := g.keysN(2)
			return exact("RENAME", k[0], k[1])
		}},
	}
}

// listElem is one element: mostly from a small pool, sometimes any value.
func (g *Gen) listElem() string {
	switch r := g.rng.IntN(20); {
	case r < 14:
		return g.pick("a", "b", "c", "", "1", "x y")
	case r < 19:
		return g.value()
	default:
		return strings.Repeat("B", 5000+g.rng.IntN(10000))
	}
}

func (g *Gen) listElems(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.listElem()
	}
	return out
}

// listBurst is 100 to 1000 elements, so lists cross chunk boundaries.
func (g *Gen) listBurst() []string {
	out := make([]string, 100+g.rng.IntN(900))
	for i := range out {
		if g.chance(0.2) {
			out[i] = g.pick("a", "b", "c")
		} else {
			out[i] = "e" + strconv.Itoa(i)
		}
	}
	return out
}

func (g *Gen) listIndex() string {
	if g.chance(0.1) {
		return g.index()
	}
	return strconv.Itoa(g.rng.IntN(21) - 10)
}

func (g *Gen) listCount() string {
	return g.pick("0", "1", "2", "3", "10", "1000", "-1", "x", "9223372036854775807")
}

func (g *Gen) listWhere() string {
	if g.chance(0.03) {
		return "UP"
	}
	return g.pick("LEFT", "RIGHT", "left", "Right")
}

func (g *Gen) lposArgs() []string {
	args := []string{"LPOS", g.key(), g.listElem()}
	if g.chance(0.5) {
		args = append(args, "RANK", g.pick("1", "2", "-1", "-2", "3", "0", "x", "-9223372036854775808"))
	}
	if g.chance(0.4) {
		args = append(args, "COUNT", g.pick("0", "1", "2", "5", "-1"))
	}
	if g.chance(0.3) {
		args = append(args, "MAXLEN", g.pick("0", "1", "3", "10", "-1"))
	}
	if g.chance(0.05) {
		args = append(args, g.pick("RANK", "FOO"))
	}
	return args
}

func (g *Gen) lmpopArgs() []string {
	n := 1 + g.rng.IntN(3)
	keys := g.keysN(n)
	num := strconv.Itoa(n)
	if g.chance(0.05) {
		num = g.pick("0", "-1", "x", "5")
	}
	args := append([]string{"LMPOP", num}, keys...)
	args = append(args, g.listWhere())
	if g.chance(0.5) {
		args = append(args, "COUNT", g.pick("1", "2", "5", "100", "0", "-1"))
	}
	return args
}

// sortElems are elements SORT reads as numbers in every way C's strtod
// does (signs, points, exponents, hexadecimal, infinities, leading space,
// the empty string) or fails to (letters, NaN, trailing space), ties
// between different spellings of one number, and NUL bytes, which end
// strtod's and ALPHA's view of an element. Nothing out of a double's
// range: Redis reads those with a stale errno.
func (g *Gen) sortElems(n int) []string {
	out := make([]string, n)
	for i := range out {
		switch r := g.rng.IntN(10); {
		case r < 5:
			out[i] = strconv.Itoa(g.rng.IntN(41) - 20)
		case r < 9:
			out[i] = g.pick("1.5", "-0.25", "1e3", "+7", " 3", "0x10", "0X1p2", ".5", "5.", "-0", "0", "",
				"007", "inf", "-Infinity", "10", "1e1", "2\x00z", "a", "B", "a\x00b", "a\x00a", "nan", "3 ", "1e", "0x")
		default:
			out[i] = g.listElem()
		}
	}
	return out
}

// sortArgs is a SORT or SORT_RO with options in any order: the ones a
// cluster node serves (ASC, DESC, ALPHA, LIMIT, BY constant, STORE) and,
// now and then, the ones it refuses (BY pattern, GET) or malformed ones.
func (g *Gen) sortArgs() []string {
	keys := g.keysN(2)
	cmd := "SORT"
	if g.chance(0.2) {
		cmd = "SORT_RO"
	}
	args := []string{cmd, keys[0]}
	for range g.rng.IntN(4) {
		switch r := g.rng.IntN(20); {
		case r < 4:
			args = append(args, g.pick("ASC", "DESC", "desc"))
		case r < 8:
			args = append(args, g.pick("ALPHA", "alpha"))
		case r < 11:
			args = append(args, "LIMIT", g.pick("0", "1", "2", "-1", "5", "x"), g.pick("0", "1", "3", "-1", "100", "9223372036854775807"))
		case r < 13:
			args = append(args, "BY", g.pick("nosort", "w_*", "const"))
		case r < 16:
			args = append(args, "STORE", keys[1])
		case r < 17:
			args = append(args, "GET", g.pick("#", "w_*"))
		case r < 18:
			args = append(args, g.pick("LIMIT", "STORE", "BY", "FOO"))
		default:
			args = append(args, "ALPHA", "DESC")
		}
	}
	return args
}
