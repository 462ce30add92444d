package difftest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check says how two replies to a generated command are compared. Every
// check falls back to exact comparison when the replies are not of the
// shape it expects (an error, QUEUED inside MULTI, ...).
type Check uint8

const (
	// CheckExact: identical replies.
	CheckExact Check = iota
	// CheckUnordered: the top-level collection compared as a multiset.
	CheckUnordered
	// CheckApprox: non-negative integers may differ by Step.Tolerance
	// (TTLs measured at slightly different moments); negative ones are
	// codes (-1, -2) and must match.
	CheckApprox
	// CheckShape: same kind only (INFO, TIME, CLIENT LIST, MEMORY USAGE:
	// values that depend on the process); errors must match exactly.
	CheckShape
	// CheckHello: exact except the connection id.
	CheckHello
	// CheckScan: one SCAN call; cursors differ by design, so only the
	// shape and that every key returned belongs to the key space.
	CheckScan
	// CheckRandomKey: both null, or both a key of the key space.
	CheckRandomKey
	// CheckFullScan: the runner iterates SCAN to cursor 0 on each side
	// (Args[1] is the starting cursor) and compares the sets of keys.
	CheckFullScan
	// CheckMemory: MEMORY USAGE. Redis looks the key up without expiring
	// it, so a logically expired key still has a size until active expiry
	// reclaims it, at a moment neither side controls: an integer on one
	// side and a null on the other is accepted; errors must match.
	CheckMemory
	// CheckStream: exact except the idle, seen and delivery times of
	// stream replies, which may differ by Step.Tolerance (random_stream.go).
	CheckStream
)

// Step is one generated command.
type Step struct {
	Conn      int // which connection pair (0 or 1), for WATCH races
	Args      []string
	Check     Check
	Tolerance int64 // for CheckApprox
}

// template makes one command of a family.
type template struct {
	weight int
	gen    func(g *Gen) Step
}

// family is a group of related commands that can be enabled as a whole
// while other helpers are still implementing the rest.
type family struct {
	name  string
	tmpls []template
}

// Gen produces a deterministic command sequence from a seed over a small
// key space, mixing valid and invalid uses.
type Gen struct {
	rng   *rand.Rand
	keys  []string
	base  int64 // unix seconds at creation: absolute expiry times derive from it
	tmpls []template
	total int
	multi [2]bool // the generator's view of each connection's MULTI state
	// lingering is the key a SET with an absolute expiry in the past has
	// just written (see Next); pastTime records that absSeconds or
	// absMillis returned such a time.
	lingering string
	pastTime  bool
	relSeq    int64 // relative expiry times given (relative)
	pending   *Step
	// follow, set by a template, is sent right after the template's
	// command on the same connection.
	follow *Step
	stream streamGen // the streams family's state
	// excluded are command names ("GETDEL") and container|subcommand
	// names ("CLIENT|KILL"), upper case, that Next never returns.
	excluded map[string]bool
}

// Keys is the key space of the generator: three hash tags so multi-key
// commands usually share a slot, and two untagged keys in other slots.
var genKeys = []string{"{a}1", "{a}2", "{a}3", "{b}1", "{b}2", "{b}3", "k1", "k2"}

// Families lists the command families NewGen accepts.
func Families() []string {
	var names []string
	for _, f := range allFamilies() {
		names = append(names, f.name)
	}
	return names
}

// NewGen returns a generator over the named families (nil or "all": every
// family). An entry "-NAME" excludes a command ("-GETDEL"), a subcommand
// ("-CLIENT|KILL") or a container command without arguments ("-COMMAND|")
// instead, so that a family can run while some of its
// commands are still known to differ. base is the clock reading absolute
// expiry times derive from.
func NewGen(seed uint64, families []string, base time.Time) (*Gen, error) {
	g := &Gen{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		keys:     genKeys,
		base:     base.Unix(),
		excluded: map[string]bool{},
	}
	all := allFamilies()
	var names []string
	for _, f := range families {
		if cmd, ok := strings.CutPrefix(f, "-"); ok {
			g.excluded[strings.ToUpper(cmd)] = true
		} else if f != "" {
			names = append(names, f)
		}
	}
	if len(names) == 0 || slices.Contains(names, "all") {
		names = Families()
	}
	for _, name := range names {
		i := slices.IndexFunc(all, func(f family) bool { return f.name == name })
		if i < 0 {
			return nil, fmt.Errorf("difftest: unknown command family %q (have %s)", name, strings.Join(Families(), ","))
		}
		g.tmpls = append(g.tmpls, all[i].tmpls...)
	}
	for _, t := range g.tmpls {
		g.total += t.weight
	}
	return g, nil
}

