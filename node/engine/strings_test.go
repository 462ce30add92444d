package engine

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// strEnv runs engine commands the way the dispatcher does: one keyspace,
// a writer, a fixed clock, the shard of the command's first key.
type strEnv struct {
	t    testing.TB
	ks   *Keyspace
	w    resp.Writer
	now  int64
	h    map[string]Handler
	args [][]byte
}

// strEnvNow is the clock of the tests: 2024-01-01T00:00:00Z in ms.
const strEnvNow int64 = 1704067200000

func newStrEnv(t testing.TB) *strEnv {
	return &strEnv{t: t, ks: New(), w: resp.Writer{Proto: 2}, now: strEnvNow, h: Handlers()}
}

// run executes one command and returns its raw reply.
func (s *strEnv) run(args ...string) string {
	s.t.Helper()
	s.args = s.args[:0]
	for _, a := range args {
		s.args = append(s.args, []byte(a))
	}
	return s.runBytes(s.args)
}

func (s *strEnv) runBytes(args [][]byte) string {
	s.t.Helper()
	h := s.h[strings.ToLower(string(args[0]))]
	if h == nil {
		s.t.Fatalf("no handler for %q", args[0])
	}
	s.w.B = s.w.B[:0]
	c := Ctx{KS: s.ks, Args: args, W: &s.w, Now: s.now}
	if len(args) > 1 {
		c.Shard = s.ks.ShardOf(args[1])
	}
	h(&c)
	return string(s.w.B)
}

func (s *strEnv) entry(key string) *Entry {
	return s.ks.Lookup(s.ks.ShardOf([]byte(key)), []byte(key), s.now)
}

// strLen is the length of key's string value, 0 when it is missing or
// not a string.
func (s *strEnv) strLen(key []byte) int64 {
	e := s.ks.Lookup(s.ks.ShardOf(key), key, s.now)
	if e == nil || e.Kind != KindString {
		return 0
	}
	return e.StrLen()
}

// Reply builders for expectations.
const (
	rOK   = "+OK\r\n"
	rNull = "$-1\r\n"
)

func rBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func rInt(n int64) string   { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func rErr(msg string) string {
	return "-" + msg + "\r\n"
}

// step is one command of a scenario and the reply Redis 7.0.15 gives.
type step struct {
	args []string
	want string
}

func st(want string, args ...string) step { return step{args: args, want: want} }

func runSteps(t *testing.T, s *strEnv, steps []step) {
	t.Helper()
	for _, x := range steps {
		if got := s.run(x.args...); got != x.want {
			t.Errorf("%q: got %q, want %q", x.args, got, x.want)
		}
	}
}

// putList stores a non-string value, for WRONGTYPE cases.
func putList(s *strEnv, key string) {
	k := []byte(key)
	s.ks.Set(s.ks.ShardOf(k), k, &Entry{Kind: KindList, Enc: EncQuicklist})
}

var errExpire = func(cmd string) string { return rErr(fmt.Sprintf(resp.ErrInvalidExpire, cmd)) }

// TestStringScenarios checks replies against what redis-server 7.0.15
// answers (each scenario was run on a real server; see
// node/diff_strings_test.go for the same cases run against one live).
func TestStringScenarios(t *testing.T) {
	syntax := rErr(resp.ErrSyntax)
	notInt := rErr(resp.ErrNotInteger)
	notFloat := rErr(resp.ErrNotFloat)
	wrong := rErr(resp.ErrWrongType)
	cases := map[string][]step{
		"get set": {
			st(rNull, "GET", "k"),
			st(rOK, "SET", "k", "v"),
			st(rBulk("v"), "GET", "k"),
			st(rOK, "SET", "k", ""),
			st(rBulk(""), "GET", "k"),
		},
		"set options syntax": {
			st(syntax, "SET", "k", "v", "ex", "10", "px", "10"),
			st(syntax, "SET", "k", "v", "nx", "xx"),
			st(syntax, "SET", "k", "v", "xx", "nx"),
			st(syntax, "SET", "k", "v", "keepttl", "ex", "1"),
			st(syntax, "SET", "k", "v", "ex", "1", "keepttl"),
			st(syntax, "SET", "k", "v", "ex"),
			st(syntax, "SET", "k", "v", "foo"),
			st(syntax, "SET", "k", "v", "persist"),
			st(syntax, "SET", "k", "v", "px", "1", "exat", "1"),
			st(syntax, "SET", "k", "v", "pxat", "1", "exat", "1"),
			st(syntax, "SET", "k", "v", "exat", "1", "ex", "1"),
			st(syntax, "SET", "k", "v", "nxx"),
			st(syntax, "SET", "k", "v", "ex", "10", "ex"),
			st(rOK, "SET", "k", "v", "ex", "10", "ex", "20"),
			st(rNull, "SET", "k", "v", "NX\x00junk"),
			st(rOK, "SET", "k", "v", "Xx\x00"),
			st(syntax, "SET", "k", "v", "Xx\x00", "nx"),
			st(rNull, "SET", "k", "v", "nx", "nx"),
			st(rBulk("v"), "SET", "k", "w", "get", "get"),
			st(rOK, "SET", "k", "v", "keepttl", "KEEPTTL", "xx"),
		},
		"set expire errors": {
			st(errExpire("set"), "SET", "k", "v", "ex", "0"),
			st(errExpire("set"), "SET", "k", "v", "px", "-1"),
			st(errExpire("set"), "SET", "k", "v", "exat", "0"),
			st(errExpire("set"), "SET", "k", "v", "pxat", "-5"),
			st(notInt, "SET", "k", "v", "ex", "abc"),
			st(notInt, "SET", "k", "v", "ex", "1.5"),
			st(notInt, "SET", "k", "v", "ex", " 1"),
			st(notInt, "SET", "k", "v", "ex", "+1"),
			st(notInt, "SET", "k", "v", "ex", "01"),
			st(notInt, "SET", "k", "v", "ex", "9223372036854775808"),
			st(errExpire("set"), "SET", "k", "v", "px", "9223372036854775807"),
			st(errExpire("set"), "SET", "k", "v", "ex", "9223372036854775"),
			st(errExpire("set"), "SET", "k", "v", "ex", "9223372036854776"),
			st(errExpire("set"), "SET", "k", "v", "exat", "9223372036854776"),
			st(rOK, "SET", "k", "v", "exat", "9223372036854775"),
			st(rOK, "SET", "k", "v", "pxat", "9223372036854775807"),
			// Errors come before GET's reply and before NX/XX.
			st(errExpire("set"), "SET", "k", "v", "get", "ex", "0"),
			st(errExpire("setex"), "SETEX", "k", "0", "v"),
			st(errExpire("psetex"), "PSETEX", "k", "-1", "v"),
			st(notInt, "SETEX", "k", "x", "v"),
			st(rBulk("v"), "GET", "k"),
		},
		"set nx xx get": {
			st(rNull, "SET", "k", "v", "xx"),
			st(rNull, "SET", "k", "v", "xx", "get"),
			st(rNull, "GET", "k"),
			st(rOK, "SET", "k", "v", "nx"),
			st(rNull, "SET", "k", "w", "nx"),
			st(rBulk("v"), "SET", "k", "w", "nx", "get"),
			st(rBulk("v"), "GET", "k"),
			st(rBulk("v"), "SET", "k", "w", "xx", "get"),
			st(rNull, "SET", "n", "1", "get"),
			st(rBulk("1"), "GET", "n"),
		},
		"setnx setex psetex": {
			st(rInt(1), "SETNX", "k", "1"),
			st(rInt(0), "SETNX", "k", "2"),
			st(rBulk("1"), "GET", "k"),
			st(rOK, "SETEX", "k", "100", "x"),
			st(rOK, "PSETEX", "k", "100", "y"),
			st(rBulk("y"), "GET", "k"),
		},
		"getset getdel": {
			st(rNull, "GETSET", "k", "a"),
			st(rBulk("a"), "GETSET", "k", "b"),
			st(rBulk("b"), "GETDEL", "k"),
			st(rNull, "GETDEL", "k"),
			st(rNull, "GET", "k"),
		},
		"getex": {
			st(rNull, "GETEX", "k"),
			st(rNull, "GETEX", "k", "ex", "0"),
			st(rNull, "GETEX", "k", "ex", "abc"),
			st(syntax, "GETEX", "k", "foo"),
			st(syntax, "GETEX", "k", "keepttl"),
			st(syntax, "GETEX", "k", "nx"),
			st(syntax, "GETEX", "k", "get"),
			st(syntax, "GETEX", "k", "persist", "ex", "1"),
			st(syntax, "GETEX", "k", "ex", "1", "persist"),
			st(syntax, "GETEX", "k", "ex"),
			st(rOK, "SET", "k", "v"),
			st(errExpire("getex"), "GETEX", "k", "ex", "0"),
			st(notInt, "GETEX", "k", "px", "x"),
			st(rBulk("v"), "GETEX", "k", "ex", "100"),
			st(rBulk("v"), "GETEX", "k", "persist", "PERSIST"),
			st(rBulk("v"), "GETEX", "k", "pxat", "1"),
			st(rNull, "GET", "k"),
		},
		"mget mset msetnx": {
			st(rOK, "MSET", "{t}a", "1", "{t}b", "2"),
			st("*3\r\n"+rBulk("1")+rBulk("2")+rNull, "MGET", "{t}a", "{t}b", "{t}c"),
			st(rErr(fmt.Sprintf(resp.ErrWrongArgs, "mset")), "MSET", "{t}a", "1", "{t}b"),
			st(rErr(fmt.Sprintf(resp.ErrWrongArgs, "msetnx")), "MSETNX", "{t}a", "1", "{t}b"),
			st(rInt(0), "MSETNX", "{t}c", "3", "{t}a", "9"),
			st(rNull, "GET", "{t}c"),
			st(rInt(1), "MSETNX", "{t}c", "3", "{t}d", "4"),
			st(rOK, "MSET", "{t}a", "x", "{t}a", "y"),
			st(rBulk("y"), "GET", "{t}a"),
		},
		"append strlen": {
			st(rInt(0), "STRLEN", "k"),
			st(rInt(3), "APPEND", "k", "123"),
			st(rInt(4), "APPEND", "k", "4"),
			st(rInt(4), "APPEND", "k", ""),
			st(rInt(4), "STRLEN", "k"),
			st(rBulk("1234"), "GET", "k"),
			st(rInt(0), "APPEND", "e", ""),
			st(rBulk(""), "GET", "e"),
		},
		"getrange": {
			st(rBulk(""), "GETRANGE", "k", "0", "-1"),
			st(notInt, "GETRANGE", "k", "a", "1"),
			st(rOK, "SET", "k", "hello"),
			st(rBulk("hello"), "GETRANGE", "k", "0", "-1"),
			st(rBulk("h"), "GETRANGE", "k", "0", "-100"),
			st(rBulk("hello"), "GETRANGE", "k", "-100", "-1"),
			st(rBulk(""), "GETRANGE", "k", "-1", "-5"),
			st(rBulk("hello"), "GETRANGE", "k", "-5", "-1"),
			st(rBulk(""), "GETRANGE", "k", "3", "1"),
			st(rBulk(""), "GETRANGE", "k", "10", "20"),
			st(rBulk("ll"), "GETRANGE", "k", "-3", "-2"),
			st(rBulk(""), "GETRANGE", "k", "5", "5"),
			st(rBulk("o"), "GETRANGE", "k", "4", "100"),
			st(rBulk("hello"), "GETRANGE", "k", "-9223372036854775808", "9223372036854775807"),
			st(notInt, "GETRANGE", "k", "0", "9223372036854775808"),
			st(rOK, "SET", "e", ""),
			st(rBulk(""), "GETRANGE", "e", "0", "-1"),
			st(rBulk(""), "GETRANGE", "e", "-1", "-1"),
			st(rOK, "SET", "n", "12345"),
			st(rBulk("234"), "GETRANGE", "n", "1", "3"),
		},
		"setrange": {
			st(rErr(resp.ErrOffsetRange), "SETRANGE", "m", "-1", "x"),
			st(notInt, "SETRANGE", "m", "x", "x"),
			st(notInt, "SETRANGE", "m", "9223372036854775808", "x"),
			st(rInt(0), "SETRANGE", "m", "1", ""),
			st(rInt(0), "SETRANGE", "m", "536870912", ""),
			st(rNull, "GET", "m"),
			st(rErr(resp.ErrStringTooLong), "SETRANGE", "m", "536870912", "x"),
			st(rErr(resp.ErrStringTooLong), "SETRANGE", "m", "9223372036854775807", "x"),
			st(rInt(3), "SETRANGE", "m", "2", "x"),
			st(rBulk("\x00\x00x"), "GET", "m"),
			st(rOK, "SET", "s", "hello"),
			st(rInt(5), "SETRANGE", "s", "536870912", ""),
			st(rErr(resp.ErrStringTooLong), "SETRANGE", "s", "536870912", "x"),
			st(rInt(8), "SETRANGE", "s", "7", "x"),
			st(rBulk("hello\x00\x00x"), "GET", "s"),
			st(rInt(8), "SETRANGE", "s", "0", "HE"),
			st(rBulk("HEllo\x00\x00x"), "GET", "s"),
		},
		"incr family": {
			st(rInt(1), "INCR", "k"),
			st(rInt(0), "DECR", "k"),
			st(rInt(10), "INCRBY", "k", "10"),
			st(rInt(7), "DECRBY", "k", "3"),
			st(notInt, "INCRBY", "k", "1.5"),
			st(notInt, "INCRBY", "k", " 1"),
			st(rErr(resp.ErrDecrOverflow), "DECRBY", "k", "-9223372036854775808"),
			st(rInt(-9223372036854775801), "INCRBY", "k", "-9223372036854775808"),
			st(rErr(resp.ErrOverflow), "DECRBY", "k", "8"),
			st(rInt(-9223372036854775808), "DECRBY", "k", "7"),
			st(rErr(resp.ErrOverflow), "DECR", "k"),
			st(rOK, "SET", "k", "9223372036854775807"),
			st(rErr(resp.ErrOverflow), "INCR", "k"),
			st(rOK, "SET", "k", "x"),
			st(notInt, "INCR", "k"),
			st(rOK, "SET", "k", "01"),
			st(notInt, "INCR", "k"),
			st(rOK, "SET", "k", "-0"),
			st(notInt, "INCR", "k"),
		},
		"incrbyfloat": {
			st(rBulk("10.5"), "INCRBYFLOAT", "f", "10.5"),
			st(rBulk("10"), "INCRBYFLOAT", "f", "-0.5"),
			st(rBulk("5010"), "INCRBYFLOAT", "f", "5.0e3"),
			st(rBulk("5011.10000000000000009"), "INCRBYFLOAT", "f", "1.1"),
			st(rErr(resp.ErrIncrNaNOrInf), "INCRBYFLOAT", "f", "inf"),
			st(notFloat, "INCRBYFLOAT", "f", "nan"),
			st(notFloat, "INCRBYFLOAT", "f", "1.5\x00abc"),
			st(rOK, "SET", "f", "abc"),
			st(notFloat, "INCRBYFLOAT", "f", "1"),
		},
		"wrongtype": {
			st(wrong, "GET", "l"),
			st(wrong, "GETSET", "l", "x"),
			st(wrong, "GETDEL", "l"),
			st(wrong, "GETEX", "l"),
			st(wrong, "GETEX", "l", "ex", "0"),
			st(syntax, "GETEX", "l", "bad"),
			st(wrong, "SET", "l", "x", "get"),
			st(wrong, "SET", "l", "x", "nx", "get"),
			st(wrong, "STRLEN", "l"),
			st(wrong, "APPEND", "l", "x"),
			st(wrong, "GETRANGE", "l", "0", "1"),
			st(notInt, "GETRANGE", "l", "a", "1"),
			st(wrong, "SETRANGE", "l", "0", ""),
			st(wrong, "SETRANGE", "l", "536870912", "x"),
			st(rErr(resp.ErrOffsetRange), "SETRANGE", "l", "-1", "x"),
			st(wrong, "INCR", "l"),
			st(notInt, "INCRBY", "l", "x"),
			st(wrong, "INCRBYFLOAT", "l", "x"),
			st(rInt(0), "SETNX", "l", "1"),
			st(rNull, "SET", "l", "1", "nx"),
			st(rOK, "SET", "l", "1"),
			st(rBulk("1"), "GET", "l"),
		},
	}
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			s := newStrEnv(t)
			putList(s, "l")
			runSteps(t, s, steps)
		})
	}
}

