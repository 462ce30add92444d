package node_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// listScripts are hand-written cases for every list command and each of
// its errors, in Redis's order of checks.
var listScripts = []strScript{
	{"push", [][]string{
		sc("LPUSH", "l", "a"), sc("LPUSH", "l", "b", "c"), sc("RPUSH", "l", "d", "e", "f"), sc("LRANGE", "l", "0", "-1"),
		sc("LPUSH", "l"), sc("RPUSH", "l"), sc("LPUSH"), sc("lpush", "l", ""), sc("RPUSH", "l", "\x00bin\xff"),
		sc("LRANGE", "l", "0", "-1"), sc("LLEN", "l"), sc("LPUSHX", "nokey", "a"), sc("RPUSHX", "nokey", "a", "b"),
		sc("EXISTS", "nokey"), sc("LPUSHX", "l", "x", "y"), sc("RPUSHX", "l", "z"), sc("LRANGE", "l", "0", "-1"),
		sc("LPUSHX", "l"), sc("RPUSH", "big", strings.Repeat("x", 10000), strings.Repeat("y", 20000), "s"),
		sc("LPUSH", "big", strings.Repeat("z", 9000)), sc("LRANGE", "big", "0", "-1"), sc("LLEN", "big"),
		sc("TYPE", "l"), sc("OBJECT", "ENCODING", "l"), sc("OBJECT", "ENCODING", "big"),
	}},
	{"pop", [][]string{
		sc("LPOP", "nokey"), sc("RPOP", "nokey"), sc("LPOP", "nokey", "2"), sc("RPOP", "nokey", "0"),
		sc("LPOP", "nokey", "-1"), sc("LPOP", "nokey", "x"), sc("LPOP", "l", "1", "2"), sc("RPOP", "l", "1", "2", "3"),
		sc("RPUSH", "l", "a", "b", "c", "d", "e"), sc("LPOP", "l"), sc("RPOP", "l"), sc("LPOP", "l", "0"),
		sc("LPOP", "l", "-1"), sc("LPOP", "l", "abc"), sc("LPOP", "l", "1.5"), sc("RPOP", "l", "2"),
		sc("LPOP", "l", "5"), sc("EXISTS", "l"), sc("RPUSH", "l", "a", "b", "c"), sc("RPOP", "l", "9223372036854775807"),
		sc("EXISTS", "l"), sc("RPUSH", "l", "a"), sc("LPOP", "l"), sc("EXISTS", "l"), sc("LPOP", "l"),
		sc("RPUSH", "l", "x", "y"), sc("RPOP", "l", "1"), sc("LPOP", "l", "1"), sc("EXISTS", "l"),
		sc("LPOP", "l", "9223372036854775808"), sc("LPOP", "l", "-0"), sc("LPOP", "l", "+1"),
	}},
	{"llen lindex lrange", [][]string{
		sc("LLEN", "nokey"), sc("LINDEX", "nokey", "0"), sc("LINDEX", "nokey", "abc"), sc("LRANGE", "nokey", "0", "-1"),
		sc("LRANGE", "nokey", "a", "b"), sc("RPUSH", "l", "a", "b", "c", "d", "e"),
		sc("LINDEX", "l", "0"), sc("LINDEX", "l", "4"), sc("LINDEX", "l", "5"), sc("LINDEX", "l", "-1"),
		sc("LINDEX", "l", "-5"), sc("LINDEX", "l", "-6"), sc("LINDEX", "l", "abc"), sc("LINDEX", "l", "9223372036854775807"),
		sc("LINDEX", "l", "-9223372036854775808"), sc("LINDEX", "l", "1.0"), sc("LINDEX", "l"), sc("LLEN", "l", "x"),
		sc("LRANGE", "l", "0", "-1"), sc("LRANGE", "l", "1", "2"), sc("LRANGE", "l", "-2", "-1"), sc("LRANGE", "l", "-100", "100"),
		sc("LRANGE", "l", "3", "1"), sc("LRANGE", "l", "5", "10"), sc("LRANGE", "l", "-1", "-2"), sc("LRANGE", "l", "0", "0"),
		sc("LRANGE", "l", "x", "1"), sc("LRANGE", "l", "1", "x"), sc("LRANGE", "l", "-9223372036854775808", "9223372036854775807"),
		sc("LRANGE", "l", "9223372036854775807", "-9223372036854775808"), sc("LRANGE", "l", "0"),
	}},
	{"lset", [][]string{
		sc("LSET", "nokey", "0", "v"), sc("LSET", "nokey", "x", "v"), sc("RPUSH", "l", "a", "b", "c"),
		sc("LSET", "l", "0", "A"), sc("LSET", "l", "-1", "C"), sc("LSET", "l", "3", "x"), sc("LSET", "l", "-4", "x"),
		sc("LSET", "l", "abc", "x"), sc("LSET", "l", "1", strings.Repeat("b", 9000)), sc("LRANGE", "l", "0", "-1"),
		sc("LSET", "l", "1", ""), sc("LRANGE", "l", "0", "-1"), sc("LSET", "l", "0"), sc("LSET", "l", "9223372036854775807", "x"),
	}},
	{"linsert", [][]string{
		sc("LINSERT", "nokey", "BEFORE", "a", "x"), sc("LINSERT", "nokey", "middle", "a", "x"),
		sc("RPUSH", "l", "a", "b", "a"), sc("LINSERT", "l", "BEFORE", "a", "x"), sc("LINSERT", "l", "after", "a", "y"),
		sc("LRANGE", "l", "0", "-1"), sc("LINSERT", "l", "before", "nope", "z"), sc("LINSERT", "l", "AFTER", "b", ""),
		sc("LINSERT", "l", "aft", "b", "q"), sc("LINSERT", "l", "BEFORE", "b"), sc("LRANGE", "l", "0", "-1"),
		sc("LINSERT", "l", "AFTER", "", "e"), sc("LRANGE", "l", "0", "-1"),
	}},
	{"lrem", [][]string{
		sc("LREM", "nokey", "0", "a"), sc("LREM", "nokey", "x", "a"), sc("RPUSH", "l", "a", "b", "a", "c", "a", "b", "a"),
		sc("LREM", "l", "1", "a"), sc("LRANGE", "l", "0", "-1"), sc("LREM", "l", "-2", "a"), sc("LRANGE", "l", "0", "-1"),
		sc("LREM", "l", "0", "b"), sc("LRANGE", "l", "0", "-1"), sc("LREM", "l", "5", "zz"), sc("LREM", "l", "abc", "a"),
		sc("LREM", "l", "-9223372036854775808", "a"), sc("LRANGE", "l", "0", "-1"), sc("LREM", "l", "0", "c"),
		sc("EXISTS", "l"), sc("LREM", "l", "1"), sc("RPUSH", "l", "x", "x", "x"), sc("LREM", "l", "9223372036854775807", "x"),
		sc("EXISTS", "l"),
	}},
	{"ltrim", [][]string{
		sc("LTRIM", "nokey", "0", "1"), sc("LTRIM", "nokey", "a", "1"), sc("RPUSH", "l", "a", "b", "c", "d", "e"),
		sc("LTRIM", "l", "1", "-2"), sc("LRANGE", "l", "0", "-1"), sc("LTRIM", "l", "0", "100"), sc("LRANGE", "l", "0", "-1"),
		sc("LTRIM", "l", "-100", "1"), sc("LRANGE", "l", "0", "-1"), sc("LTRIM", "l", "x", "1"), sc("LTRIM", "l", "1", "x"),
		sc("LTRIM", "l", "1", "0"), sc("EXISTS", "l"), sc("RPUSH", "l", "a", "b"), sc("LTRIM", "l", "5", "10"),
		sc("EXISTS", "l"), sc("RPUSH", "l", "a", "b"), sc("LTRIM", "l", "-1", "-1"), sc("LRANGE", "l", "0", "-1"),
		sc("LTRIM", "l", "-9223372036854775808", "9223372036854775807"), sc("LRANGE", "l", "0", "-1"), sc("LTRIM", "l", "0"),
	}},
	{"lpos", [][]string{
		sc("LPOS", "nokey", "a"), sc("LPOS", "nokey", "a", "COUNT", "0"), sc("LPOS", "nokey", "a", "RANK", "0"),
		sc("RPUSH", "l", "a", "b", "c", "a", "b", "c", "a"), sc("LPOS", "l", "a"), sc("LPOS", "l", "c"), sc("LPOS", "l", "z"),
		sc("LPOS", "l", "a", "RANK", "2"), sc("LPOS", "l", "a", "RANK", "-1"), sc("LPOS", "l", "a", "RANK", "-3"),
		sc("LPOS", "l", "a", "RANK", "4"), sc("LPOS", "l", "a", "RANK", "0"), sc("LPOS", "l", "a", "RANK", "x"),
		sc("LPOS", "l", "a", "RANK", "-9223372036854775808"), sc("LPOS", "l", "a", "RANK", "9223372036854775807"),
		sc("LPOS", "l", "a", "COUNT", "0"), sc("LPOS", "l", "a", "COUNT", "2"), sc("LPOS", "l", "a", "COUNT", "-1"),
		sc("LPOS", "l", "a", "COUNT", "x"), sc("LPOS", "l", "z", "COUNT", "0"), sc("LPOS", "l", "a", "COUNT", "0", "RANK", "-1"),
		sc("LPOS", "l", "a", "COUNT", "2", "RANK", "2"), sc("LPOS", "l", "a", "MAXLEN", "3"), sc("LPOS", "l", "a", "MAXLEN", "4", "RANK", "2"),
		sc("LPOS", "l", "a", "MAXLEN", "-1"), sc("LPOS", "l", "a", "MAXLEN", "x"), sc("LPOS", "l", "a", "MAXLEN", "0", "COUNT", "0"),
		sc("LPOS", "l", "c", "RANK", "-1", "MAXLEN", "1"), sc("LPOS", "l", "c", "RANK", "-1", "MAXLEN", "2"),
		sc("LPOS", "l", "a", "RANK"), sc("LPOS", "l", "a", "foo"), sc("LPOS", "l", "a", "COUNT", "1", "COUNT", "3"),
		sc("LPOS", "l", "a", "rank", "-9223372036854775808", "count", "2"), sc("LPOS", "l"),
	}},
	{"lmove rpoplpush", [][]string{
		sc("LMOVE", "nokey", "{nokey}d", "LEFT", "RIGHT"), sc("RPOPLPUSH", "nokey", "{nokey}d"),
		sc("LMOVE", "l", "{l}d", "UP", "LEFT"), sc("LMOVE", "l", "{l}d", "LEFT", "DOWN"),
		sc("RPUSH", "l", "a", "b", "c"), sc("LMOVE", "l", "{l}d", "LEFT", "RIGHT"), sc("LMOVE", "l", "{l}d", "right", "left"),
		sc("LRANGE", "l", "0", "-1"), sc("LRANGE", "{l}d", "0", "-1"), sc("RPOPLPUSH", "l", "{l}d"), sc("EXISTS", "l"),
		sc("LRANGE", "{l}d", "0", "-1"), sc("LMOVE", "{l}d", "{l}d", "LEFT", "RIGHT"), sc("LRANGE", "{l}d", "0", "-1"),
		sc("LMOVE", "{l}d", "{l}d", "RIGHT", "LEFT"), sc("LRANGE", "{l}d", "0", "-1"), sc("RPOPLPUSH", "{l}d", "{l}d"),
		sc("LRANGE", "{l}d", "0", "-1"), sc("LMOVE", "{l}d", "{l}d", "LEFT", "LEFT"), sc("LRANGE", "{l}d", "0", "-1"),
		sc("RPUSH", "one", "x"), sc("LMOVE", "one", "one", "LEFT", "RIGHT"), sc("LRANGE", "one", "0", "-1"),
		sc("SET", "{l}s", "str"), sc("LMOVE", "{l}d", "{l}s", "LEFT", "LEFT"), sc("RPOPLPUSH", "{l}s", "{l}d"),
		sc("LRANGE", "{l}d", "0", "-1"), sc("LMOVE", "{l}nokey", "{l}s", "LEFT", "LEFT"), sc("LMOVE", "l", "x", "LEFT", "LEFT"),
		sc("LMOVE", "l", "{l}d", "LEFT"), sc("RPOPLPUSH", "l"),
	}},
	{"lmpop", [][]string{
		sc("LMPOP", "1", "nokey", "LEFT"), sc("LMPOP", "2", "{a}1", "{a}2", "RIGHT", "COUNT", "3"),
		sc("LMPOP", "0", "{a}1", "LEFT"), sc("LMPOP", "-1", "{a}1", "LEFT"), sc("LMPOP", "x", "{a}1", "LEFT"),
		sc("LMPOP", "2", "{a}1", "LEFT"), sc("LMPOP", "3", "{a}1", "LEFT"), sc("LMPOP", "1", "{a}1", "UP"),
		sc("LMPOP", "1", "{a}1", "LEFT", "COUNT"), sc("LMPOP", "1", "{a}1", "LEFT", "COUNT", "0"),
		sc("LMPOP", "1", "{a}1", "LEFT", "COUNT", "-1"), sc("LMPOP", "1", "{a}1", "LEFT", "COUNT", "x"),
		sc("LMPOP", "1", "{a}1", "LEFT", "COUNT", "1", "COUNT", "1"), sc("LMPOP", "1", "{a}1", "LEFT", "FOO"),
		sc("RPUSH", "{a}2", "a", "b", "c", "d"), sc("LMPOP", "2", "{a}1", "{a}2", "LEFT"),
		sc("LMPOP", "2", "{a}1", "{a}2", "RIGHT", "COUNT", "2"), sc("LMPOP", "2", "{a}1", "{a}2", "left", "count", "10"),
		sc("EXISTS", "{a}2"), sc("RPUSH", "{a}1", "x"), sc("RPUSH", "{a}2", "y"), sc("LMPOP", "2", "{a}2", "{a}1", "LEFT"),
		sc("LMPOP", "2", "{a}2", "{a}1", "LEFT"), sc("SET", "{a}3", "s"), sc("LMPOP", "2", "{a}3", "{a}1", "LEFT"),
		sc("RPUSH", "{a}1", "z"), sc("LMPOP", "2", "{a}1", "{a}3", "LEFT"), sc("LMPOP", "2", "{a}4", "{a}3", "LEFT"),
		sc("LMPOP", "1", "{a}1", "LEFT", "COUNT", "9223372036854775807"), sc("LMPOP", "1"), sc("LMPOP", "1", "{a}1"),
		sc("LMPOP", "9223372036854775807", "{a}1", "LEFT"),
	}},
	{"wrongtype", [][]string{
		sc("SET", "s", "v"), sc("LPUSH", "s", "a"), sc("RPUSH", "s", "a"), sc("LPUSHX", "s", "a"), sc("RPUSHX", "s", "a"),
		sc("LPOP", "s"), sc("RPOP", "s", "2"), sc("LPOP", "s", "0"), sc("LLEN", "s"), sc("LRANGE", "s", "0", "-1"),
		sc("LRANGE", "s", "x", "0"), sc("LINDEX", "s", "0"), sc("LINDEX", "s", "x"), sc("LSET", "s", "0", "v"),
		sc("LSET", "s", "x", "v"), sc("LINSERT", "s", "BEFORE", "a", "b"), sc("LINSERT", "s", "X", "a", "b"),
		sc("LREM", "s", "0", "a"), sc("LTRIM", "s", "0", "1"), sc("LPOS", "s", "a"), sc("LPOS", "s", "a", "RANK", "0"),
		sc("LMOVE", "s", "{s}d", "LEFT", "LEFT"), sc("RPOPLPUSH", "s", "s"), sc("LMPOP", "1", "s", "LEFT"),
		sc("RPUSH", "l", "a", "b"), sc("GET", "l"), sc("SET", "{l}x", "1"), sc("MGET", "l", "{l}x"), sc("APPEND", "l", "x"),
		sc("STRLEN", "l"), sc("GETRANGE", "l", "0", "1"), sc("SETRANGE", "l", "0", "x"), sc("INCR", "l"), sc("DECRBY", "l", "2"),
		sc("INCRBYFLOAT", "l", "1"), sc("GETSET", "l", "x"), sc("GETDEL", "l"), sc("GETEX", "l"), sc("SETNX", "l", "x"),
		sc("SETBIT", "l", "1", "1"), sc("GETBIT", "l", "1"), sc("BITCOUNT", "l"), sc("BITPOS", "l", "1"),
		sc("BITFIELD", "l", "GET", "u8", "0"), sc("BITFIELD_RO", "l", "GET", "u8", "0"), sc("PFADD", "l", "a"),
		sc("PFCOUNT", "l"), sc("BITOP", "AND", "{l}d", "l"), sc("SET", "l", "x", "GET"), sc("LLEN", "l"),
		sc("SET", "l", "now a string"), sc("TYPE", "l"), sc("GET", "l"), sc("LLEN", "l"),
	}},
	{"keyspace", [][]string{
		sc("RPUSH", "l", "a", "b", "c"), sc("TYPE", "l"), sc("EXISTS", "l"), sc("OBJECT", "ENCODING", "l"),
		sc("OBJECT", "REFCOUNT", "l"), sc("EXPIRE", "l", "100"), sc("TTL", "l"), sc("PERSIST", "l"), sc("TTL", "l"),
		sc("COPY", "l", "{l}c"), sc("LPUSH", "l", "z"), sc("LSET", "{l}c", "0", "A"), sc("LRANGE", "l", "0", "-1"),
		sc("LRANGE", "{l}c", "0", "-1"), sc("TYPE", "{l}c"), sc("COPY", "l", "{l}c"), sc("COPY", "l", "{l}c", "REPLACE"),
		sc("LRANGE", "{l}c", "0", "-1"), sc("RENAME", "l", "{l}r"), sc("EXISTS", "l"), sc("LRANGE", "{l}r", "0", "-1"),
		sc("RENAMENX", "{l}r", "{l}c"), sc("SET", "{l}s", "x"), sc("RENAME", "{l}s", "{l}r"), sc("TYPE", "{l}r"),
		sc("RENAME", "{l}c", "{l}r"), sc("TYPE", "{l}r"), sc("DEL", "{l}r"), sc("UNLINK", "{l}c"), sc("EXISTS", "{l}r", "{l}c"),
		sc("RPUSH", "l", "x"), sc("PEXPIRE", "l", "100000"), sc("RPUSH", "l", "y"), sc("TTL", "l"), // not PTTL: a millisecond may pass between the servers
		sc("LPOP", "l", "2"), sc("TTL", "l"), sc("EXISTS", "l"), sc("RPUSH", "l", "x"), sc("TTL", "l"),
		sc("EXPIRE", "l", "0"), sc("EXISTS", "l"), sc("TOUCH", "l"), sc("OBJECT", "ENCODING", "nokey"),
		sc("RPUSH", "l", "x"), sc("SET", "s", "v"), sc("SCAN", "0", "TYPE", "list", "COUNT", "1000"),
		sc("SCAN", "0", "TYPE", "LIST", "COUNT", "1000"), sc("SCAN", "0", "TYPE", "string", "COUNT", "1000"),
		sc("SCAN", "0", "TYPE", "list", "MATCH", "nomatch", "COUNT", "1000"),
	}},
}