// InKeySpace reports whether key is one the generator uses.
func InKeySpace(key string) bool { return slices.Contains(genKeys, key) }

// ErrAllExcluded is returned by Next when exclusions leave nothing to send.
var ErrAllExcluded = errors.New("difftest: every command of the enabled families is excluded")

// Next returns the next command.
//
// A SET with EXAT/PXAT in the past stores a key that is already expired;
// Redis 7.0 keeps it until something reads it or active expiry finds it,
// and DBSIZE and MEMORY USAGE count it meanwhile, so replies would depend
// on when each server's expiry cycle ran. Next therefore follows such a
// SET with an EXISTS of the key, which removes it on both sides at once.
func (g *Gen) Next() (Step, error) {
	if st := g.pending; st != nil {
		g.pending = nil
		return *st, nil
	}
	conn := 0
	if g.chance(0.15) {
		conn = 1
	}
	var st Step
	switch {
	case g.multi[conn] && g.chance(0.12):
		st = Step{Args: []string{"EXEC"}}
	case g.multi[conn] && g.chance(0.03):
		st = Step{Args: []string{"DISCARD"}}
	default:
		st = g.fromTemplates()
		for tries := 0; g.isExcluded(st.Args); tries++ {
			if tries == maxExcludedTries {
				return Step{}, ErrAllExcluded
			}
			st = g.fromTemplates()
		}
		if g.multi[conn] && st.Check == CheckFullScan {
			// A full scan is many commands; inside MULTI use one SCAN.
			st.Check = CheckScan
		}
	}
	st.Conn = conn
	if g.follow != nil {
		f := *g.follow
		f.Conn = conn
		g.pending, g.follow = &f, nil
	}
	if g.lingering != "" {
		g.pending = &Step{Conn: conn, Args: []string{"EXISTS", g.lingering}}
		g.lingering = ""
	}
	switch strings.ToUpper(st.Args[0]) {
	case "MULTI":
		g.multi[conn] = true
	case "EXEC", "DISCARD", "RESET":
		g.multi[conn] = false
	}
	return st, nil
}

// maxExcludedTries bounds the search for a command not excluded.
const maxExcludedTries = 100000

func (g *Gen) isExcluded(args []string) bool {
	if len(g.excluded) == 0 {
		return false
	}
	name := strings.ToUpper(args[0])
	if g.excluded[name] {
		return true
	}
	if len(args) == 1 {
		return g.excluded[name+"|"]
	}
	return g.excluded[name+"|"+strings.ToUpper(args[1])]
}

func (g *Gen) fromTemplates() Step {
	g.lingering, g.follow = "", nil
	n := g.rng.IntN(g.total)
	for _, t := range g.tmpls {
		if n < t.weight {
			st := t.gen(g)
			if g.chance(0.05) {
				st.Args[0] = g.randomCase(st.Args[0])
			}
			return st
		}
		n -= t.weight
	}
	panic("unreachable")
}

// Random helpers.

func (g *Gen) chance(p float64) bool { return g.rng.Float64() < p }