// TestStringNullsRESP3: missing values are RESP3 nulls.
func TestStringNullsRESP3(t *testing.T) {
	s := newStrEnv(t)
	s.w.Proto = 3
	runSteps(t, s, []step{
		st("_\r\n", "GET", "k"),
		st("_\r\n", "SET", "k", "v", "get"),
		st("_\r\n", "SET", "x", "v", "xx"),
		st("_\r\n", "GETDEL", "nokey"),
		st("_\r\n", "GETEX", "nokey"),
		st("_\r\n", "GETSET", "nokey", "1"),
		st("*2\r\n$1\r\nv\r\n_\r\n", "MGET", "k", "nokey2"),
		st(rBulk(""), "GETRANGE", "nokey3", "0", "1"),
	})
}

func TestStringEncodings(t *testing.T) {
	long44 := strings.Repeat("a", 44)
	long45 := strings.Repeat("a", 45)
	cases := []struct {
		name  string
		steps [][]string
		want  Encoding
	}{
		{"small int", [][]string{{"SET", "k", "123"}}, EncInt},
		{"negative zero", [][]string{{"SET", "k", "-0"}}, EncEmbstr},
		{"leading zero", [][]string{{"SET", "k", "01"}}, EncEmbstr},
		{"int max", [][]string{{"SET", "k", "9223372036854775807"}}, EncInt},
		{"int min", [][]string{{"SET", "k", "-9223372036854775808"}}, EncInt},
		{"past int64", [][]string{{"SET", "k", "9223372036854775808"}}, EncEmbstr},
		{"44 bytes", [][]string{{"SET", "k", long44}}, EncEmbstr},
		{"45 bytes", [][]string{{"SET", "k", long45}}, EncRaw},
		{"mset int", [][]string{{"MSET", "k", "7"}}, EncInt},
		{"getset int", [][]string{{"GETSET", "k", "7"}}, EncInt},
		{"append new", [][]string{{"APPEND", "k", "123"}}, EncInt},
		{"append existing", [][]string{{"APPEND", "k", "123"}, {"APPEND", "k", "4"}}, EncRaw},
		{"append empty new", [][]string{{"APPEND", "k", ""}}, EncEmbstr},
		{"append empty existing", [][]string{{"SET", "k", "5"}, {"APPEND", "k", ""}}, EncRaw},
		{"setrange new", [][]string{{"SETRANGE", "k", "0", "5"}}, EncRaw},
		{"setrange empty keeps", [][]string{{"SET", "k", "5"}, {"SETRANGE", "k", "0", ""}}, EncInt},
		{"setrange existing", [][]string{{"SET", "k", "5"}, {"SETRANGE", "k", "0", "6"}}, EncRaw},
		{"incr", [][]string{{"SET", "k", "x1"}, {"SET", "k", "1"}, {"APPEND", "k", "0"}, {"INCR", "k"}}, EncInt},
		{"incrbyfloat int result", [][]string{{"SET", "k", "7"}, {"INCRBYFLOAT", "k", "1"}}, EncEmbstr},
		{"incrbyfloat long result", [][]string{{"INCRBYFLOAT", "k", "1e100"}}, EncRaw},
		{"set after append", [][]string{{"APPEND", "k", "x"}, {"APPEND", "k", "y"}, {"SET", "k", "z"}}, EncEmbstr},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStrEnv(t)
			for _, a := range tc.steps {
				s.run(a...)
			}
			e := s.entry("k")
			if e == nil {
				t.Fatal("key missing")
			}
			if e.Enc != tc.want {
				t.Errorf("encoding %v, want %v", e.Enc, tc.want)
			}
		})
	}
}

