package node_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node/engine"
)

// strScript is a named list of commands whose replies must match Redis's.
type strScript struct {
	name  string
	steps [][]string
}

func sc(args ...string) []string { return args }

// runStrScripts runs each script on a fresh pair, over RESP2 and then over
// RESP3 (flushing in between), demanding identical replies.
func runStrScripts(t *testing.T, scripts []strScript) {
	t.Helper()
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			p := difftest.Start(t)
			for _, proto := range []int{2, 3} {
				p.Flush(t)
				putListBoth(t, p, "list")
				putListBoth(t, p, "{k}list")
				putListBoth(t, p, "{t}list")
				for _, args := range s.steps {
					p.DoProto(t, proto, args...)
				}
			}
		})
	}
}

// putListBoth makes key a list on both servers, for WRONGTYPE cases: the
// node serves no list commands yet, so its entry is stored directly.
func putListBoth(t *testing.T, p *difftest.Pair, key string) {
	t.Helper()
	if v, err := p.Redis.DoStrings("RPUSH", key, "x"); err != nil || v.Kind != difftest.Integer {
		t.Fatalf("RPUSH on redis: %v %v", v, err)
	}
	ks := p.Server.Keyspace()
	k := []byte(key)
	sh := ks.ShardOf(k)
	ks.RLock()
	sh.Lock()
	ks.Set(sh, k, &engine.Entry{Kind: engine.KindList, Enc: engine.EncQuicklist})
	sh.Unlock()
	ks.RUnlock()
}