func (g *Gen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

func (g *Gen) key() string { return g.keys[g.rng.IntN(len(g.keys))] }

// keysN returns n keys, usually of one hash tag so the command is legal
// in cluster mode, sometimes from anywhere (CROSSSLOT), repeats allowed.
func (g *Gen) keysN(n int) []string {
	if g.chance(0.2) {
		out := make([]string, n)
		for i := range out {
			out[i] = g.key()
		}
		return out
	}
	tag := g.pick("{a}", "{b}")
	out := make([]string, n)
	for i := range out {
		out[i] = tag + strconv.Itoa(1+g.rng.IntN(3))
	}
	return out
}

// randomCase changes the letter case of a command name: names are
// case-insensitive but some error texts echo them.
func (g *Gen) randomCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		if g.chance(0.5) {
			if c >= 'a' && c <= 'z' {
				b[i] = c - 32
			} else if c >= 'A' && c <= 'Z' {
				b[i] = c + 32
			}
		}
	}
	return string(b)
}

// value returns a string value: integers, floats, empty, binary, words,
// and long strings around the embstr/raw encoding boundary.
func (g *Gen) value() string {
	switch r := g.rng.IntN(100); {
	case r < 30:
		return strconv.Itoa(g.rng.IntN(111) - 10)
	case r < 38:
		return g.pick("9223372036854775807", "-9223372036854775808", "9223372036854775808",
			"-0", "007", "+1", " 1", "1 ", "1.0", "0")
	case r < 46:
		return g.pick("1.5", "-0.25", "3e2", "1e-3", "inf", "-inf", "nan", "0x1A",
			"1.7976931348623157e308", "2.5e308", "0.1", ".5", "5.")
	case r < 54:
		return ""
	case r < 80:
		n := 1 + g.rng.IntN(10)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + g.rng.IntN(26))
		}
		return string(b)
	case r < 86:
		b := make([]byte, 1+g.rng.IntN(20))
		for i := range b {
			b[i] = byte(g.rng.IntN(256))
		}
		return string(b)
	default:
		n := g.pick("20", "39", "44", "45", "100", "1000", "5000")
		size, _ := strconv.Atoi(n)
		return strings.Repeat(string(rune('a'+g.rng.IntN(26))), size)
	}
}

// valueNoNUL is value with NUL bytes replaced.
func (g *Gen) valueNoNUL() string { return strings.ReplaceAll(g.value(), "\x00", "0") }

// Expiry arguments. Relative times are long enough never to expire during
// a run, and no two are equal: EXPIRE k 86400 and then PEXPIRE k 86400000
// GT compare two times that differ only by how long passed between the
// commands, which a millisecond boundary decides differently on two
// servers. Each relative time is 2 s past the one before (wrapping after
// 500, when the two commands are hundreds apart); the millisecond ones
// are 1 s off the second ones. Absolute times stay at least 1000 s away
// from any relative one, so GT/LT comparisons never depend on when a
// command ran.
func (g *Gen) relSeconds() string { return strconv.FormatInt(g.relative(), 10) }
func (g *Gen) relMillis() string  { return strconv.FormatInt((g.relative()+1)*1000, 10) }
func (g *Gen) relative() int64 {
	g.relSeq++
	return []int64{1000, 5000, 86400, 100000}[g.rng.IntN(4)] + 2*(g.relSeq%500)
}
func (g *Gen) absSeconds() string {
	g.pastTime = g.chance(0.15)
	if g.pastTime {
		return g.pick("1", "100") // in the past: the key goes at once
	}
	return strconv.FormatInt(g.base+[]int64{3000, 7000, 50000, 200000}[g.rng.IntN(4)], 10)
}
func (g *Gen) absMillis() string {
	g.pastTime = g.chance(0.15)
	if g.pastTime {
		return g.pick("1", "100000")
	}
	return strconv.FormatInt((g.base+[]int64{3000, 7000, 50000, 200000}[g.rng.IntN(4)])*1000+int64(g.rng.IntN(1000)), 10)
}
func (g *Gen) badNumber() string {
	return g.pick("0", "-1", "abc", "", "1.5", "9223372036854775807", "-9223372036854775808", "9223372036854775808")
}

func (g *Gen) integer() string {
	if g.chance(0.2) {
		return g.badNumber()
	}
	return strconv.Itoa(g.rng.IntN(201) - 100)
}