// TestStringExpiry covers which commands keep, set and clear a TTL.
func TestStringExpiry(t *testing.T) {
	const ttl = 100_000
	cases := []struct {
		name   string
		cmd    []string
		expire int64 // wanted absolute expiry afterwards, relative to now when > 0 and < 1e12
	}{
		{"set clears", []string{"SET", "k", "2"}, 0},
		{"set keepttl", []string{"SET", "k", "2", "KEEPTTL"}, ttl},
		{"set ex", []string{"SET", "k", "2", "EX", "5"}, 5000},
		{"set px", []string{"SET", "k", "2", "PX", "5"}, 5},
		{"set exat", []string{"SET", "k", "2", "EXAT", "1800000000"}, 1800000000000},
		{"set pxat", []string{"SET", "k", "2", "PXAT", "1800000000123"}, 1800000000123},
		{"set nx untouched", []string{"SET", "k", "2", "NX", "EX", "5"}, ttl},
		{"getset clears", []string{"GETSET", "k", "2"}, 0},
		{"mset clears", []string{"MSET", "k", "2"}, 0},
		{"msetnx untouched", []string{"MSETNX", "k", "2"}, ttl},
		{"incr keeps", []string{"INCR", "k"}, ttl},
		{"incrbyfloat keeps", []string{"INCRBYFLOAT", "k", "1.5"}, ttl},
		{"append keeps", []string{"APPEND", "k", "x"}, ttl},
		{"setrange keeps", []string{"SETRANGE", "k", "0", "x"}, ttl},
		{"getex plain", []string{"GETEX", "k"}, ttl},
		{"getex ex", []string{"GETEX", "k", "EX", "7"}, 7000},
		{"getex persist", []string{"GETEX", "k", "PERSIST"}, 0},
		{"getex pxat future", []string{"GETEX", "k", "PXAT", "1800000000123"}, 1800000000123},
		{"setex", []string{"SETEX", "k", "9", "v"}, 9000},
		{"psetex", []string{"PSETEX", "k", "9", "v"}, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStrEnv(t)
			s.run("SET", "k", "1", "PX", strconv.Itoa(ttl))
			s.run(tc.cmd...)
			e := s.entry("k")
			if e == nil {
				t.Fatal("key missing")
			}
			want := tc.expire
			if want > 0 && want < 1e12 {
				want += s.now
			}
			if e.Expire != want {
				t.Errorf("expire %d, want %d", e.Expire, want)
			}
			if n := s.ks.ShardOf([]byte("k")).Expires(); (n == 1) != (want != 0) {
				t.Errorf("shard expires counter %d with expire %d", n, want)
			}
		})
	}
}

