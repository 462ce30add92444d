package slots

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// allTestCommands returns the served table and the unserved table, each
// command followed by its subcommands.
func allTestCommands() []*Command {
	var out []*Command
	for _, c := range append(slices.Clone(table), unservedTable...) {
		out = append(out, c)
		out = append(out, c.Subcommands...)
	}
	return out
}

func splitArgs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

func lookupTest(t testing.TB, args [][]byte) *Command {
	t.Helper()
	for _, c := range allTestCommands() {
		if c.Parent != nil {
			continue
		}
		if !equalFold(c.Name, args[0]) {
			continue
		}
		if len(c.Subcommands) > 0 && len(args) > 1 {
			if s := LookupSub(c, args[1]); s != nil {
				return s
			}
		}
		return c
	}
	t.Fatalf("no command %q in the tables", args[0])
	return nil
}

// keyIndexCases are expected key positions worked out from Redis's
// documentation, one case per irregular way of finding keys.
var keyIndexCases = []struct {
	cmd  string
	want []int
}{
	{"GET k", []int{1}},
	{"MSET a 1 b 2", []int{1, 3}},
	{"DEL a b c", []int{1, 2, 3}},
	{"COPY a b DB 0 REPLACE", []int{1, 2}},
	{"BITOP AND dest a b", []int{2, 3, 4}},
	{"XREAD COUNT 2 STREAMS s1 s2 0 0", []int{4, 5}},
	{"XREAD STREAMS s1 0", []int{2}},
	{"XREADGROUP GROUP g c STREAMS s1 s2 > >", []int{5, 6}},
	{"LMOVE a b LEFT RIGHT", []int{1, 2}},
	{"BLMOVE a b LEFT RIGHT 0", []int{1, 2}},
	{"BLPOP a b c 0", []int{1, 2, 3}},
	{"BRPOP a 1.5", []int{1}},
	{"EVAL s 2 k1 k2 a1", []int{3, 4}},
	{"EVAL s 0 a1", nil},
	{"EVAL s 3 k1", nil},
	{"EVAL s x k1", nil},
	{"FCALL f 1 k1 a1", []int{3}},
	{"ZUNIONSTORE d 2 a b WEIGHTS 1 2", []int{1, 3, 4}},
	{"ZUNION 2 a b", []int{2, 3}},
	{"LMPOP 2 a b LEFT", []int{2, 3}},
	{"BLMPOP 0 1 a LEFT", []int{3}},
	{"SORT k", []int{1}},
	{"SORT k BY w* LIMIT 0 1 GET # STORE d", []int{1, 10}},
	{"SORT k STORE d STORE e", []int{1, 5}},
	{"SORT k LIMIT store x", []int{1}},
	{"SORT k store STORE w4", []int{1, 4}},
	{"SORT_RO k BY x", []int{1}},
	{"MIGRATE h 1 k 0 5", []int{3}},
	{`MIGRATE h 1 "" 0 5 COPY AUTH pw KEYS a b`, []int{10, 11}},
	{`MIGRATE h 1 "" 0 5 AUTH2 u KEYS KEYS a`, []int{10}},
	{"MIGRATE h 1 k 0 5 KEYS a", nil},
	{"GEORADIUS k 0 0 1 km STORE d", []int{1, 7}},
	{"GEORADIUSBYMEMBER k m 1 km STOREDIST d", []int{1, 6}},
	{"GEORADIUSBYMEMBER k store 1 km", []int{1}},
	{"OBJECT ENCODING k", []int{2}},
	{"PING", nil},
	// Keywords are C strings to Redis's strcasecmp: up to the first NUL.
	{"SORT k STORE\x00 d", []int{1, 3}},
	{"SORT k GET\x00x # STORE d", []int{1, 5}},
	{"SORT k GET\x00x # STORE\x00y d", []int{1, 5}},
	{"SORT k GET\x00x STORE d", []int{1}},
	{"MIGRATE h 1 \"\" 0 5 KEYS\x00 a b", []int{7, 8}},
	{"MIGRATE h 1 \"\" 0 5 AUTH\x00 pw KEYS a", []int{9}},
	{"GEORADIUS k 0 0 1 km STORE\x00z d", []int{1, 7}},
	{"GEORADIUSBYMEMBER k m 1 km STOREDIST\x00 d", []int{1, 6}},
	{"XREAD COUNT\x00 2 STREAMS\x00x s1 0", []int{4}},
}