func (g *Gen) index() string {
	return g.pick("-100", "-10", "-2", "-1", "0", "1", "2", "5", "100", "abc",
		"9223372036854775807", "-9223372036854775808")
}

func (g *Gen) pattern() string {
	return g.pick("*", "{a}*", "{b}?", "k?", "[k]*", "*1", "nomatch*", "\\{a\\}*", "*[12]", "{a}[^1]", "")
}

func exact(args ...string) Step { return Step{Args: args} }

func withCheck(c Check, args ...string) Step { return Step{Args: args, Check: c} }

func approx(tol int64, args ...string) Step {
	return Step{Args: args, Check: CheckApprox, Tolerance: tol}
}

// allFamilies is the generator's command set.
func allFamilies() []family {
	return []family{
		{"strings", stringTemplates()},
		{"counters", counterTemplates()},
		{"keyspace", keyspaceTemplates()},
		{"expire", expireTemplates()},
		{"scan", scanTemplates()},
		{"tx", txTemplates()},
		{"conn", connTemplates()},
		{"server", serverTemplates()},
		{"arity", arityTemplates()},
		{"types", typeTemplates()},
		{"bits", bitTemplates()},
		{"hll", hllTemplates()},
		{"bitfield", bitfieldTemplates()},
		{"lists", listTemplates()},
		{"streams", streamTemplates()},
	}
}

// typeTemplates write the other Redis types, so that string commands meet
// WRONGTYPE and TYPE, SCAN TYPE and OBJECT ENCODING see every type. These
// commands belong to later issues: the family is for when they exist.
func typeTemplates() []template {
	return []template{
		{2, func(g *Gen) Step { return exact("LPUSH", g.key(), g.value(), g.value()) }},
		{2, func(g *Gen) Step { return exact("SADD", g.key(), g.value()) }},
		{2, func(g *Gen) Step { return exact("HSET", g.key(), g.value(), g.value()) }},
		{2, func(g *Gen) Step { return exact("ZADD", g.key(), g.pick("1", "2.5", "-3"), g.value()) }},
		// Explicit IDs: "*" would make the ID depend on the clock.
		{1, func(g *Gen) Step { return exact("XADD", g.key(), g.pick("1-1", "2-0", "5-3"), "f", g.value()) }},
	}
}

func stringTemplates() []template {
	return []template{
		{12, func(g *Gen) Step { return exact("GET", g.key()) }},
		{14, func(g *Gen) Step { return exact(g.setArgs()...) }},
		{2, func(g *Gen) Step { return exact("SETNX", g.key(), g.value()) }},
		{2, func(g *Gen) Step {
			if g.chance(0.3) {
				return exact("SETEX", g.key(), g.badNumber(), g.value())
			}
			return exact("SETEX", g.key(), g.relSeconds(), g.value())
		}},
		{2, func(g *Gen) Step {
			if g.chance(0.3) {
				return exact("PSETEX", g.key(), g.badNumber(), g.value())
			}
			return exact("PSETEX", g.key(), g.relMillis(), g.value())
		}},
		{2, func(g *Gen) Step { return exact("GETSET", g.key(), g.value()) }},
		{3, func(g *Gen) Step { return exact("GETDEL", g.key()) }},
		{5, func(g *Gen) Step { return exact(g.getexArgs()...) }},
		{5, func(g *Gen) Step { return exact(append([]string{"MGET"}, g.keysN(1+g.rng.IntN(4))...)...) }},
		{5, func(g *Gen) Step { return exact(g.msetArgs("MSET")...) }},
		{3, func(g *Gen) Step { return exact(g.msetArgs("MSETNX")...) }},
		{4, func(g *Gen) Step { return exact("APPEND", g.key(), g.value()) }},
		{3, func(g *Gen) Step { return exact("STRLEN", g.key()) }},
		{4, func(g *Gen) Step { return exact("GETRANGE", g.key(), g.index(), g.index()) }},
		{4, func(g *Gen) Step {
			off := g.pick("0", "1", "3", "5", "20", "100", "1000", "-1", "abc", "536870912", "4294967296")
			return exact("SETRANGE", g.key(), off, g.value())
		}},
	}
}