// TestStringPastExpire: SET with a time already past stores the key, which
// then expires on access (counted in expired_keys); GETEX with a past
// absolute time deletes at once without counting an expiry.
func TestStringPastExpire(t *testing.T) {
	s := newStrEnv(t)
	k := []byte("k")
	sh := s.ks.ShardOf(k)
	if got := s.run("SET", "k", "v", "PXAT", "1"); got != rOK {
		t.Fatalf("SET PXAT 1: %q", got)
	}
	if sh.Len() != 1 {
		t.Fatalf("SET PXAT 1 stored %d keys, want 1 until accessed", sh.Len())
	}
	if got := s.run("GET", "k"); got != rNull {
		t.Fatalf("GET after past PXAT: %q", got)
	}
	if n := s.ks.Stats.ExpiredKeys.Load(); n != 1 {
		t.Errorf("expired_keys %d, want 1", n)
	}
	s.run("SET", "k", "v")
	if got := s.run("GETEX", "k", "EXAT", "1"); got != rBulk("v") {
		t.Fatalf("GETEX EXAT 1: %q", got)
	}
	if sh.Len() != 0 || sh.Expires() != 0 {
		t.Errorf("GETEX EXAT past left %d keys, %d expiring", sh.Len(), sh.Expires())
	}
	if n := s.ks.Stats.ExpiredKeys.Load(); n != 1 {
		t.Errorf("expired_keys %d after GETEX delete, want still 1", n)
	}
}