// TestDiffStringsSet covers SET's options, every combination error and the
// time validation, and SETNX/SETEX/PSETEX.
func TestDiffStringsSet(t *testing.T) {
	runStrScripts(t, []strScript{
		{"plain", [][]string{
			sc("GET", "k"), sc("SET", "k", "v"), sc("GET", "k"), sc("SET", "k", ""), sc("GET", "k"),
			sc("SET", "k"), sc("SET"), sc("GET"), sc("GET", "k", "x"), sc("set", "K", "upper"), sc("get", "K"),
			sc("SET", "k", strings.Repeat("x", 100)), sc("GET", "k"), sc("STRLEN", "k"),
		}},
		{"option combinations", [][]string{
			sc("SET", "k", "v", "EX", "10", "PX", "10"), sc("SET", "k", "v", "PX", "10", "EX", "10"),
			sc("SET", "k", "v", "EX", "10", "EXAT", "9999999999"), sc("SET", "k", "v", "EXAT", "9999999999", "PXAT", "9999999999999"),
			sc("SET", "k", "v", "PX", "10", "PXAT", "9999999999999"), sc("SET", "k", "v", "NX", "XX"),
			sc("SET", "k", "v", "XX", "NX"), sc("SET", "k", "v", "KEEPTTL", "EX", "1"), sc("SET", "k", "v", "EX", "1", "KEEPTTL"),
			sc("SET", "k", "v", "PXAT", "9999999999999", "KEEPTTL"), sc("SET", "k", "v", "PERSIST"),
			sc("SET", "k", "v", "EX"), sc("SET", "k", "v", "PX"), sc("SET", "k", "v", "EXAT"), sc("SET", "k", "v", "foo"),
			sc("SET", "k", "v", "NXX"), sc("SET", "k", "v", "E"), sc("SET", "k", "v", "", "NX"),
			sc("SET", "k", "v", "nx", "nx"), sc("SET", "k", "v", "xx", "xx"), sc("SET", "k", "w", "get", "get"),
			sc("SET", "k", "v", "keepttl", "KeepTtl"), sc("SET", "k", "v", "ex", "100", "ex", "200"), sc("TTL", "k"),
			sc("SET", "k", "v", "Ex", "100", "nX", "GeT"), sc("SET", "k", "v", "NX\x00junk"), sc("SET", "k", "v", "XX\x00"),
			sc("SET", "k", "v", "xx\x00", "nx"), sc("SET", "k", "v", "KEEPTTL\x00x"), sc("SET", "k", "v", "EX\x00", "50"),
			sc("TTL", "k"), sc("SET", "k", "v", "EX", "50\x00"),
		}},
		{"time validation", [][]string{
			sc("SET", "k", "v", "EX", "0"), sc("SET", "k", "v", "PX", "0"), sc("SET", "k", "v", "EXAT", "0"),
			sc("SET", "k", "v", "PXAT", "0"), sc("SET", "k", "v", "EX", "-1"), sc("SET", "k", "v", "PX", "-100"),
			sc("SET", "k", "v", "EX", "abc"), sc("SET", "k", "v", "EX", "1.5"), sc("SET", "k", "v", "EX", " 1"),
			sc("SET", "k", "v", "EX", "+1"), sc("SET", "k", "v", "EX", "01"), sc("SET", "k", "v", "EX", ""),
			sc("SET", "k", "v", "EX", "9223372036854775808"), sc("SET", "k", "v", "PX", "9223372036854775807"),
			sc("SET", "k", "v", "EX", "9223372036854775"), sc("SET", "k", "v", "EX", "9223372036854776"),
			sc("SET", "k", "v", "EXAT", "9223372036854776"), sc("SET", "k", "v", "EXAT", "9223372036854775"),
			sc("PEXPIRETIME", "k"), sc("SET", "k", "v", "PXAT", "9223372036854775807"), sc("PEXPIRETIME", "k"),
			sc("SET", "k", "v", "PXAT", "4102444800123"), sc("PEXPIRETIME", "k"), sc("EXPIRETIME", "k"),
			sc("SET", "k", "v", "EXAT", "4102444800"), sc("PEXPIRETIME", "k"),
			sc("SET", "k", "v", "GET", "EX", "0"), sc("GET", "k"), sc("SET", "k", "v", "NX", "EX", "0"),
			sc("SET", "list", "v", "GET", "EX", "0"), sc("SET", "list", "v", "GET", "EX", "x"),
			sc("SET", "k", "v", "PXAT", "1"), sc("GET", "k"), sc("EXISTS", "k"),
			sc("SET", "k", "v", "EXAT", "1", "GET"), sc("GET", "k"),
		}},
		{"nx xx get", [][]string{
			sc("SET", "k", "v", "XX"), sc("SET", "k", "v", "XX", "GET"), sc("GET", "k"),
			sc("SET", "k", "v", "NX"), sc("SET", "k", "w", "NX"), sc("SET", "k", "w", "NX", "GET"), sc("GET", "k"),
			sc("SET", "k", "w", "XX", "GET"), sc("GET", "k"), sc("SET", "n", "1", "GET"), sc("GET", "n"),
			sc("SET", "list", "v", "GET"), sc("SET", "list", "v", "NX", "GET"), sc("SET", "list", "v", "XX", "GET"),
			sc("SET", "list", "v", "NX"), sc("SET", "list", "v", "XX"), sc("GET", "list"),
		}},
		{"keepttl and clearing", [][]string{
			sc("SET", "k", "1", "EX", "100"), sc("SET", "k", "2", "KEEPTTL"), sc("TTL", "k"),
			sc("SET", "k", "3"), sc("TTL", "k"), sc("SET", "k", "1", "EX", "100"), sc("SET", "k", "4", "XX", "KEEPTTL"),
			sc("TTL", "k"), sc("SET", "k", "5", "NX", "EX", "5"), sc("TTL", "k"), sc("GET", "k"),
			sc("SET", "list", "s", "KEEPTTL"), sc("TYPE", "list"), sc("TTL", "list"),
			sc("EXPIRE", "{k}list", "100"), sc("SET", "{k}list", "s", "KEEPTTL"), sc("TTL", "{k}list"), sc("GET", "{k}list"),
		}},
		{"setnx setex psetex", [][]string{
			sc("SETNX", "k", "1"), sc("SETNX", "k", "2"), sc("GET", "k"), sc("SETNX", "list", "1"), sc("SETNX", "k"),
			sc("SETEX", "k", "100", "x"), sc("TTL", "k"), sc("GET", "k"), sc("PSETEX", "k", "100000", "y"), sc("TTL", "k"),
			sc("SETEX", "k", "0", "x"), sc("SETEX", "k", "-1", "x"), sc("SETEX", "k", "x", "x"), sc("SETEX", "k", "1.5", "x"),
			sc("PSETEX", "k", "0", "x"), sc("PSETEX", "k", "9223372036854775807", "x"), sc("SETEX", "k", "9223372036854775", "x"),
			sc("SETEX", "k", "100"), sc("SETEX", "list", "100", "s"), sc("TYPE", "list"), sc("GET", "k"),
		}},
	})
}