func (g *Gen) setArgs() []string {
	args := []string{"SET", g.key(), g.value()}
	var opts []string
	g.pastTime = false
	if g.chance(0.35) {
		switch g.rng.IntN(6) {
		case 0:
			opts = append(opts, "EX", g.relSeconds())
		case 1:
			opts = append(opts, "PX", g.relMillis())
		case 2:
			opts = append(opts, "EXAT", g.absSeconds())
		case 3:
			opts = append(opts, "PXAT", g.absMillis())
		case 4:
			opts = append(opts, "KEEPTTL")
		case 5:
			opts = append(opts, g.pick("EX", "PX", "EXAT", "PXAT"), g.badNumber())
		}
	}
	if g.chance(0.25) {
		opts = append(opts, g.pick("NX", "XX"))
	}
	if g.chance(0.2) {
		opts = append(opts, "GET")
	}
	if g.chance(0.05) {
		opts = append(opts, g.pick("NX", "XX", "KEEPTTL", "EX", "FOO", "GET"))
	}
	g.rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	if g.pastTime {
		g.lingering = args[1]
	}
	// Shuffling may separate an option from its argument: that is a
	// syntax error on both sides, which is fine to test as well.
	return append(args, opts...)
}

func (g *Gen) getexArgs() []string {
	args := []string{"GETEX", g.key()}
	switch g.rng.IntN(8) {
	case 0:
		args = append(args, "EX", g.relSeconds())
	case 1:
		args = append(args, "PX", g.relMillis())
	case 2:
		args = append(args, "EXAT", g.absSeconds())
	case 3:
		args = append(args, "PXAT", g.absMillis())
	case 4:
		args = append(args, "PERSIST")
	case 5:
		args = append(args, g.pick("EX", "PX", "EXAT", "PXAT"), g.badNumber())
	case 6:
		args = append(args, g.pick("PERSIST", "EX", "KEEPTTL", "FOO"), g.pick("PERSIST", "EX", "10"))
	}
	return args
}

func (g *Gen) msetArgs(cmd string) []string {
	keys := g.keysN(1 + g.rng.IntN(3))
	args := []string{cmd}
	for _, k := range keys {
		args = append(args, k, g.value())
	}
	if g.chance(0.05) {
		args = args[:len(args)-1] // odd: wrong arity
	}
	return args
}

func counterTemplates() []template {
	return []template{
		{5, func(g *Gen) Step { return exact("INCR", g.key()) }},
		{4, func(g *Gen) Step { return exact("DECR", g.key()) }},
		{4, func(g *Gen) Step { return exact("INCRBY", g.key(), g.integer()) }},
		{4, func(g *Gen) Step { return exact("DECRBY", g.key(), g.integer()) }},
		{4, func(g *Gen) Step {
			inc := g.pick("1", "-1", "0.1", "1.5", "-2.25", "3e2", "1e-5", "5.0e3", "10.5", "abc", "inf", "", "1e309")
			return exact("INCRBYFLOAT", g.key(), inc)
		}},
	}
}

func keyspaceTemplates() []template {
	return []template{
		{5, func(g *Gen) Step { return exact(append([]string{"DEL"}, g.keysN(1+g.rng.IntN(3))...)...) }},
		{2, func(g *Gen) Step { return exact(append([]string{"UNLINK"}, g.keysN(1+g.rng.IntN(3))...)...) }},
		{5, func(g *Gen) Step { return exact(append([]string{"EXISTS"}, g.keysN(1+g.rng.IntN(4))...)...) }},
		{4, func(g *Gen) Step { return exact("TYPE", g.key()) }},
		{3, func(g *Gen) Step { k := g.keysN(2); return exact("RENAME", k[0], k[1]) }},
		{2, func(g *Gen) Step { k := g.keysN(2); return exact("RENAMENX", k[0], k[1]) }},
		{3, func(g *Gen) Step {
			k := g.keysN(2)
			args := []string{"COPY", k[0], k[1]}
			if g.chance(0.2) {
				args = append(args, "DB", g.pick("0", "1", "abc"))
			}
			if g.chance(0.4) {
				args = append(args, "REPLACE")
			}
			if g.chance(0.05) {
				args = append(args, "FOO")
			}
			return exact(args...)
		}},
		{2, func(g *Gen) Step { return exact(append([]string{"TOUCH"}, g.keysN(1+g.rng.IntN(3))...)...) }},
		{3, func(g *Gen) Step { return exact("PERSIST", g.key()) }},
		{3, func(g *Gen) Step { return withCheck(CheckUnordered, "KEYS", g.pattern()) }},
		{2, func(g *Gen) Step { return withCheck(CheckRandomKey, "RANDOMKEY") }},
		{2, func(g *Gen) Step { return exact("DBSIZE") }},
	}
}