// TestStringStatsAndDirty checks keyspace hits/misses (read lookups only)
// and the dirty counter per command, as redis-server 7.0.15 counts them.
func TestStringStatsAndDirty(t *testing.T) {
	cases := []struct {
		cmd               []string
		hits, miss, dirty int64
	}{
		{[]string{"GET", "{k}a"}, 1, 0, 0},
		{[]string{"GET", "{k}zz"}, 0, 1, 0},
		{[]string{"GET", "{k}l"}, 1, 0, 0},
		{[]string{"MGET", "{k}a", "{k}zz", "{k}l"}, 2, 1, 0},
		{[]string{"SET", "{k}a", "2"}, 0, 0, 1},
		{[]string{"SET", "{k}a", "2", "GET"}, 1, 0, 1},
		{[]string{"SET", "{k}zz", "2", "GET"}, 0, 1, 1},
		{[]string{"SET", "{k}a", "2", "NX"}, 0, 0, 0},
		{[]string{"SET", "{k}a", "2", "EX", "10"}, 0, 0, 1},
		{[]string{"SETNX", "{k}zz", "1"}, 0, 0, 1},
		{[]string{"GETSET", "{k}a", "3"}, 1, 0, 1},
		{[]string{"GETDEL", "{k}a"}, 1, 0, 1},
		{[]string{"GETDEL", "{k}zz"}, 0, 1, 0},
		{[]string{"GETEX", "{k}a"}, 1, 0, 0},
		{[]string{"GETEX", "{k}a", "PERSIST"}, 1, 0, 0},
		{[]string{"GETEX", "{k}t", "PERSIST"}, 1, 0, 1},
		{[]string{"GETEX", "{k}a", "EX", "5"}, 1, 0, 1},
		{[]string{"GETEX", "{k}a", "PXAT", "1"}, 1, 0, 1},
		{[]string{"GETEX", "{k}zz", "EX", "5"}, 0, 1, 0},
		{[]string{"MSET", "{k}a", "1", "{k}b", "2"}, 0, 0, 2},
		{[]string{"MSETNX", "{k}x", "1", "{k}y", "2"}, 0, 0, 2},
		{[]string{"MSETNX", "{k}a", "1", "{k}y", "2"}, 0, 0, 0},
		{[]string{"APPEND", "{k}a", ""}, 0, 0, 1},
		{[]string{"STRLEN", "{k}a"}, 1, 0, 0},
		{[]string{"STRLEN", "{k}zz"}, 0, 1, 0},
		{[]string{"GETRANGE", "{k}a", "0", "1"}, 1, 0, 0},
		{[]string{"GETRANGE", "{k}zz", "0", "1"}, 0, 1, 0},
		{[]string{"SETRANGE", "{k}a", "0", ""}, 0, 0, 0},
		{[]string{"SETRANGE", "{k}a", "0", "{k}x"}, 0, 0, 1},
		{[]string{"INCR", "{k}a"}, 0, 0, 1},
		{[]string{"INCRBYFLOAT", "{k}a", "1"}, 0, 0, 1},
		{[]string{"INCR", "{k}s"}, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.cmd, " "), func(t *testing.T) {
			s := newStrEnv(t)
			s.run("SET", "{k}a", "1")
			s.run("SET", "{k}s", "str")
			s.run("SET", "{k}t", "1", "EX", "100")
			putList(s, "{k}l")
			h0, m0, d0 := s.ks.Stats.KeyspaceHits.Load(), s.ks.Stats.KeyspaceMiss.Load(), s.ks.Changes()
			s.run(tc.cmd...)
			h, m, d := s.ks.Stats.KeyspaceHits.Load()-h0, s.ks.Stats.KeyspaceMiss.Load()-m0, s.ks.Changes()-d0
			if h != tc.hits || m != tc.miss || d != tc.dirty {
				t.Errorf("hits/misses/dirty %d/%d/%d, want %d/%d/%d", h, m, d, tc.hits, tc.miss, tc.dirty)
			}
		})
	}
}