func TestDiffLists(t *testing.T) {
	for _, s := range listScripts {
		t.Run(s.name, func(t *testing.T) {
			p := difftest.Start(t)
			for _, proto := range []int{2, 3} {
				p.Flush(t)
				for _, args := range s.steps {
					p.DoProto(t, proto, args...)
				}
			}
		})
	}
}

// TestDiffListsLong covers lists spanning many chunks: pushes at both ends
// of thousands of elements of mixed sizes, then ranges, indexes, inserts,
// sets, removals and trims that land inside and across chunks.
func TestDiffListsLong(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConn(t)
	elem := func(i int) string {
		switch i % 7 {
		case 0:
			return strings.Repeat("v", i%300)
		case 1:
			return "a"
		default:
			return "e" + strconv.Itoa(i)
		}
	}
	for round := 0; round < 10; round++ {
		args := []string{"RPUSH", "L"}
		largs := []string{"LPUSH", "L"}
		for i := 0; i < 300; i++ {
			args = append(args, elem(round*300+i))
			largs = append(largs, elem(round*700+i))
		}
		c.Do(t, args...)
		c.Do(t, largs...)
	}
	c.Do(t, "LLEN", "L")
	c.Do(t, "LRANGE", "L", "0", "-1")
	for _, i := range []string{"0", "1", "777", "2999", "3000", "-1", "-3000", "5999", "6000"} {
		c.Do(t, "LINDEX", "L", i)
		c.Do(t, "LRANGE", "L", i, "4000")
	}
	c.Do(t, "LSET", "L", "3000", strings.Repeat("B", 10000))
	c.Do(t, "LSET", "L", "100", "small")
	c.Do(t, "LINSERT", "L", "BEFORE", "e1505", strings.Repeat("I", 5000))
	c.Do(t, "LINSERT", "L", "AFTER", "a", "after-a")
	c.Do(t, "LPOS", "L", "a", "RANK", "-3", "COUNT", "5")
	c.Do(t, "LPOS", "L", "a", "COUNT", "0", "MAXLEN", "1000")
	c.Do(t, "LREM", "L", "-100", "a")
	c.Do(t, "LREM", "L", "50", "a")
	c.Do(t, "LRANGE", "L", "0", "-1")
	c.Do(t, "LREM", "L", "0", "a")
	c.Do(t, "LRANGE", "L", "0", "-1")
	c.Do(t, "LPOP", "L", "777")
	c.Do(t, "RPOP", "L", "1234")
	c.Do(t, "LTRIM", "L", "100", "-200")
	c.Do(t, "LRANGE", "L", "0", "-1")
	c.Do(t, "LMPOP", "1", "L", "RIGHT", "COUNT", "100000")
	c.Do(t, "EXISTS", "L")
}