// TestDiffStringsGetVariants covers GETSET, GETDEL, GETEX and MGET/MSET.
func TestDiffStringsGetVariants(t *testing.T) {
	runStrScripts(t, []strScript{
		{"getset getdel", [][]string{
			sc("GETSET", "k", "a"), sc("GETSET", "k", "b"), sc("GET", "k"), sc("SET", "k", "c", "EX", "100"),
			sc("GETSET", "k", "d"), sc("TTL", "k"), sc("GETDEL", "k"), sc("GETDEL", "k"), sc("GET", "k"),
			sc("GETSET", "list", "x"), sc("GETDEL", "list"), sc("TYPE", "list"), sc("GETSET", "k"), sc("GETDEL", "k", "x"),
		}},
		{"getex", [][]string{
			sc("GETEX", "k"), sc("GETEX", "k", "EX", "0"), sc("GETEX", "k", "EX", "abc"), sc("GETEX", "k", "foo"),
			sc("GETEX", "k", "KEEPTTL"), sc("GETEX", "k", "NX"), sc("GETEX", "k", "GET"), sc("GETEX", "k", "EX"),
			sc("GETEX", "k", "PERSIST", "EX", "1"), sc("GETEX", "k", "EX", "1", "PERSIST"), sc("GETEX", "k", "EX", "1", "PX", "1"),
			sc("SET", "k", "v"), sc("GETEX", "k", "EX", "0"), sc("GETEX", "k", "EX", "-5"), sc("GETEX", "k", "PX", "x"),
			sc("GETEX", "k", "EX", "9223372036854776"), sc("GETEX", "k", "PX", "9223372036854775807"),
			sc("GETEX", "k", "EX", "100"), sc("TTL", "k"), sc("GETEX", "k"), sc("TTL", "k"),
			sc("GETEX", "k", "PERSIST"), sc("TTL", "k"), sc("GETEX", "k", "PERSIST", "persist"), sc("TTL", "k"),
			sc("GETEX", "k", "EXAT", "4102444800"), sc("PEXPIRETIME", "k"), sc("GETEX", "k", "PXAT", "4102444800555"),
			sc("PEXPIRETIME", "k"), sc("GETEX", "k", "EX", "10", "EX", "1000"), sc("TTL", "k"),
			sc("GETEX", "k", "PXAT", "1"), sc("GET", "k"), sc("EXISTS", "k"),
			sc("SET", "k", "v"), sc("GETEX", "k", "EXAT", "1"), sc("EXISTS", "k"),
			sc("GETEX", "list"), sc("GETEX", "list", "EX", "0"), sc("GETEX", "list", "bad"), sc("GETEX"),
		}},
		{"mget mset msetnx", [][]string{
			sc("MSET", "{t}a", "1", "{t}b", "2"), sc("MGET", "{t}a", "{t}b", "{t}c"), sc("MGET", "{t}c"),
			sc("MSET", "{t}a", "1", "{t}b"), sc("MSETNX", "{t}a", "1", "{t}b"), sc("MSET", "{t}a"), sc("MSETNX"),
			sc("MSETNX", "{t}c", "3", "{t}a", "9"), sc("GET", "{t}c"), sc("MSETNX", "{t}c", "3", "{t}d", "4"),
			sc("MGET", "{t}a", "{t}b", "{t}c", "{t}d"), sc("MSET", "{t}a", "x", "{t}a", "y"), sc("GET", "{t}a"),
			sc("MSETNX", "{t}e", "x", "{t}e", "y"), sc("GET", "{t}e"), sc("MSET", "a", "1", "b", "2"),
			sc("MGET", "a", "b"), sc("MSETNX", "a", "1", "b", "2"), sc("MGET", "a", "a"),
			sc("MGET", "{t}list", "{t}a"), sc("MSET", "{t}list", "s"), sc("TYPE", "{t}list"),
			sc("SET", "{t}x", "1", "EX", "100"), sc("MSET", "{t}x", "2"), sc("TTL", "{t}x"),
			sc("SET", "{t}x", "1", "EX", "100"), sc("MSETNX", "{t}x", "2", "{t}y", "3"), sc("TTL", "{t}x"),
		}},
	})
}