// TestStringWatchTouch: commands that change a key mark its watchers;
// reads and refused writes do not.
func TestStringWatchTouch(t *testing.T) {
	cases := []struct {
		cmd   []string
		touch bool
	}{
		{[]string{"GET", "a"}, false},
		{[]string{"SET", "a", "x"}, true},
		{[]string{"SET", "a", "x", "NX"}, false},
		{[]string{"SETNX", "a", "x"}, false},
		{[]string{"MSET", "a", "x"}, true},
		{[]string{"MSETNX", "a", "x"}, false},
		{[]string{"APPEND", "a", ""}, true},
		{[]string{"SETRANGE", "a", "0", ""}, false},
		{[]string{"SETRANGE", "a", "0", "y"}, true},
		{[]string{"INCR", "a"}, true},
		{[]string{"INCRBY", "a", "x"}, false},
		{[]string{"INCRBYFLOAT", "a", "2"}, true},
		{[]string{"GETEX", "a"}, false},
		{[]string{"GETEX", "a", "PERSIST"}, false},
		{[]string{"GETEX", "a", "EX", "9"}, true},
		{[]string{"GETDEL", "a"}, true},
		{[]string{"GETSET", "a", "z"}, true},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.cmd, " "), func(t *testing.T) {
			s := newStrEnv(t)
			s.run("SET", "a", "1")
			w := &Watch{}
			s.ks.ShardOf([]byte("a")).AddWatch([]byte("a"), w)
			s.run(tc.cmd...)
			if w.Dirty.Load() != tc.touch {
				t.Errorf("watch dirty %v, want %v", w.Dirty.Load(), tc.touch)
			}
		})
	}
}

// TestStringLengthLimit checks checkStringLength's arithmetic without
// building 512 MB strings: the limit itself, and overflow of size+add.
func TestStringLengthLimit(t *testing.T) {
	cases := []struct {
		size, add int64
		ok        bool
	}{
		{0, maxStringLen, true}, {maxStringLen, 0, true}, {maxStringLen - 1, 1, true},
		{maxStringLen, 1, false}, {1, maxStringLen, false}, {math.MaxInt64, 1, false},
		{math.MaxInt64, math.MaxInt64, false}, {1 << 62, 1 << 62, false},
	}
	for _, tc := range cases {
		s := newStrEnv(t)
		c := Ctx{KS: s.ks, W: &s.w}
		if got := lengthOK(&c, tc.size, tc.add); got != tc.ok {
			t.Errorf("lengthOK(%d, %d) = %v", tc.size, tc.add, got)
		}
		if want := rErr(resp.ErrStringTooLong); !tc.ok && string(s.w.B) != want {
			t.Errorf("lengthOK(%d, %d) replied %q", tc.size, tc.add, s.w.B)
		}
	}
}