func TestKeyIndexesCases(t *testing.T) {
	for _, tc := range keyIndexCases {
		args := splitArgs(tc.cmd)
		got := lookupTest(t, args).KeyIndexes(args, nil)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys at %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

// TestKeyIndexesAgainstRedis compares KeyIndexes with real COMMAND GETKEYS
// for every command of both tables: the hand-written cases plus random
// argument lists built from each command's own keywords, counts that are
// valid, invalid or too large, and plain words.
func TestKeyIndexesAgainstRedis(t *testing.T) {
	o := startOracle(t)
	for _, args := range oracleCases(rand.New(rand.NewPCG(1, 2))) {
		checkGetKeys(t, o, args)
	}
}

// checkGetKeys asks Redis for the keys of args and compares them with ours.
func checkGetKeys(t *testing.T, o *oracle, args [][]byte) {
	t.Helper()
	if len(args) < 2 {
		return // COMMAND GETKEYS needs the command and an argument
	}
	c := lookupTest(t, args)
	got := c.KeyIndexes(args, nil)
	rep := o.do(t, append([][]byte{[]byte("COMMAND"), []byte("GETKEYS")}, args...)...)
	switch rep.err {
	case "":
	case "ERR The command has no key arguments":
		if c.HasKeys() {
			t.Errorf("%q: Redis says no key arguments, HasKeys says yes", args)
		}
		if len(got) != 0 {
			t.Errorf("%q: keys at %v, Redis says none", args, got)
		}
		return
	case "ERR Invalid arguments specified for command":
		if len(got) != 0 {
			t.Errorf("%q: keys at %v, Redis finds none", args, got)
		}
		return
	default:
		t.Errorf("%q: Redis: %s", args, rep.err)
		return
	}
	if !c.HasKeys() {
		t.Errorf("%q: HasKeys false, Redis finds keys", args)
	}
	var want, have [][]byte
	for _, e := range rep.elems {
		want = append(want, e.str)
	}
	for _, i := range got {
		if i <= 0 || i >= len(args) {
			t.Fatalf("%q: index %d out of range", args, i)
		}
		have = append(have, args[i])
	}
	if !slices.EqualFunc(want, have, bytes.Equal) {
		t.Errorf("%q: keys %q, Redis: %q", args, have, want)
	}
}

// oracleCases returns the argument lists the key-finding tests ask Redis
// about: extra, the hand-written keyIndexCases, and 80 random lists for
// every command of both tables (randomArgs).
func oracleCases(rng *rand.Rand, extra ...string) [][][]byte {
	var cases [][][]byte
	for _, s := range extra {
		cases = append(cases, splitArgs(s))
	}
	for _, tc := range keyIndexCases {
		cases = append(cases, splitArgs(tc.cmd))
	}
	for _, c := range allTestCommands() {
		if len(c.Subcommands) > 0 {
			continue
		}
		for range 80 {
			cases = append(cases, randomArgs(rng, c))
		}
	}
	return cases
}

// randomArgs builds an argument list for c that satisfies its arity, from
// the command's tokens, numbers and unique words.
func randomArgs(rng *rand.Rand, c *Command) [][]byte {
	n := c.Arity
	if n < 0 {
		n = -n + rng.IntN(7)
	}
	var args [][]byte
	if c.Parent != nil {
		args = append(args, []byte(c.Parent.Name), []byte(c.Name))
	} else {
		args = append(args, []byte(c.Name))
	}
	tokens := docTokens(c)
	numbers := []string{"0", "1", "2", "3", "-1", "1abc", "01", " 1", "+2", "99"}
	for i := len(args); i < n; i++ {
		var a string
		switch r := rng.IntN(10); {
		case r < 3 && len(tokens) > 0:
			a = tokens[rng.IntN(len(tokens))]
			if rng.IntN(2) == 0 {
				a = strings.ToLower(a)
			}
			if rng.IntN(8) == 0 {
				a += "\x00x" // still the keyword to Redis's strcasecmp
			}
		case r < 6:
			a = numbers[rng.IntN(len(numbers))]
		case r < 7:
			a = ""
		default:
			a = fmt.Sprintf("w%d", i)
		}
		args = append(args, []byte(a))
	}
	return args
}

func docTokens(c *Command) []string {
	var out []string
	var walk func([]Arg)
	walk = func(args []Arg) {
		for _, a := range args {
			if a.Token != "" {
				out = append(out, a.Token)
			}
			walk(a.Args)
		}
	}
	if c.Doc != nil {
		walk(c.Doc.Args)
	}
	return out
}

// routeKeyCases are the keys a cluster node routes by where they differ
// from COMMAND GETKEYS's (checked on a redis-server 7.0.15 with
// cluster-enabled: a malformed XREAD with keys in two slots answers its
// syntax error, not CROSSSLOT), and where they agree.
var routeKeyCases = []struct {
	cmd  string
	want []int
}{
	{"XREAD STREAMS a b 0 0", []int{2, 3}},
	{"XREAD COUNT 1 BLOCK 0 STREAMS a 0", []int{6}},
	{"XREADGROUP GROUP g c NOACK STREAMS a b > >", []int{6, 7}},
	{"XREADGROUP GROUP streams c STREAMS a >", []int{5}},
	{"XREADGROUP GRUOP g c STREAMS a b > >", nil},
	{"XREAD STREAMS a b 0", nil},
	{"XREAD COUNT 1", nil},
	{"XREAD BLOCK", nil},
	{"XREAD STREAMS", nil},
	{"LMPOP 2 a b LEFT", []int{2, 3}},
	{"GET k", []int{1}},
}

func TestRouteKeyIndexesCases(t *testing.T) {
	for _, tc := range routeKeyCases {
		args := splitArgs(tc.cmd)
		got := lookupTest(t, args).RouteKeyIndexes(args, nil)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: routes by keys at %v, want %v", tc.cmd, got, tc.want)
		}
	}
	// A NUL ends an option as it ends a C string.
	args := [][]byte{[]byte("XREAD"), []byte("count\x00x"), []byte("1"), []byte("streams"), []byte("a"), []byte("0")}
	if got := lookupTest(t, args).RouteKeyIndexes(args, nil); !slices.Equal(got, []int{4}) {
		t.Errorf("XREAD count\\0x 1 STREAMS a 0: routes by keys at %v, want [4]", got)
	}
}

// TestFirstOnlyMatchesSpecs checks KeyIndexes' shortcut for one-key
// commands against the key-spec walk it skips, for every command it
// applies to and every argument count up to 8.
func TestFirstOnlyMatchesSpecs(t *testing.T) {
	n := 0
	for _, c := range allTestCommands() {
		if !c.firstOnly {
			continue
		}
		n++
		for argc := 2; argc <= 8; argc++ {
			args := make([][]byte, argc)
			for i := range args {
				args[i] = []byte(fmt.Sprint("a", i))
			}
			want, ok := specKeys(c.KeySpecs, args, nil, parseKeyCountStrict)
			if !ok {
				want = nil
			}
			if got := c.KeyIndexes(args, nil); !slices.Equal(got, want) {
				t.Errorf("%s with %d arguments: KeyIndexes %v, key specs %v", c.FullName, argc, got, want)
			}
		}
	}
	for _, name := range []string{"get", "set", "incr", "setbit", "bitfield", "pfadd", "xadd", "lpush"} {
		if !Lookup([]byte(name)).firstOnly {
			t.Errorf("%s does not take the one-key shortcut", name)
		}
	}
	if n < 50 {
		t.Errorf("only %d commands take the one-key shortcut", n)
	}
}