// TestDiffStringsRanges covers APPEND, STRLEN, GETRANGE and SETRANGE.
func TestDiffStringsRanges(t *testing.T) {
	var gr [][]string
	for _, r := range [][2]string{
		{"0", "-1"}, {"0", "-100"}, {"-100", "-1"}, {"-1", "-5"}, {"-5", "-1"}, {"3", "1"}, {"10", "20"},
		{"-3", "-2"}, {"5", "5"}, {"4", "100"}, {"0", "0"}, {"-1", "-1"}, {"-9223372036854775808", "9223372036854775807"},
		{"0", "9223372036854775808"}, {"a", "1"}, {"1", "b"}, {" 1", "2"}, {"-0", "1"}, {"9223372036854775807", "-9223372036854775808"},
	} {
		gr = append(gr, sc("GETRANGE", "s", r[0], r[1]), sc("GETRANGE", "e", r[0], r[1]), sc("GETRANGE", "n", r[0], r[1]),
			sc("GETRANGE", "missing", r[0], r[1]))
	}
	runStrScripts(t, []strScript{
		{"append strlen", [][]string{
			sc("STRLEN", "k"), sc("APPEND", "k", "123"), sc("OBJECT", "ENCODING", "k"), sc("APPEND", "k", "4"),
			sc("OBJECT", "ENCODING", "k"), sc("APPEND", "k", ""), sc("STRLEN", "k"), sc("GET", "k"), sc("APPEND", "e", ""),
			sc("GET", "e"), sc("EXISTS", "e"), sc("OBJECT", "ENCODING", "e"), sc("APPEND", "e", ""), sc("OBJECT", "ENCODING", "e"),
			sc("SET", "i", "5"), sc("APPEND", "i", ""), sc("OBJECT", "ENCODING", "i"), sc("APPEND", "list", "x"),
			sc("STRLEN", "list"), sc("SET", "t", "x", "EX", "100"), sc("APPEND", "t", "y"), sc("TTL", "t"),
			sc("APPEND", "k"), sc("STRLEN"), sc("APPEND", "b", "\x00\xff\r\n"), sc("GET", "b"), sc("STRLEN", "b"),
		}},
		{"getrange", append([][]string{
			sc("SET", "s", "hello"), sc("SET", "e", ""), sc("SET", "n", "12345"),
			sc("GETRANGE", "list", "0", "1"), sc("GETRANGE", "list", "a", "1"), sc("GETRANGE", "s", "0"),
		}, gr...)},
		{"setrange", [][]string{
			sc("SETRANGE", "m", "-1", "x"), sc("SETRANGE", "m", "x", "x"), sc("SETRANGE", "m", "9223372036854775808", "x"),
			sc("SETRANGE", "m", "1", ""), sc("SETRANGE", "m", "536870912", ""), sc("EXISTS", "m"),
			sc("SETRANGE", "m", "536870912", "x"), sc("SETRANGE", "m", "536870911", "xy"), sc("SETRANGE", "m", "9223372036854775807", "x"),
			sc("SETRANGE", "m", "2", "x"), sc("GET", "m"), sc("OBJECT", "ENCODING", "m"),
			sc("SET", "s", "hello"), sc("SETRANGE", "s", "536870912", ""), sc("SETRANGE", "s", "536870912", "x"),
			sc("SETRANGE", "s", "7", "x"), sc("GET", "s"), sc("SETRANGE", "s", "0", "HE"), sc("GET", "s"),
			sc("SET", "i", "5"), sc("SETRANGE", "i", "0", ""), sc("OBJECT", "ENCODING", "i"), sc("SETRANGE", "i", "0", "6"),
			sc("OBJECT", "ENCODING", "i"), sc("GET", "i"), sc("SET", "t", "abc", "EX", "100"), sc("SETRANGE", "t", "1", "Z"),
			sc("TTL", "t"), sc("GET", "t"), sc("SETRANGE", "list", "0", ""), sc("SETRANGE", "list", "536870912", "x"),
			sc("SETRANGE", "list", "-1", "x"), sc("SETRANGE", "list", "0", "x"), sc("SETRANGE", "s", "0"),
			sc("SET", "w", "hello world"), sc("SET", "w", "bye"), sc("SETRANGE", "w", "5", "!"), sc("GET", "w"),
		}},
	})
}