func expireTemplates() []template {
	relOpt := func(g *Gen, args []string) []string {
		if g.chance(0.3) {
			args = append(args, g.pick("NX", "XX"))
		}
		if g.chance(0.05) {
			args = append(args, g.pick("GT", "LT", "NX", "XX", "FOO"), g.pick("GT", "LT", "NX", "XX"))
		}
		return args
	}
	absOpt := func(g *Gen, args []string) []string {
		if g.chance(0.5) {
			args = append(args, g.pick("NX", "XX", "GT", "LT"))
		}
		if g.chance(0.05) {
			args = append(args, g.pick("GT", "LT", "NX", "XX"))
		}
		return args
	}
	return []template{
		{4, func(g *Gen) Step {
			v := g.relSeconds()
			if g.chance(0.2) {
				v = g.badNumber()
			}
			return exact(relOpt(g, []string{"EXPIRE", g.key(), v})...)
		}},
		{3, func(g *Gen) Step {
			v := g.relMillis()
			if g.chance(0.2) {
				v = g.badNumber()
			}
			return exact(relOpt(g, []string{"PEXPIRE", g.key(), v})...)
		}},
		{3, func(g *Gen) Step {
			v := g.absSeconds()
			if g.chance(0.1) {
				v = g.badNumber()
			}
			return exact(absOpt(g, []string{"EXPIREAT", g.key(), v})...)
		}},
		{3, func(g *Gen) Step {
			v := g.absMillis()
			if g.chance(0.1) {
				v = g.badNumber()
			}
			return exact(absOpt(g, []string{"PEXPIREAT", g.key(), v})...)
		}},
		{4, func(g *Gen) Step { return approx(2, "TTL", g.key()) }},
		{4, func(g *Gen) Step { return approx(2000, "PTTL", g.key()) }},
		{2, func(g *Gen) Step { return approx(2, "EXPIRETIME", g.key()) }},
		{2, func(g *Gen) Step { return approx(2000, "PEXPIRETIME", g.key()) }},
	}
}

func (g *Gen) scanArgs(cursor string) []string {
	args := []string{"SCAN", cursor}
	if g.chance(0.5) {
		args = append(args, "MATCH", g.pattern())
	}
	if g.chance(0.4) {
		args = append(args, "COUNT", g.pick("1", "2", "3", "10", "1000"))
	}
	if g.chance(0.3) {
		args = append(args, "TYPE", g.pick("string", "list", "hash", "set", "zset", "stream", "foo"))
	}
	g.shuffleOptionPairs(args[2:])
	return args
}

// shuffleOptionPairs reorders NAME value pairs in place.
func (g *Gen) shuffleOptionPairs(opts []string) {
	n := len(opts) / 2
	g.rng.Shuffle(n, func(i, j int) {
		opts[2*i], opts[2*j] = opts[2*j], opts[2*i]
		opts[2*i+1], opts[2*j+1] = opts[2*j+1], opts[2*i+1]
	})
}

