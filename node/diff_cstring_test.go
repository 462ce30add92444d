package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffOptionsAsCStrings: Redis compares option keywords with
// strcasecmp and parses a SCAN cursor with strtoul, so an argument is read
// up to its first NUL byte: "NX\x00junk" is NX, and a cursor starting with
// NUL is 0. Every command family's options, against a real redis-server.
func TestDiffOptionsAsCStrings(t *testing.T) {
	p := difftest.Start(t)
	runConnSteps(t, p.NewConn(t), []connStep{
		cs("SET", "{t}a", "hello"),
		cs("EXPIRE", "{t}a", "100", "NX\x00"), cs("PEXPIRE", "{t}a", "200000", "GT\x00x"), cs("TTL", "{t}a"),
		cs("EXPIREAT", "{t}a", "99999999999", "XX\x00"), cs("PEXPIREAT", "{t}a", "1", "LT\x00"),
		cs("SET", "{t}a", "hello"),
		cs("LCS", "{t}a", "{t}a", "LEN\x00"),
		cs("LCS", "{t}a", "{t}a", "IDX\x00", "MINMATCHLEN\x00", "2", "WITHMATCHLEN\x00"),
		cs("COPY", "{t}a", "{t}b", "REPLACE\x00"), cs("COPY", "{t}a", "{t}b", "DB\x00", "0", "REPLACE"),
		cs("DEL", "{t}b"),
		cs("SCAN", "0", "COUNT\x00", "10"), cs("SCAN", "0", "TYPE", "string\x00"), cs("SCAN", "0", "TYPE\x00", "list"),
		cs("SCAN", "\x00"), cs("SCAN", "\x001", "MATCH\x00", "*"), cs("SCAN", "+\x00"), cs("SCAN", "-"),
		cs("PFADD", "{t}h", "x"), cs("PFDEBUG", "ENCODING\x00", "{t}h"), cs("PFDEBUG", "GETREG\x00", "{t}h"),
		cs("LPUSH", "{t}l", "a", "b", "a"),
		cs("LPOS", "{t}l", "a", "RANK\x00", "-1", "COUNT\x00", "0", "MAXLEN\x00", "0"),
		cs("LMOVE", "{t}l", "{t}l", "LEFT\x00", "RIGHT\x00x"), cs("LMPOP", "1", "{t}l", "RIGHT\x00", "COUNT\x00", "2"),
		cs("RPUSH", "{t}l", "c", "d"),
		cs("BLMOVE", "{t}l", "{t}l", "left\x00z", "RIGHT\x00", "0"), cs("BLMPOP", "0", "1", "{t}l", "left\x00", "count\x00z", "2"),
		cs("BLMOVE", "{t}none", "{t}l", "LEFT\x00", "right", "0.01"), cs("BLMPOP", "0.01", "1", "{t}none", "RIGHT\x00", "COUNT", "-2"),
		cs("BLMOVE", "{t}a", "{t}l", "LEFT\x00", "right", "0.01"),
		cs("SORT", "{t}l", "ALPHA", "STORE\x00", "{u}d"), cs("SORT", "{t}l", "ALPHA", "store\x00z", "{t}d"), cs("LRANGE", "{t}d", "0", "-1"),
		cs("SORT", "{t}l", "GET\x00", "#", "ALPHA", "STORE\x00", "{t}d"), cs("COMMAND", "GETKEYS", "SORT", "{t}l", "STORE\x00", "{u}d"),
		cs("BITOP", "AND\x00", "{t}d", "{t}a"), cs("BITCOUNT", "{t}a", "0", "-1", "BIT\x00"),
		cs("BITFIELD", "{t}a", "OVERFLOW", "SAT\x00", "INCRBY", "u8", "0", "1"),
		cs("XADD", "{t}s", "MAXLEN\x00", "~", "10", "1-1", "f", "v"), cs("XRANGE", "{t}s", "-", "+", "COUNT\x00", "1"),
		cs("XGROUP", "CREATE", "{t}s", "g", "0", "MKSTREAM\x00"), cs("XINFO", "STREAM", "{t}s", "FULL\x00", "COUNT", "1"),
		// Numbers, unlike keywords, are read whole: a NUL makes them
		// invalid (string2ld checks strtold's end is the value's end).
		cs("SET", "{t}f", "inf\x00"), cs("INCRBYFLOAT", "{t}f", "1"), cs("INCRBYFLOAT", "{t}g", "-inf\x00x"),
		cs("SET", "{t}f", "1"), cs("INCRBYFLOAT", "{t}f", "2\x00"), cs("INCRBY", "{t}f", "2\x00"), cs("EXPIRE", "{t}f", "10\x00"),
	})
}