// TestDiffStringsCounters covers INCR/DECR/INCRBY/DECRBY and INCRBYFLOAT,
// including long double precision, formatting and parsing limits.
func TestDiffStringsCounters(t *testing.T) {
	var fl [][]string
	for _, v := range []string{
		"10.5", "-0.5", "5.0e3", "1.1", "3.0000000000000001", "0x10", "0x1.8", "0X1P+1", "0x1p-16445", "0x1.8p-16446",
		"0x1p-16446", "1e-4940", "1e-5000", "1e5000", "1e4932", "1.18973149535723176505e+4932", "0.000003814697265625",
		"0.000000000000000005", "0.000000000000000015", "-0", "inf", "-inf", "Infinity", "infin", "nan", "NaN", " 1", "1 ",
		"", "1.", ".5", ".", "-.e1", "1e", "1e+", "1e+2", "0x", "0x.p1", "0x1p", "+5", "00012", "1_0", "1e0000000000000000002",
		"12345678901234567890123", "-12345678901234567890123", "1.7976931348623157e308", "4.9e-324", "0.1", "0.2",
		"1e-17", "1e-18", "9223372036854775807", "1.5\x00abc", "1,5", "\t1", "1.82e-4951", "1.83e-4951", "-3.14159265358979323846264338327950288",
	} {
		fl = append(fl, sc("INCRBYFLOAT", "f", v), sc("OBJECT", "ENCODING", "f"), sc("INCRBYFLOAT", "g", "0.1"))
	}
	fl = append(fl, sc("DEL", "f"))
	fl = append(fl, fl...) // the second round starts from the values the first left
	runStrScripts(t, []strScript{
		{"incr decr", [][]string{
			sc("INCR", "k"), sc("OBJECT", "ENCODING", "k"), sc("DECR", "k"), sc("INCRBY", "k", "10"), sc("DECRBY", "k", "3"),
			sc("INCRBY", "k", "1.5"), sc("INCRBY", "k", " 1"), sc("INCRBY", "k", ""), sc("INCRBY", "k", "+1"),
			sc("DECRBY", "k", "-9223372036854775808"), sc("INCRBY", "k", "-9223372036854775808"), sc("DECRBY", "k", "8"),
			sc("DECRBY", "k", "7"), sc("DECR", "k"), sc("GET", "k"), sc("SET", "k", "9223372036854775807"), sc("INCR", "k"),
			sc("INCRBY", "k", "0"), sc("DECRBY", "k", "9223372036854775807"), sc("GET", "k"),
			sc("SET", "k", "x"), sc("INCR", "k"), sc("SET", "k", "01"), sc("INCR", "k"), sc("SET", "k", "-0"), sc("INCR", "k"),
			sc("SET", "k", " 1"), sc("INCR", "k"), sc("SET", "k", "1.0"), sc("INCR", "k"), sc("SET", "k", "99999999999999999999"),
			sc("INCR", "k"), sc("INCR", "list"), sc("INCRBY", "list", "x"), sc("DECRBY", "list", "1"), sc("DECR", "list"),
			sc("SET", "t", "5", "EX", "100"), sc("INCR", "t"), sc("TTL", "t"), sc("APPEND", "t", "0"), sc("OBJECT", "ENCODING", "t"),
			sc("INCR", "t"), sc("OBJECT", "ENCODING", "t"), sc("INCR", "k", "x"), sc("INCRBY", "k"),
		}},
		{"incrbyfloat values", fl},
		{"incrbyfloat state", [][]string{
			sc("SET", "f", "10"), sc("INCRBYFLOAT", "f", "0.5"), sc("OBJECT", "ENCODING", "f"), sc("INCRBYFLOAT", "f", "-0.5"),
			sc("OBJECT", "ENCODING", "f"), sc("INCR", "f"), sc("SET", "f", "abc"), sc("INCRBYFLOAT", "f", "1"),
			sc("SET", "f", "inf"), sc("INCRBYFLOAT", "f", "1"), sc("SET", "f", " 1"), sc("INCRBYFLOAT", "f", "1"),
			sc("SET", "f", "0x10"), sc("INCRBYFLOAT", "f", "1"), sc("INCRBYFLOAT", "list", "1"), sc("INCRBYFLOAT", "list", "x"),
			sc("SET", "t", "1.5", "EX", "100"), sc("INCRBYFLOAT", "t", "1"), sc("TTL", "t"), sc("INCRBYFLOAT", "t"),
			sc("INCRBYFLOAT", "u", "1e100"), sc("OBJECT", "ENCODING", "u"), sc("STRLEN", "u"),
		}},
	})
}