// TestDiffListsWatch: every list change touches WATCHers as Redis's
// signalModifiedKey does, LTRIM even when it removes nothing, and failed
// LINSERT/LREM/LSET do not.
func TestDiffListsWatch(t *testing.T) {
	p := difftest.Start(t)
	a, b := p.NewConn(t), p.NewConn(t)
	for _, change := range [][]string{
		{"LTRIM", "l", "0", "-1"}, {"LINSERT", "l", "BEFORE", "nope", "x"}, {"LREM", "l", "0", "nope"},
		{"LSET", "l", "100", "x"}, {"LSET", "l", "0", "x"}, {"RPUSHX", "l", "y"}, {"LPOS", "l", "x"},
		{"LMOVE", "l", "l", "LEFT", "RIGHT"}, {"LINSERT", "l", "AFTER", "x", "z"}, {"LREM", "l", "1", "z"},
		{"RPOP", "l", "0"}, {"LMPOP", "1", "l", "LEFT"},
	} {
		a.Do(t, "DEL", "l")
		a.Do(t, "RPUSH", "l", "x", "y", "z")
		a.Do(t, "WATCH", "l")
		b.Do(t, change...)
		a.Do(t, "MULTI")
		a.Do(t, "LLEN", "l")
		a.Do(t, "EXEC")
	}
}