func scanTemplates() []template {
	return []template{
		{4, func(g *Gen) Step { return withCheck(CheckFullScan, g.scanArgs("0")...) }},
		{2, func(g *Gen) Step { return withCheck(CheckScan, g.scanArgs(g.pick("0", "1", "7", "12345"))...) }},
		{2, func(g *Gen) Step {
			bad := g.pick("abc", "-1", "18446744073709551616", "1.5", "")
			args := g.scanArgs(bad)
			if g.chance(0.5) {
				args = []string{"SCAN", "0", g.pick("COUNT", "MATCH", "TYPE", "FOO"), g.pick("0", "-1", "abc")}
				if g.chance(0.5) {
					args = args[:3]
				}
			}
			// Redis 7.0 parses the cursor with strtoul: "" is 0 and "-1"
			// wraps, so some of these are pages, not errors.
			return withCheck(CheckScan, args...)
		}},
	}
}

func txTemplates() []template {
	return []template{
		{6, func(g *Gen) Step { return exact("MULTI") }},
		{3, func(g *Gen) Step { return exact(append([]string{"WATCH"}, g.keysN(1+g.rng.IntN(2))...)...) }},
		{1, func(g *Gen) Step { return exact("UNWATCH") }},
		{1, func(g *Gen) Step { return exact("EXEC") }},
		{1, func(g *Gen) Step { return exact("DISCARD") }},
	}
}

func connTemplates() []template {
	return []template{
		{2, func(g *Gen) Step {
			if g.chance(0.5) {
				return exact("PING")
			}
			return exact("PING", g.value())
		}},
		{2, func(g *Gen) Step { return exact("ECHO", g.value()) }},
		{1, func(g *Gen) Step { return exact("SELECT", g.pick("0", "1", "abc", "-1", "16")) }},
		{1, func(g *Gen) Step {
			if g.chance(0.5) {
				return exact("AUTH", g.value())
			}
			return exact("AUTH", g.pick("default", "nobody"), g.value())
		}},
		{2, func(g *Gen) Step { return exact("CLIENT", "SETNAME", g.pick("app", "", "bad name", "x\ny", "n1")) }},
		{2, func(g *Gen) Step { return exact("CLIENT", "GETNAME") }},
		{1, func(g *Gen) Step { return withCheck(CheckShape, "CLIENT", "ID") }},
		{1, func(g *Gen) Step { return withCheck(CheckShape, "CLIENT", "INFO") }},
		{1, func(g *Gen) Step { return withCheck(CheckShape, "CLIENT", "LIST") }},
		{1, func(g *Gen) Step { return exact("CLIENT", "KILL", "ID", "999999") }},
		{1, func(g *Gen) Step { return exact("CLIENT", "KILL", "10.9.9.9:1") }},
		{1, func(g *Gen) Step { return exact("CLIENT", "HELP") }},
		{1, func(g *Gen) Step { return exact("CLIENT", g.pick("NOSUCH", "setname", "GETNAME"), "x") }},
		{2, func(g *Gen) Step { return withCheck(CheckHello, g.helloArgs()...) }},
		{1, func(g *Gen) Step { return exact("RESET") }},
		{2, func(g *Gen) Step {
			return exact("CLUSTER", "KEYSLOT", g.pick(g.key(), g.value(), "{}", "{{a}}", "a{b}c{d}"))
		}},
	}
}

func (g *Gen) helloArgs() []string {
	args := []string{"HELLO"}
	if g.chance(0.15) {
		return args
	}
	args = append(args, g.pick("2", "3", "3", "2", "1", "4", "abc"))
	if g.chance(0.2) {
		args = append(args, "SETNAME", g.pick("h1", "bad name"))
	}
	if g.chance(0.15) {
		args = append(args, "AUTH", "default", g.pick("", "pw"))
	}
	if g.chance(0.05) {
		args = append(args, g.pick("AUTH", "SETNAME", "FOO"))
	}
	return args
}