// TestDiffStringsEncodings: OBJECT ENCODING after each way of writing.
func TestDiffStringsEncodings(t *testing.T) {
	var steps [][]string
	for _, v := range []string{
		"0", "123", "-1", "-0", "01", "+1", " 1", "1 ", "12345678901234567890", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "1.5", "", strings.Repeat("a", 44), strings.Repeat("a", 45), strings.Repeat("1", 44), "10000",
	} {
		steps = append(steps,
			sc("SET", "k", v), sc("OBJECT", "ENCODING", "k"),
			sc("MSET", "k", v), sc("OBJECT", "ENCODING", "k"),
			sc("GETSET", "k", v), sc("OBJECT", "ENCODING", "k"),
			sc("DEL", "k"), sc("APPEND", "k", v), sc("OBJECT", "ENCODING", "k"),
			sc("SETEX", "k", "100", v), sc("OBJECT", "ENCODING", "k"),
		)
	}
	runStrScripts(t, []strScript{{"by value", steps}})
}

// TestDiffStringsStats compares the INFO counters the strings commands
// move: keyspace hits and misses, and rdb_changes_since_last_save.
func TestDiffStringsStats(t *testing.T) {
	p := difftest.Start(t)
	p.Do(t, "CONFIG", "RESETSTAT")
	cmds := [][]string{
		sc("SET", "a", "1"), sc("GET", "a"), sc("GET", "b"), sc("MGET", "{a}x", "a", "{a}y"), sc("SET", "a", "2", "GET"),
		sc("SET", "z", "2", "GET"), sc("GETSET", "a", "3"), sc("INCR", "a"), sc("APPEND", "a", "x"), sc("SETRANGE", "a", "0", "y"),
		sc("SETRANGE", "a", "0", ""), sc("STRLEN", "a"), sc("STRLEN", "q"), sc("GETRANGE", "a", "0", "1"), sc("GETRANGE", "q", "0", "1"),
		sc("GETEX", "a"), sc("GETEX", "q"), sc("GETEX", "a", "EX", "100"), sc("GETEX", "a", "PERSIST"), sc("GETEX", "a", "PERSIST"),
		sc("GETDEL", "a"), sc("GETDEL", "a"), sc("MSETNX", "{a}1", "1", "{a}2", "2"), sc("MSETNX", "{a}1", "1", "{a}3", "2"),
		sc("MSET", "{a}1", "1", "{a}2", "2"), sc("INCRBYFLOAT", "f", "1"), sc("SETNX", "n", "1"), sc("SETNX", "n", "1"),
		sc("SET", "n", "1", "NX"), sc("SET", "n", "1", "XX", "GET"), sc("GET", "l"), sc("INCR", "l"),
		sc("SET", "p", "v", "PXAT", "1"), sc("GETEX", "n", "PXAT", "1"),
		sc("LCS", "{a}1", "{a}2"), sc("LCS", "{a}1", "{a}q", "LEN"), sc("LCS", "l", "{l}q"), sc("SUBSTR", "n", "0", "1"),
		// FLUSHALL counts the keys it removes and nothing more (7.0
		// dropped 6.x's extra change for the command itself). EXISTS
		// first removes p, stored with a past PXAT, on both: otherwise
		// whether active expiry got to it first decides the count.
		sc("EXISTS", "p"), sc("FLUSHALL"), sc("FLUSHALL"), sc("SET", "a", "1"), sc("FLUSHDB"), sc("FLUSHDB"),
	}
	putListBoth(t, p, "l")
	for _, c := range cmds {
		_, d0n := infoBoth(t, p, "persistence", "rdb_changes_since_last_save")
		d0r, _ := infoBoth(t, p, "persistence", "rdb_changes_since_last_save")
		p.Do(t, c...)
		rh, nh := infoBoth(t, p, "stats", "keyspace_hits")
		rm, nm := infoBoth(t, p, "stats", "keyspace_misses")
		rd, nd := infoBoth(t, p, "persistence", "rdb_changes_since_last_save")
		rd, nd = delta(rd, d0r), delta(nd, d0n)
		if rh != nh || rm != nm || rd != nd {
			t.Errorf("after %q: hits/misses/changes redis %s/%s/%s, node %s/%s/%s", c, rh, rm, rd, nh, nm, nd)
		}
	}
}