// TestDiffConnOptionsAsCStrings: the connection and server commands read
// their keywords up to the first NUL as well (strcasecmp), and the errors
// that echo an argument stop there (%s), while names looked up in a table
// (a user, a config parameter) must match whole.
//
// A config name with a NUL in it is left out: Redis hashes the whole name
// but compares up to the NUL, so CONFIG SET "maxclients\x00" succeeds only
// when the hash, seeded per process, happens to land in maxclients' bucket
// (1 start in 200 here). The node always refuses it, as Redis nearly
// always does.
func TestDiffConnOptionsAsCStrings(t *testing.T) {
	p := difftest.Start(t)
	runConnSteps(t, p.NewConn(t), []connStep{
		cs("CLIENT", "LIST", "TYPE", "a\x00b"), cs("CLIENT", "LIST", "TYPE\x00", "bogus"),
		cs("CLIENT", "KILL", "TYPE\x00z", "pubsub"), cs("CLIENT", "KILL", "TYPE", "pubsub\x00x"),
		cs("CLIENT", "KILL", "TYPE", "a\x00b"), cs("CLIENT", "KILL", "USER", "a\x00b"),
		cs("CLIENT", "KILL", "USER", "default\x00"), cs("CLIENT", "KILL", "ID", "999", "SKIPME\x00", "no\x00x"),
		cs("HELLO", "3", "a\x00b"), cs("HELLO", "2", "SETNAME\x00q", "nm", "bogus"), cs("CLIENT", "GETNAME"),
		cs("CONFIG", "SET", "a\x00b", "1"),
		cs("CONFIG", "SET", "maxmemory", "0\x00"), cs("CONFIG", "SET", "maxmemory", "\x000"), cs("CONFIG", "SET", "maxmemory", "1gb\x00z"),
		cs("CONFIG", "GET", "maxmemory"), cs("CONFIG", "SET", "maxmemory", "0"),
		cs("CONFIG", "SET", "latency-tracking", "yes\x00"), cs("CONFIG", "SET", "maxmemory-policy", "noeviction\x00"),
		cs("CONFIG", "SET", "appendonly", "no\x00z"), cs("CONFIG", "SET", "maxclients", "10000\x00"),
		cs("CONFIG", "SET", "notify-keyspace-events", "\x00z"), cs("CONFIG", "SET", "lazyfree-lazy-eviction", "no\x00"),
		cs("CONFIG", "SET", "client-output-buffer-limit", "pubsub 32mb 8mb 60\x00z"), cs("CONFIG", "SET", "maxmemory-clients", "0\x00"),
		cs("CONFIG", "SET", "save", "\x00 x"), cs("CONFIG", "SET", "shutdown-on-sigint", "default\x00 x"),
		cs("CONFIG", "SET", "oom-score-adj-values", "0 200 800\x00 x"), cs("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0\x00 x"),
		cs("CONFIG", "SET", "shutdown-on-sigterm", "default\x00"), cs("CONFIG", "SET", "shutdown-on-sigterm", "default\x00 bogus"),
		cs("CONFIG", "GET", "maxc*\x00z"), cs("CONFIG", "GET", "maxclients\x00"), cs("CONFIG", "GET", "maxclients\x00*"),
		cs("INFO", "cluster\x00z"), cs("INFO", "CLUSTER\x00", "nosuch"), cs("LATENCY", "GRAPH", "ev\x00z"),
		cs("CLIENT", "NO-EVICT", "on\x00x"), cs("CLIENT", "NO-EVICT", "of\x00f"),
		cs("CLIENT", "UNBLOCK", "12345", "TIMEOUT\x00"), cs("CLIENT", "UNBLOCK", "12345", "ERR\x00OR"),
		cs("COMMAND", "LIST", "FILTERBY\x00", "PATTERN\x00", "getd*"),
		cs("CLUSTER", "REPLICAS", "a\x00b"), cs("CLUSTER", "COUNT-FAILURE-REPORTS", "a\x00b"),
		cs("CLIENT", "REPLY", "on\x00x"), cs("PING"),
	})
}