func serverTemplates() []template {
	return []template{
		{1, func(g *Gen) Step {
			return withCheck(CheckShape, "INFO", g.pick("server", "keyspace", "clients", "stats", "default", "all", "nosuch"))
		}},
		{1, func(g *Gen) Step { return withCheck(CheckShape, "INFO") }},
		{1, func(g *Gen) Step { return withCheck(CheckShape, "TIME") }},
		{1, func(g *Gen) Step { return exact("FLUSHALL", g.pick("SYNC", "ASYNC")) }},
		{1, func(g *Gen) Step { return exact("FLUSHDB", g.pick("SYNC", "ASYNC", "FOO")) }},
		{2, func(g *Gen) Step {
			return withCheck(CheckUnordered, "CONFIG", "GET",
				g.pick("maxmemory", "timeout", "databases", "nosuch", "maxmemory-policy", "proto-max-bulk-len", "cluster-enabled"))
		}},
		{1, func(g *Gen) Step { return exact("CONFIG", g.pick("HELP", "NOSUCH")) }},
		{1, func(g *Gen) Step { return exact("COMMAND", "COUNT") }},
		{2, func(g *Gen) Step {
			return exact("COMMAND", "INFO", g.pick("get", "set", "mset", "nosuch", "GET", "client", "client|kill", "config|get"))
		}},
		{2, func(g *Gen) Step {
			k := g.keysN(2)
			return exact(strings.Fields(g.pick(
				"COMMAND GETKEYS SET "+k[0]+" v",
				"COMMAND GETKEYS MSET "+k[0]+" 1 "+k[1]+" 2",
				"COMMAND GETKEYS GET",
				"COMMAND GETKEYS PING",
				"COMMAND GETKEYS NOSUCH x",
				"COMMAND GETKEYS COPY "+k[0]+" "+k[1]))...)
		}},
		{1, func(g *Gen) Step { return exact("COMMAND", "DOCS", g.pick("get", "set", "nosuch")) }},
		{1, func(g *Gen) Step { return exact("COMMAND", "HELP") }},
		{1, func(g *Gen) Step {
			return withCheck(CheckUnordered, "COMMAND", "LIST", "FILTERBY", "PATTERN", g.pick("*get*", "x*", "cl*"))
		}},
		{2, func(g *Gen) Step { return withCheck(CheckMemory, "MEMORY", "USAGE", g.key()) }},
		{3, func(g *Gen) Step { return exact("OBJECT", "ENCODING", g.key()) }},
		{1, func(g *Gen) Step { return exact("OBJECT", g.pick("FREQ", "REFCOUNT", "HELP"), g.key()) }},
		{1, func(g *Gen) Step { return withCheck(CheckShape, "OBJECT", "IDLETIME", g.key()) }},
	}
}

// arityTemplates produce malformed commands: unknown names, wrong
// argument counts, unknown subcommands.
func arityTemplates() []template {
	return []template{
		{2, func(g *Gen) Step {
			name := g.pick("GET", "SET", "DEL", "EXPIRE", "TTL", "INCRBY", "MGET", "MSET", "GETRANGE", "SETRANGE",
				"APPEND", "RENAME", "COPY", "PING", "ECHO", "TYPE", "STRLEN", "GETEX", "SCAN", "KEYS", "WATCH",
				"EXISTS", "SETEX", "INCRBYFLOAT", "SELECT", "CLIENT", "CONFIG", "OBJECT", "MEMORY", "COMMAND", "CLUSTER")
			args := []string{name}
			for range g.rng.IntN(5) {
				args = append(args, g.key())
			}
			return exact(args...)
		}},
		{1, func(g *Gen) Step {
			return exact(g.pick("NOSUCHCMD", "GETT", "", "sett"), g.valueNoNUL(), g.valueNoNUL())
		}},
		// NUL bytes in an unknown command: Redis formats its error as a C
		// string, cutting at the NUL. Names of their own so that these
		// can be excluded apart from the other unknown commands.
		{1, func(g *Gen) Step { return exact(g.pick("NULARG", "\x00", "a\x00b"), g.value(), "x\x00y") }},
		{1, func(g *Gen) Step {
			return exact(g.pick("CLIENT", "CONFIG", "OBJECT", "MEMORY", "COMMAND", "CLUSTER"), g.pick("NOSUCH", "", "x y"))
		}},
	}
}