// infoBoth returns an INFO field of a section from redis and from the node.
func infoBoth(t *testing.T, p *difftest.Pair, section, field string) (redis, node string) {
	t.Helper()
	a, b := p.Both(t, "INFO", section)
	return infoValue(string(a.Str), field), infoValue(string(b.Str), field)
}

// delta is the difference of two decimal counters, as text.
func delta(now, before string) string {
	a, err1 := strconv.ParseInt(now, 10, 64)
	b, err2 := strconv.ParseInt(before, 10, 64)
	if err1 != nil || err2 != nil {
		return now + "-" + before
	}
	return strconv.FormatInt(a-b, 10)
}

func infoValue(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return "<missing>"
}

// TestDiffStringsExpiryLive: relative expiry really expires, on both.
func TestDiffStringsExpiryLive(t *testing.T) {
	p := difftest.Start(t)
	p.Do(t, "SET", "a", "1", "PX", "50")
	p.Do(t, "SETEX", "{a}b", "1", "x")
	p.Do(t, "PSETEX", "{a}c", "60", "x")
	p.Do(t, "SET", "{a}d", "1")
	p.Do(t, "GETEX", "{a}d", "PX", "70")
	time.Sleep(150 * time.Millisecond)
	p.Do(t, "MGET", "a", "{a}b", "{a}c", "{a}d")
	p.Do(t, "EXISTS", "a", "{a}b", "{a}c", "{a}d")
	p.Do(t, "INCR", "a")
	p.Do(t, "SET", "a", "9", "XX")
	p.Do(t, "GET", "a")
}

// TestDiffStringsWatch: a strings write from another client aborts a
// transaction watching the key; refused writes and reads do not.
func TestDiffStringsWatch(t *testing.T) {
	cases := []struct {
		setup, write []string
	}{
		{sc("SET", "k", "1"), sc("SET", "k", "2")},
		{sc("SET", "k", "1"), sc("SET", "k", "2", "NX")},
		{sc("SET", "k", "1"), sc("APPEND", "k", "")},
		{sc("SET", "k", "1"), sc("SETRANGE", "k", "0", "")},
		{sc("SET", "k", "1"), sc("INCRBYFLOAT", "k", "1")},
		{sc("SET", "k", "1"), sc("GETEX", "k", "PERSIST")},
		{sc("SET", "k", "1", "EX", "100"), sc("GETEX", "k", "PERSIST")},
		{sc("SET", "k", "1"), sc("GETEX", "k", "EX", "100")},
		{sc("SET", "k", "1"), sc("GETDEL", "k")},
		{sc("DEL", "k"), sc("GETDEL", "k")},
		{sc("SET", "k", "1"), sc("MSETNX", "k", "2")},
		{sc("SET", "k", "x"), sc("INCR", "k")},
	}
	for i, tc := range cases {
		t.Run(strconv.Itoa(i)+" "+strings.Join(tc.write, " "), func(t *testing.T) {
			p := difftest.Start(t)
			p.Do(t, tc.setup...)
			other := p.NewConn(t)
			p.Do(t, "WATCH", "k")
			other.Do(t, tc.write...)
			p.Do(t, "MULTI")
			p.Do(t, "GET", "k")
			p.Do(t, "EXEC")
		})
	}
}
