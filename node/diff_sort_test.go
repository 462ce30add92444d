package node_test

import (
	"strings"
	"testing"
)

// errnoReset is a failed INCRBYFLOAT, which sets redis-server's errno to
// 0: Redis 7.0's SORT reads a stale ERANGE as a failed element (see
// difftest's session.resetErrno), so every SORT that overflows is
// followed by it.
var errnoReset = sc("INCRBYFLOAT", "nokey", "x")

// sortScripts are hand-written SORT and SORT_RO cases, compared with a
// Redis 7.0 Cluster node: options and their errors in Redis's order,
// numbers as C's strtod reads them, ALPHA with NUL bytes, LIMIT
// arithmetic, BY constants and STORE.
var sortScripts = []strScript{
	{"sort numbers", [][]string{
		sc("SORT", "nokey"), sc("SORT_RO", "nokey", "DESC"), sc("RPUSH", "l", "3", "10", "-1", "2.5", "1e1", "+7", "-0", "0"),
		sc("SORT", "l"), sc("SORT", "l", "DESC"), sc("SORT", "l", "ASC", "DESC", "asc"), sc("SORT_RO", "l"),
		sc("SORT", "l", "ALPHA"), sc("SORT", "l", "alpha", "desc"), sc("LRANGE", "l", "0", "-1"),
		sc("RPUSH", "s", " 2", "", "0x10", "0X1p2", ".5", "5.", "007", "inf", "-Infinity", "INF", "2\x00z", "1.e5", "1e+2", "0x.8", "0x1."),
		sc("SORT", "s"), sc("SORT", "s", "DESC"), sc("SORT", "s", "ALPHA"),
	}},
	{"sort not numbers", [][]string{
		sc("RPUSH", "a", "1", "x"), sc("SORT", "a"), sc("SORT", "a", "ALPHA"), sc("SORT", "a", "BY", "nosort"),
		sc("SORT", "a", "STORE", "{a}d"), sc("EXISTS", "{a}d"),
		sc("RPUSH", "b", "1", "nan"), sc("SORT", "b"), sc("RPUSH", "c", "1", "3 "), sc("SORT", "c"),
		sc("RPUSH", "e", "1", "1e"), sc("SORT", "e"), sc("RPUSH", "f", "1", "0x"), sc("SORT", "f"),
		sc("RPUSH", "g", "1", "  "), sc("SORT", "g"), sc("RPUSH", "h", "1", "1_000"), sc("SORT", "h"),
		sc("RPUSH", "i", "1", "."), sc("SORT", "i"), sc("RPUSH", "j", "1", "-"), sc("SORT", "j"),
		sc("RPUSH", "k", "1", "0x1p"), sc("SORT", "k"), sc("RPUSH", "m", "1", "nan(1)"), sc("SORT", "m"),
		sc("RPUSH", "n", "1", "infx"), sc("SORT", "n"),
	}},
	{"sort out of range", [][]string{
		sc("RPUSH", "a", "1", "1e400"), sc("SORT", "a"), errnoReset,
		sc("RPUSH", "b", "1", "-1e400"), sc("SORT", "b"), errnoReset,
		sc("RPUSH", "c", "1", "1e-400"), sc("SORT", "c"), errnoReset,
		sc("RPUSH", "d", "1", "1e-310"), sc("SORT", "d"), errnoReset,
		sc("RPUSH", "e", "1", "4.9406564584124654e-324"), sc("SORT", "e"), errnoReset,
		sc("RPUSH", "f", "1", "0x1p-1075"), sc("SORT", "f"), errnoReset,
		sc("RPUSH", "g", "1", "0x1p-1074", "0x1.8p-1070", "0e-500", "0x1p-1022", "2.2250738585072014e-308", "1.7976931348623157e308"),
		sc("SORT", "g"), sc("SORT", "g", "DESC"), errnoReset,
		sc("RPUSH", "h", "1", "0x1p1024"), sc("SORT", "h"), errnoReset,
	}},
	{"sort ties and alpha", [][]string{
		sc("RPUSH", "t", "1.0", "1", "01", "1e0", "0x1", "+1", "b", "a"),
		sc("DEL", "t"), sc("RPUSH", "t", "1.0", "1", "01", "1e0", "0x1", "+1"),
		sc("SORT", "t"), sc("SORT", "t", "DESC"), sc("SORT", "t", "STORE", "{t}d"), sc("LRANGE", "{t}d", "0", "-1"),
		sc("RPUSH", "z", "a\x00b", "a\x00a", "b", "B", "a", "", "a\x00"),
		sc("SORT", "z", "ALPHA"), sc("SORT", "z", "ALPHA", "DESC"), sc("SORT", "z", "ALPHA", "LIMIT", "1", "3"),
		sc("SORT", "z", "ALPHA", "STORE", "{z}d"), sc("LRANGE", "{z}d", "0", "-1"),
		sc("SORT", "z", "ALPHA", "DESC", "STORE", "{z}d"), sc("LRANGE", "{z}d", "0", "-1"),
	}},
	{"sort limit", [][]string{
		sc("RPUSH", "l", "5", "3", "9", "1", "7"),
		sc("SORT", "l", "LIMIT", "0", "2"), sc("SORT", "l", "LIMIT", "1", "2", "DESC"), sc("SORT", "l", "LIMIT", "3", "100"),
		sc("SORT", "l", "LIMIT", "5", "1"), sc("SORT", "l", "LIMIT", "4", "1"), sc("SORT", "l", "LIMIT", "-3", "2"),
		sc("SORT", "l", "LIMIT", "1", "-1"), sc("SORT", "l", "LIMIT", "1", "0"), sc("SORT", "l", "LIMIT", "0", "0"),
		sc("SORT", "l", "LIMIT", "2", "9223372036854775807"), sc("SORT", "l", "LIMIT", "9223372036854775807", "9223372036854775807"),
		sc("SORT", "l", "LIMIT", "-9223372036854775808", "-9223372036854775808"), sc("SORT", "l", "LIMIT", "0", "1", "LIMIT", "2", "2"),
		sc("SORT", "l", "LIMIT", "x", "1"), sc("SORT", "l", "LIMIT", "1", "x"), sc("SORT", "l", "LIMIT", "1"),
		sc("SORT", "l", "LIMIT"), sc("SORT", "l", "LIMIT", "1.5", "2"), sc("SORT", "l", "LIMIT", "9223372036854775808", "1"),
		sc("SORT", "l", "LIMIT", "0", "2", "STORE", "{l}d"), sc("LRANGE", "{l}d", "0", "-1"),
		sc("SORT", "nokey", "LIMIT", "0", "2"), sc("SORT", "nokey", "LIMIT", "5", "1"),
	}},
	{"sort by constant", [][]string{
		sc("RPUSH", "l", "c", "a", "b", "d", "e"),
		sc("SORT", "l", "BY", "nosort"), sc("SORT", "l", "BY", "nosort", "DESC"), sc("SORT", "l", "BY", "x"),
		sc("SORT", "l", "BY", "nosort", "LIMIT", "1", "2"), sc("SORT", "l", "BY", "nosort", "LIMIT", "1", "2", "DESC"),
		sc("SORT", "l", "BY", "nosort", "LIMIT", "3", "100", "DESC"), sc("SORT", "l", "BY", "nosort", "LIMIT", "5", "1"),
		sc("SORT", "l", "BY", "nosort", "LIMIT", "-1", "-1", "DESC"), sc("SORT", "l", "BY", "nosort", "ALPHA"),
		sc("SORT", "l", "BY", "a\x00*"), sc("SORT", "l", "BY", "w_*"), sc("SORT", "l", "BY", "*"),
		sc("SORT", "l", "BY", "{l}w_*"), sc("SORT", "l", "BY", "nosort", "STORE", "{l}d", "DESC"), sc("LRANGE", "{l}d", "0", "-1"),
	}},
	{"sort options and errors", [][]string{
		sc("SORT"), sc("SORT_RO"), sc("SORT", "l", "FOO"), sc("SORT", "l", "GET", "#"), sc("SORT", "l", "GET", "w_*"),
		sc("SORT", "l", "GET"), sc("SORT", "l", "BY"), sc("SORT", "l", "STORE"), sc("SORT_RO", "l", "STORE", "{l}d"),
		sc("SORT", "l", "LIMIT", "x", "1", "BY", "w_*"), sc("SORT", "l", "BY", "w_*", "LIMIT", "x", "1"),
		sc("SORT", "l", "GET", "#", "FOO"), sc("SORT", "l", "FOO", "GET", "#"), sc("SORT", "l", "asc\x00x", "desc"),
		sc("SET", "str", "1"), sc("SORT", "str"), sc("SORT", "str", "FOO"), sc("SORT", "str", "BY", "nosort"),
		sc("XADD", "st", "1-1", "f", "v"), sc("SORT", "st"), sc("SORT_RO", "st", "ALPHA"),
		sc("SORT", "nokey", "STORE", "{nokey}d"), sc("RPUSH", "l", "2", "1"), sc("SORT", "l", "STORE", "d"),
	}},
	{"sort store", [][]string{
		sc("RPUSH", "l", "3", "1", "2"), sc("SET", "{l}d", "x", "EX", "100"), sc("SORT", "l", "STORE", "{l}d"),
		sc("TYPE", "{l}d"), sc("TTL", "{l}d"), sc("LRANGE", "{l}d", "0", "-1"), sc("OBJECT", "ENCODING", "{l}d"),
		sc("SORT", "l", "STORE", "{l}d", "STORE", "{l}e"), sc("LRANGE", "{l}e", "0", "-1"),
		sc("SORT", "{l}nokey", "STORE", "{l}d"), sc("EXISTS", "{l}d"), sc("SORT", "{l}nokey", "STORE", "{l}d"),
		sc("SORT", "l", "STORE", "l", "DESC"), sc("LRANGE", "l", "0", "-1"), sc("SORT", "l", "LIMIT", "5", "5", "STORE", "l"),
		sc("EXISTS", "l"), sc("RPUSH", "m", "1", "x"), sc("SET", "{m}d", "keep"), sc("SORT", "m", "STORE", "{m}d"),
		sc("GET", "{m}d"), sc("RPUSH", "big", strings.Repeat("9", 9000), "1", strings.Repeat("8", 9000)),
		sc("SORT", "big", "ALPHA", "STORE", "{big}d"), sc("LRANGE", "{big}d", "0", "-1"), sc("LLEN", "{big}d"),
	}},
}

func TestDiffSort(t *testing.T) { runStrScripts(t, sortScripts) }