// TestStringBufferReuse: overwriting reuses a fitting buffer and never
// lets two keys share one.
func TestStringBufferReuse(t *testing.T) {
	s := newStrEnv(t)
	s.run("SET", "a", "hello world")
	before := &s.entry("a").Str[:1][0]
	s.run("SET", "a", "bye")
	if &s.entry("a").Str[:1][0] != before {
		t.Error("SET of a shorter value did not reuse the buffer")
	}
	// Spare capacity holds old bytes: SETRANGE past the end must zero them.
	s.run("SETRANGE", "a", "5", "!")
	if got := s.run("GET", "a"); got != rBulk("bye\x00\x00!") {
		t.Errorf("GET after SETRANGE: %q", got)
	}
	s.run("SET", "a", strings.Repeat("x", 1000))
	s.run("SET", "a", "y")
	if c := cap(s.entry("a").Str); c > 100 {
		t.Errorf("a 1-byte value keeps a %d-byte buffer", c)
	}
	s.run("MSET", "{t}1", "same", "{t}2", "same")
	if &s.entry("{t}1").Str[0] == &s.entry("{t}2").Str[0] {
		t.Error("two keys share a buffer")
	}
	s.run("SET", "{t}1", "diff")
	if got := s.run("GET", "{t}2"); got != rBulk("same") {
		t.Errorf("writing one key changed another: %q", got)
	}
}

// TestStringArgsCopied: stored values never alias the argument buffers
// (which belong to the connection's reader).
func TestStringArgsCopied(t *testing.T) {
	cmds := [][]string{
		{"SET", "k", "val"}, {"SETNX", "k", "val"}, {"SETEX", "k", "10", "val"},
		{"PSETEX", "k", "10", "val"}, {"GETSET", "k", "val"}, {"MSET", "k", "val"},
		{"MSETNX", "k", "val"}, {"APPEND", "k", "val"}, {"SETRANGE", "k", "0", "val"},
	}
	for _, cmd := range cmds {
		t.Run(cmd[0], func(t *testing.T) {
			s := newStrEnv(t)
			args := make([][]byte, len(cmd))
			for i, a := range cmd {
				args[i] = []byte(a)
			}
			s.runBytes(args)
			for _, a := range args {
				for i := range a {
					a[i] = '#'
				}
			}
			if got := s.run("GET", "k"); got != rBulk("val") {
				t.Errorf("value changed with the argument buffer: %q", got)
			}
		})
	}
}

// TestStringZeroAlloc asserts the hot paths allocate nothing per command.
func TestStringZeroAlloc(t *testing.T) {
	s := newStrEnv(t)
	s.run("SET", "key", "value-0123456789")
	s.run("SET", "n", "1")
	s.run("MSET", "{t}a", "1", "{t}b", "2")
	s.w.B = make([]byte, 0, 4096)
	cases := map[string][]string{
		"GET":           {"GET", "key"},
		"GET missing":   {"GET", "missing"},
		"SET overwrite": {"SET", "key", "value-9876543210"},
		"INCR":          {"INCR", "n"},
		"INCRBY":        {"INCRBY", "n", "-3"},
		"MGET":          {"MGET", "{t}a", "{t}b", "{t}c"},
		"MSET":          {"MSET", "{t}a", "3", "{t}b", "4"},
		"STRLEN":        {"STRLEN", "key"},
		"GETRANGE":      {"GETRANGE", "key", "0", "4"},
		"SET XX GET":    {"SET", "key", "value-0123456789", "XX", "GET"},
	}
	for name, cmd := range cases {
		args := make([][]byte, len(cmd))
		for i, a := range cmd {
			args[i] = []byte(a)
		}
		h := s.h[strings.ToLower(cmd[0])]
		c := Ctx{KS: s.ks, Args: args, W: &s.w, Now: s.now, Shard: s.ks.ShardOf(args[1])}
		allocs := testing.AllocsPerRun(100, func() {
			s.w.B = s.w.B[:0]
			h(&c)
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per run", name, allocs)
		}
	}
}

// TestStringSlotsTable: every strings command has a handler and a table
// entry, so the dispatcher can route it.
func TestStringSlotsTable(t *testing.T) {
	h := Handlers()
	for _, name := range []string{"get", "set", "setnx", "setex", "psetex", "getset", "getdel", "getex",
		"mget", "mset", "msetnx", "append", "strlen", "getrange", "setrange", "incr", "decr", "incrby",
		"decrby", "incrbyfloat"} {
		if h[name] == nil {
			t.Errorf("no handler for %s", name)
		}
		if slots.Lookup([]byte(name)) == nil {
			t.Errorf("%s missing from the command table", name)
		}
	}
}
