package node_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// groupTimeTolerance is how far (ms) an idle time may differ between the
// two servers: each runs a command within milliseconds of the other, while
// an idle time that was wrongly refreshed (or not) is off by the seconds
// or the 1e8 ms the scripts put between deliveries.
const groupTimeTolerance = 500

// Deliveries far in the past (XCLAIM IDLE), and min-idle-times that tell
// them apart from fresh ones, so that which entries qualify never depends
// on milliseconds.
const (
	oldIdle  = "200000000" // delivered 2e8 ms ago
	hourIdle = "3600000"   // fresh deliveries are younger than this
	midIdle  = "300000000" // between oldIdle and ancient deliveries (TIME 0)
)

// groupSetup fills stream s with entries 1-0..6-0 (two field layouts), a
// group g at 0 and a PEL made with XCLAIM FORCE: 1-0 and 2-0 to alice
// delivered long ago, 3-0 to bob now, 4-0 to bob at time 0.
var groupSetup = [][]string{
	sc("XADD", "s", "1-0", "a", "1"), sc("XADD", "s", "2-0", "a", "2"), sc("XADD", "s", "3-0", "b", "3", "c", "x"),
	sc("XADD", "s", "4-0", "a", "4"), sc("XADD", "s", "5-0", "a", "5"), sc("XADD", "s", "6-0", "a", "6"),
	sc("XGROUP", "CREATE", "s", "g", "0"),
	sc("XCLAIM", "s", "g", "alice", "0", "1-0", "2-0", "FORCE", "IDLE", oldIdle, "JUSTID"),
	sc("XCLAIM", "s", "g", "bob", "0", "3-0", "FORCE"),
	sc("XCLAIM", "s", "g", "bob", "0", "4-0", "FORCE", "TIME", "0", "RETRYCOUNT", "5"),
	sc("SET", "str", "x"),
}

// groupScripts are hand-written cases for every consumer-group command and
// each of its errors, in Redis's order of checks. Each runs after
// groupSetup.
var groupScripts = []strScript{
	{"xgroup create", [][]string{
		sc("XGROUP", "CREATE", "nokey", "g", "0"), sc("XGROUP", "CREATE", "nokey", "g", "$"),
		sc("XGROUP", "CREATE", "nokey", "g", "$", "MKSTREAM"), sc("TYPE", "nokey"), sc("XLEN", "nokey"),
		sc("XINFO", "GROUPS", "nokey"), sc("XGROUP", "CREATE", "s", "g", "0"), sc("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"),
		sc("XGROUP", "CREATE", "s", "g2", "$"), sc("XGROUP", "CREATE", "s", "g3", "3"), sc("XGROUP", "CREATE", "s", "g4", "3-1"),
		sc("XGROUP", "CREATE", "s", "g5", "-"), sc("XGROUP", "CREATE", "s", "g5", "+"), sc("XGROUP", "CREATE", "s", "g5", "x"),
		sc("XGROUP", "CREATE", "s", "g5", "(1"), sc("XGROUP", "CREATE", "s", "g5", "18446744073709551615-18446744073709551615"),
		sc("XGROUP", "CREATE", "s", "g6", "0", "ENTRIESREAD", "3"), sc("XGROUP", "CREATE", "s", "g7", "0", "ENTRIESREAD", "-1"),
		sc("XGROUP", "CREATE", "s", "g8", "0", "ENTRIESREAD", "-2"), sc("XGROUP", "CREATE", "s", "g8", "0", "ENTRIESREAD", "x"),
		sc("XGROUP", "CREATE", "s", "g8", "0", "ENTRIESREAD"), sc("XGROUP", "CREATE", "s", "g8", "0", "FOO"),
		sc("XGROUP", "CREATE", "s", "g8", "bad", "ENTRIESREAD", "x"), sc("XGROUP", "CREATE", "nokey2", "g", "0", "ENTRIESREAD", "-5"),
		sc("XGROUP", "CREATE", "nokey2", "g", "0", "ENTRIESREAD", "-1"),
		sc("XGROUP", "CREATE", "s", "g8", "0", "ENTRIESREAD", "9223372036854775807", "mkstream"),
		sc("XGROUP", "CREATE", "s", "g9", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"),
		sc("XGROUP", "CREATE", "nokey3", "g", "0", "mkstream", "entriesread", "2", "mkstream"), sc("EXISTS", "nokey3"),
		sc("XGROUP", "CREATE", "s", "g9", "0", "MKSTREAM\x00x"), sc("XGROUP", "CREATE", "s", "g9", "$\x00x"),
		sc("XGROUP", "CREATE", "s", "", "0"), sc("XGROUP", "CREATE", "s", "bin\x00\xff\r\nname", "0"),
		sc("XGROUP", "CREATE", "s", "bin\x00\xff\r\nname", "0"), sc("XGROUP", "create", "s", "G", "0", "mkStream"),
		sc("XGROUP", "CREATE", "str", "g", "0"), sc("XGROUP", "CREATE", "str", "g", "0", "MKSTREAM"),
		sc("XGROUP", "CREATE", "str", "g", "0", "FOO"), sc("XGROUP", "CREATE", "s", "g"), sc("XGROUP", "CREATE", "s"),
		sc("XGROUP", "CREATE", "s", "g10", "0", "ENTRIESREAD", "1", "ENTRIESREAD", "2"),
		sc("XINFO", "GROUPS", "s"),
	}},
	{"xgroup setid destroy", [][]string{
		sc("XGROUP", "SETID", "s", "g", "3"), sc("XINFO", "GROUPS", "s"), sc("XGROUP", "SETID", "s", "g", "$"),
		sc("XINFO", "GROUPS", "s"), sc("XGROUP", "SETID", "s", "g", "+"), sc("XGROUP", "SETID", "s", "g", "-"),
		sc("XGROUP", "SETID", "s", "g", "2-0", "ENTRIESREAD", "2"), sc("XINFO", "GROUPS", "s"),
		sc("XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "6"), sc("XINFO", "GROUPS", "s"),
		sc("XGROUP", "SETID", "s", "g", "bad"), sc("XGROUP", "SETID", "s", "g", "(1"), sc("XGROUP", "SETID", "s", "nog", "1"),
		sc("XGROUP", "SETID", "nokey", "g", "1"), sc("XGROUP", "SETID", "str", "g", "1"),
		sc("XGROUP", "SETID", "s", "g", "bad", "entriesreadx", "3"), sc("XGROUP", "SETID", "s", "g", "bad", "entriesread", "x"),
		sc("XGROUP", "SETID", "s", "nog", "bad", "entriesread", "x"), sc("XGROUP", "SETID", "s", "nog", "1", "entriesread", "-5"),
		sc("XGROUP", "SETID", "nokey", "g", "1", "entriesread", "-5"), sc("XGROUP", "SETID", "nokey", "g", "1", "foo"),
		sc("XGROUP", "SETID", "s", "g", "1", "mkstream"), sc("XGROUP", "SETID", "nokey", "g", "1", "mkstream"),
		sc("XGROUP", "SETID", "s", "g", "1", "ENTRIESREAD", "2", "x"), sc("XGROUP", "SETID", "s", "g", "1", "ENTRIESREAD", "1", "ENTRIESREAD", "2"),
		sc("XGROUP", "SETID", "s", "nog", "1", "ENTRIESREAD", "1", "ENTRIESREAD", "2"), sc("XGROUP", "SETID", "s", "g"),
		sc("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "-1"), sc("XINFO", "GROUPS", "s"),
		sc("XGROUP", "DESTROY", "s", "nog"), sc("XGROUP", "DESTROY", "nokey", "g"), sc("XGROUP", "DESTROY", "str", "g"),
		sc("XGROUP", "DESTROY", "s", "g", "x"), sc("XGROUP", "DESTROY", "s"), sc("XGROUP", "DESTROY", "s", "g"),
		sc("XGROUP", "DESTROY", "s", "g"), sc("XINFO", "GROUPS", "s"), sc("XPENDING", "s", "g"), sc("XLEN", "s"),
		sc("XGROUP", "HELP"), sc("XGROUP", "help"), sc("XGROUP", "HELP", "x"), sc("XGROUP", "FOO"), sc("XGROUP", "FOO", "s", "g"),
		sc("XGROUP"),
	}},
	{"xgroup consumers", [][]string{
		sc("XGROUP", "CREATECONSUMER", "s", "g", "carol"), sc("XGROUP", "CREATECONSUMER", "s", "g", "carol"),
		sc("XGROUP", "CREATECONSUMER", "s", "g", ""), sc("XGROUP", "CREATECONSUMER", "s", "g", "bin\x00\xff"),
		sc("XGROUP", "CREATECONSUMER", "s", "nog", "c"), sc("XGROUP", "CREATECONSUMER", "nokey", "g", "c"),
		sc("XGROUP", "CREATECONSUMER", "str", "g", "c"), sc("XGROUP", "CREATECONSUMER", "s", "g", "c", "x"),
		sc("XGROUP", "CREATECONSUMER", "s", "g"), sc("XINFO", "CONSUMERS", "s", "g"), sc("XPENDING", "s", "g"),
		sc("XGROUP", "DELCONSUMER", "s", "g", "nobody"), sc("XGROUP", "DELCONSUMER", "s", "g", "bob"),
		sc("XPENDING", "s", "g"), sc("XPENDING", "s", "g", "-", "+", "10"), sc("XGROUP", "DELCONSUMER", "s", "g", "carol"),
		sc("XGROUP", "DELCONSUMER", "s", "nog", "c"), sc("XGROUP", "DELCONSUMER", "nokey", "g", "c"),
		sc("XGROUP", "DELCONSUMER", "str", "g", "c"), sc("XGROUP", "DELCONSUMER", "s", "g", "c", "x"),
		sc("XINFO", "CONSUMERS", "s", "g"), sc("XGROUP", "DELCONSUMER", "s", "g", "alice"), sc("XPENDING", "s", "g"),
		sc("XINFO", "GROUPS", "s"),
	}},
	{"xack", [][]string{
		sc("XACK", "nokey", "g", "1-0"), sc("XACK", "nokey", "g", "bad"), sc("XACK", "str", "g", "1-0"),
		sc("XACK", "s", "nog", "bad"), sc("XACK", "s", "g", "bad"), sc("XACK", "s", "g", "1-0", "+"), sc("XACK", "s", "g", "-"),
		sc("XACK", "s", "g", "(1-0"), sc("XACK", "s", "g", "1", "1-0", "3-0"), sc("XPENDING", "s", "g"),
		sc("XACK", "s", "g", "2-0", "2-0", "9-0"), sc("XACK", "s", "g", "3"), sc("XACK", "s", "g", "4-0"), sc("XPENDING", "s", "g"),
		sc("XACK", "s", "g"), sc("XINFO", "CONSUMERS", "s", "g"), sc("XINFO", "GROUPS", "s"),
	}},
	{"xpending", [][]string{
		sc("XPENDING", "s", "g"), sc("XPENDING", "s", "g", "-", "+", "10"), sc("XPENDING", "s", "g", "-", "+", "2"),
		sc("XPENDING", "s", "g", "-", "+", "0"), sc("XPENDING", "s", "g", "-", "+", "-1"), sc("XPENDING", "s", "g", "-", "+", "x"),
		sc("XPENDING", "s", "g", "2", "3", "10"), sc("XPENDING", "s", "g", "(1-0", "(4-0", "10"), sc("XPENDING", "s", "g", "(4-0", "(4-0", "10"),
		sc("XPENDING", "s", "g", "-", "(0-0", "10"), sc("XPENDING", "s", "g", "(18446744073709551615-18446744073709551615", "+", "10"),
		sc("XPENDING", "s", "g", "+", "-", "10"), sc("XPENDING", "s", "g", "x", "+", "1"), sc("XPENDING", "s", "g", "-", "x", "1"),
		sc("XPENDING", "s", "g", "(-", "+", "1"), sc("XPENDING", "s", "g", "-", "(+", "1"),
		sc("XPENDING", "s", "g", "-", "+", "10", "bob"), sc("XPENDING", "s", "g", "-", "+", "10", "alice"),
		sc("XPENDING", "s", "g", "-", "+", "10", "nobody"), sc("XPENDING", "s", "g", "-", "+", "10", "bob", "extra"),
		sc("XPENDING", "s", "g", "-", "+", "10", "bob", "extra", "extra2", "extra3"), sc("XPENDING", "s", "g", "-", "+"),
		sc("XPENDING", "s", "g", "-"), sc("XPENDING", "s", "g", "IDLE", "10", "-", "+"), sc("XPENDING", "s", "g", "IDLE", "x", "-", "+", "10"),
		sc("XPENDING", "s", "g", "IDLE", hourIdle, "-", "+", "10"), sc("XPENDING", "s", "g", "idle", midIdle, "-", "+", "10"),
		sc("XPENDING", "s", "g", "IDLE", "0", "-", "+", "10"), sc("XPENDING", "s", "g", "IDLE", "-5", "-", "+", "10"),
		sc("XPENDING", "s", "g", "IDLE", "9223372036854775807", "-", "+", "10"),
		sc("XPENDING", "s", "g", "IDLE", hourIdle, "-", "+", "1", "alice"), sc("XPENDING", "s", "g", "IDLE", hourIdle, "-", "+", "10", "bob"),
		sc("XPENDING", "s", "g", "IDLE", hourIdle, "-", "+", "10", "bob", "x"),
		sc("XPENDING", "nokey", "g"), sc("XPENDING", "nokey", "g", "-", "+", "10"), sc("XPENDING", "s", "nog"),
		sc("XPENDING", "str", "g"), sc("XPENDING", "str", "g", "x", "+", "1"), sc("XPENDING", "nokey", "g", "x", "+", "1"),
		sc("XPENDING", "s"), sc("XPENDING", "s", "bin\x00g"), sc("XPENDING", "s", "g", "IDLE\x00x", "0", "-", "+", "10"),
		sc("XCLAIM", "s", "bin\x00g", "c", "0", "1-0"), sc("XAUTOCLAIM", "s", "g\x00", "c", "0", "0"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT\x00x", "1"), sc("XGROUP", "SETID", "s", "g\x00x", "0"),
		sc("XGROUP", "CREATE", "s", "empty", "$"), sc("XPENDING", "s", "empty"),
		sc("XPENDING", "s", "empty", "-", "+", "10"), sc("XPENDING", "s", "empty", "IDLE", "1", "-", "+", "10"),
		sc("XGROUP", "CREATECONSUMER", "s", "g", "idle"), sc("XPENDING", "s", "g"),
	}},
	{"xclaim", [][]string{
		sc("XCLAIM", "nokey", "g", "c", "0", "1-0"), sc("XCLAIM", "str", "g", "c", "0", "1-0"), sc("XCLAIM", "s", "nog", "c", "x", "1-0"),
		sc("XCLAIM", "s", "g", "c", "x", "1-0"), sc("XCLAIM", "s", "g", "c", "0", "1-0", "FOO"), sc("XCLAIM", "s", "g", "c", "0", "+"),
		sc("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE"), sc("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE", "x"),
		sc("XCLAIM", "s", "g", "c", "0", "1-0", "TIME", "x"), sc("XCLAIM", "s", "g", "c", "0", "1-0", "RETRYCOUNT", "x"),
		sc("XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "x"), sc("XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "-"),
		sc("XCLAIM", "s", "g", "c", "0", "1-0", "JUSTID", "x"), sc("XCLAIM", "s", "g", "c", "0", "FORCE\x00x"),
		sc("XINFO", "CONSUMERS", "s", "g"), sc("XPENDING", "s", "g", "-", "+", "10"),
		// Nothing claimable: no consumer is created.
		sc("XCLAIM", "s", "g", "carol", hourIdle, "3-0", "9-0"), sc("XCLAIM", "s", "g", "carol", "0", "9-0", "FORCE"),
		sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XCLAIM", "s", "g", "carol", hourIdle, "1-0", "2-0", "3-0"), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XCLAIM", "s", "g", "dave", "0", "1-0", "JUSTID"), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XCLAIM", "s", "g", "dave", "0", "1-0", "1-0", "RETRYCOUNT", "9", "IDLE", oldIdle), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XCLAIM", "s", "g", "dave", "0", "5-0", "FORCE", "JUSTID"), sc("XCLAIM", "s", "g", "erin", "0", "6-0", "FORCE", "RETRYCOUNT", "0"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XCLAIM", "s", "g", "dave", "0", "3-0", "TIME", "-5"),
		sc("XCLAIM", "s", "g", "dave", "0", "3-0", "TIME", "99999999999999", "JUSTID"), sc("XCLAIM", "s", "g", "dave", "0", "3-0", "IDLE", "-1000"),
		sc("XCLAIM", "s", "g", "dave", "0", "4-0", "IDLE", "9223372036854775807"),
		sc("XCLAIM", "s", "g", "dave", "0", "4-0", "IDLE", "-9223372036854775808"),
		sc("XCLAIM", "s", "g", "dave", "-5", "4-0", "RETRYCOUNT", "-3", "JUSTID"), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XCLAIM", "s", "g", "dave", "0", "1-0", "LASTID", "4-0", "JUSTID"), sc("XINFO", "GROUPS", "s"),
		sc("XCLAIM", "s", "g", "dave", hourIdle, "1-0", "LASTID", "9-0"), sc("XINFO", "GROUPS", "s"),
		sc("XCLAIM", "s", "g", "dave", hourIdle, "1-0", "LASTID", "2-0"), sc("XINFO", "GROUPS", "s"),
		// Entries deleted from the stream leave the PEL and the reply.
		sc("XDEL", "s", "2-0", "5-0"), sc("XCLAIM", "s", "g", "dave", "0", "2-0", "5-0", "6-0", "FORCE"),
		sc("XPENDING", "s", "g"), sc("XPENDING", "s", "g", "-", "+", "10"), sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XCLAIM", "s", "g", "dave", "0", "1", "3", "justid", "force", "idle", "1", "time", "2", "retrycount", "3", "lastid", "5"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XCLAIM", "s", "g"),
	}},
	{"xautoclaim", [][]string{
		sc("XAUTOCLAIM", "nokey", "g", "c", "0", "0"), sc("XAUTOCLAIM", "str", "g", "c", "0", "0"),
		sc("XAUTOCLAIM", "str", "g", "c", "x", "0"), sc("XAUTOCLAIM", "s", "nog", "c", "0", "0"),
		sc("XAUTOCLAIM", "s", "g", "c", "x", "0"), sc("XAUTOCLAIM", "s", "g", "c", "0", "x"), sc("XAUTOCLAIM", "s", "g", "c", "0", "+"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "(18446744073709551615-18446744073709551615"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT"), sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "x"), sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "-1"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "576460752303423488"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "9223372036854775807"), sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "FOO"),
		sc("XAUTOCLAIM", "s", "g", "c", "0", "0", "JUSTID", "x"), sc("XAUTOCLAIM", "nokey", "g", "c", "0", "0", "COUNT", "0"),
		// Nothing idle enough: no claim, no consumer, the cursor walks.
		sc("XAUTOCLAIM", "s", "g", "carol", midIdle, "0"), sc("XAUTOCLAIM", "s", "g", "carol", hourIdle, "0", "COUNT", "1"),
		sc("XAUTOCLAIM", "s", "g", "carol", "999999999999", "0", "COUNT", "1"), sc("XINFO", "CONSUMERS", "s", "g"),
		sc("XAUTOCLAIM", "s", "g", "carol", hourIdle, "0", "COUNT", "1", "JUSTID"), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XAUTOCLAIM", "s", "g", "carol", hourIdle, "(1-0", "COUNT", "1", "JUSTID"), sc("XPENDING", "s", "g", "-", "+", "10"),
		sc("XAUTOCLAIM", "s", "g", "dave", "0", "0", "COUNT", "2"), sc("XAUTOCLAIM", "s", "g", "dave", "0", "3-0", "COUNT", "2"),
		sc("XAUTOCLAIM", "s", "g", "dave", "-1", "4", "count", "1"), sc("XAUTOCLAIM", "s", "g", "dave", "0", "5"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XINFO", "CONSUMERS", "s", "g"),
		// Deleted entries: dropped from the PEL, listed third, and they
		// count as attempts.
		sc("XCLAIM", "s", "g", "erin", "0", "5-0", "6-0", "FORCE", "IDLE", oldIdle, "JUSTID"),
		sc("XDEL", "s", "1-0", "3-0", "5-0"), sc("XAUTOCLAIM", "s", "g", "frank", hourIdle, "0", "COUNT", "1"),
		sc("XPENDING", "s", "g", "-", "+", "10"), sc("XAUTOCLAIM", "s", "g", "frank", "0", "0"), sc("XPENDING", "s", "g"),
		sc("XTRIM", "s", "MAXLEN", "0"), sc("XAUTOCLAIM", "s", "g", "frank", "0", "0", "JUSTID"), sc("XPENDING", "s", "g"),
		sc("XINFO", "CONSUMERS", "s", "g"), sc("XAUTOCLAIM", "s", "g", "c", "0"),
	}},
	{"xinfo groups consumers", [][]string{
		sc("XINFO", "GROUPS", "s"), sc("XINFO", "CONSUMERS", "s", "g"), sc("XINFO", "GROUPS", "nokey"),
		sc("XINFO", "GROUPS", "str"), sc("XINFO", "CONSUMERS", "nokey", "g"), sc("XINFO", "CONSUMERS", "str", "g"),
		sc("XINFO", "CONSUMERS", "s", "nog"), sc("XINFO", "CONSUMERS", "s", "bin\x00name"), sc("XINFO", "GROUPS", "s", "x"),
		sc("XINFO", "CONSUMERS", "s", "g", "x"), sc("XINFO", "CONSUMERS", "s"), sc("XINFO", "FOO", "s"),
		sc("XGROUP", "CREATE", "s", "b", "$"), sc("XGROUP", "CREATE", "s", "a", "3-0", "ENTRIESREAD", "3"),
		sc("XGROUP", "CREATE", "s", "c", "2-0"), sc("XINFO", "GROUPS", "s"),
		// Lag across deletions, trims and XSETID.
		sc("XDEL", "s", "5-0"), sc("XINFO", "GROUPS", "s"), sc("XADD", "s", "7-0", "a", "7"), sc("XINFO", "GROUPS", "s"),
		sc("XTRIM", "s", "MINID", "4-0"), sc("XINFO", "GROUPS", "s"), sc("XDEL", "s", "7-0"), sc("XINFO", "GROUPS", "s"),
		sc("XSETID", "s", "9-0", "ENTRIESADDED", "20", "MAXDELETEDID", "8-0"), sc("XINFO", "GROUPS", "s"),
		sc("XTRIM", "s", "MAXLEN", "0"), sc("XINFO", "GROUPS", "s"), sc("XGROUP", "SETID", "s", "a", "0-5"), sc("XINFO", "GROUPS", "s"),
		sc("XADD", "e", "1-0", "a", "1"), sc("XDEL", "e", "1-0"), sc("XGROUP", "CREATE", "e", "g", "0"),
		sc("XGROUP", "CREATE", "e", "h", "2-0"), sc("XINFO", "GROUPS", "e"),
		sc("XADD", "f", "1-0", "a", "1"), sc("XADD", "f", "2-0", "a", "1"), sc("XADD", "f", "3-0", "a", "1"), sc("XDEL", "f", "1-0"),
		sc("XGROUP", "CREATE", "f", "g", "0-5"), sc("XGROUP", "CREATE", "f", "h", "2-0"), sc("XGROUP", "CREATE", "f", "i", "1-0"),
		sc("XGROUP", "CREATE", "f", "j", "3-0"), sc("XGROUP", "CREATE", "f", "k", "4-0"), sc("XINFO", "GROUPS", "f"),
		sc("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"), sc("XGROUP", "CREATE", "m", "h", "5-0", "MKSTREAM", "ENTRIESREAD", "7"),
		sc("XINFO", "GROUPS", "m"), sc("XINFO", "CONSUMERS", "m", "g"),
	}},
	{"with xreadgroup", [][]string{
		sc("XADD", "x", "1-0", "f", "1"), sc("XADD", "x", "2-0", "f", "2"), sc("XADD", "x", "3-0", "f", "3"),
		sc("XADD", "x", "4-0", "f", "4"), sc("XADD", "x", "5-0", "f", "5"), sc("XADD", "x", "6-0", "f", "6"),
		sc("XADD", "x", "7-0", "f", "7"), sc("XADD", "x", "8-0", "f", "8"),
		sc("XGROUP", "CREATE", "x", "g", "0", "ENTRIESREAD", "0"), sc("XGROUP", "CREATE", "x", "h", "0"),
		sc("XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "x", ">"),
		sc("XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "x", ">"),
		sc("XREADGROUP", "GROUP", "h", "carol", "COUNT", "1", "STREAMS", "x", ">"),
		sc("XINFO", "GROUPS", "x"), sc("XINFO", "CONSUMERS", "x", "g"), sc("XPENDING", "x", "g"),
		sc("XPENDING", "x", "g", "-", "+", "10"), sc("XPENDING", "x", "g", "IDLE", hourIdle, "-", "+", "10"),
		sc("XACK", "x", "g", "2-0", "4-0", "7-0"), sc("XPENDING", "x", "g"),
		sc("XCLAIM", "x", "g", "bob", "0", "1-0"), sc("XCLAIM", "x", "g", "bob", hourIdle, "3-0"),
		sc("XAUTOCLAIM", "x", "g", "dave", "0", "0", "COUNT", "2"), sc("XPENDING", "x", "g", "-", "+", "10"),
		sc("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "x", "0"), sc("XDEL", "x", "3-0"),
		sc("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "x", "0"), sc("XINFO", "GROUPS", "x"),
		sc("XAUTOCLAIM", "x", "g", "erin", "0", "0", "JUSTID"), sc("XPENDING", "x", "g"),
		sc("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "x", ">"), sc("XINFO", "GROUPS", "x"),
		sc("XGROUP", "SETID", "x", "g", "0"), sc("XINFO", "GROUPS", "x"),
		sc("XREADGROUP", "GROUP", "g", "frank", "COUNT", "2", "STREAMS", "x", ">"),
		sc("XPENDING", "x", "g", "-", "+", "10"), sc("XINFO", "GROUPS", "x"),
		sc("XTRIM", "x", "MAXLEN", "3"), sc("XINFO", "GROUPS", "x"), sc("XAUTOCLAIM", "x", "g", "frank", "0", "0"),
		sc("XPENDING", "x", "g"), sc("XGROUP", "DELCONSUMER", "x", "g", "frank"), sc("XPENDING", "x", "g"),
		sc("XREADGROUP", "GROUP", "h", "carol", "NOACK", "STREAMS", "x", ">"), sc("XINFO", "GROUPS", "x"),
		sc("XPENDING", "x", "h"), sc("XGROUP", "CREATECONSUMER", "x", "h", "gina"),
		sc("XADD", "x", "9-0", "f", "9"), sc("XREADGROUP", "GROUP", "h", "gina", "STREAMS", "x", ">"),
		sc("XINFO", "CONSUMERS", "x", "h"), sc("XINFO", "GROUPS", "x"), sc("XGROUP", "DESTROY", "x", "h"),
		sc("XREADGROUP", "GROUP", "h", "gina", "STREAMS", "x", ">"), sc("XINFO", "GROUPS", "x"),
	}},
	// A group named "" is a group like any other (and its absence is
	// NOGROUP, not a missing GROUP option).
	{"empty group name", [][]string{
		sc("XREADGROUP", "GROUP", "", "c", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "", "c", "COUNT", "1", "NOACK", "STREAMS", "nokey", ">"),
		sc("XGROUP", "CREATE", "s", "", "0"), sc("XREADGROUP", "GROUP", "", "c", "COUNT", "2", "STREAMS", "s", ">"),
		sc("XREADGROUP", "GROUP", "", "", "COUNT", "1", "STREAMS", "s", ">"),
		sc("XPENDING", "s", ""), sc("XPENDING", "s", "", "-", "+", "10"), sc("XACK", "s", "", "5-0"),
		sc("XINFO", "CONSUMERS", "s", ""), sc("XGROUP", "DESTROY", "s", ""),
	}},
}

// TestDiffStreamGroups runs groupScripts against redis-server over RESP2
// and RESP3. Idle times may differ by groupTimeTolerance; everything else
// must be identical.
func TestDiffStreamGroups(t *testing.T) {
	for _, s := range groupScripts {
		t.Run(s.name, func(t *testing.T) {
			p := difftest.Start(t)
			for _, proto := range []int{2, 3} {
				p.Flush(t)
				c := p.NewConnProto(t, proto)
				for _, args := range slices.Concat(groupSetup, s.steps) {
					groupDo(t, c, args...)
				}
			}
		})
	}
}

// groupDo sends args to both servers and compares the replies, idle
// times within groupTimeTolerance.
func groupDo(t *testing.T, c *difftest.ConnPair, args ...string) difftest.Value {
	t.Helper()
	a, b := c.Both(t, args...)
	ma, ta := maskIdle(args, a)
	mb, tb := maskIdle(args, b)
	same := difftest.Equal(ma, mb) && len(ta) == len(tb)
	for i := 0; same && i < len(ta); i++ {
		if d := ta[i] - tb[i]; d > groupTimeTolerance || -d > groupTimeTolerance {
			same = false
		}
	}
	if !same {
		t.Errorf("%s", difftest.Mismatch(args, c.Proto, a, b))
	}
	return a
}

// maskIdle returns v with the idle times of XPENDING's extended form and
// XINFO CONSUMERS replaced by 0, and those times in order.
func maskIdle(args []string, v difftest.Value) (difftest.Value, []int64) {
	var times []int64
	take := func(e *difftest.Value) {
		if e.Kind == difftest.Integer {
			times = append(times, e.Int)
			*e = difftest.Int(0)
		}
	}
	cmd := strings.ToUpper(args[0])
	consumers := cmd == "XINFO" && len(args) > 1 && strings.EqualFold(args[1], "CONSUMERS")
	if !(cmd == "XPENDING" && len(args) > 3) && !consumers {
		return v, nil
	}
	if v.Kind != difftest.Array {
		return v, nil
	}
	v.Elems = slices.Clone(v.Elems)
	for i := range v.Elems {
		e := v.Elems[i]
		e.Elems = slices.Clone(e.Elems)
		switch {
		case consumers:
			for j := 0; j+1 < len(e.Elems); j += 2 {
				if string(e.Elems[j].Str) == "idle" {
					take(&e.Elems[j+1])
				}
			}
		case len(e.Elems) == 4:
			take(&e.Elems[2])
		}
		v.Elems[i] = e
	}
	return v, times
}

// groupCounterCommands are run one by one after groupSetup, each checked
// for how it moves keyspace_hits, keyspace_misses (reads looked up with
// lookupKeyRead count, even when a later argument fails) and
// rdb_changes_since_last_save (one per group or consumer made or removed,
// per entry acknowledged, claimed or dropped from a PEL).
var groupCounterCommands = [][]string{
	sc("XGROUP", "CREATE", "s", "g2", "0"), sc("XGROUP", "CREATE", "s", "g2", "0"), sc("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"),
	sc("XGROUP", "CREATE", "nokey", "g", "0"), sc("XGROUP", "SETID", "s", "g2", "3"), sc("XGROUP", "DESTROY", "s", "g2"),
	sc("XGROUP", "DESTROY", "s", "g2"), sc("XGROUP", "CREATECONSUMER", "s", "g", "carol"), sc("XGROUP", "CREATECONSUMER", "s", "g", "carol"),
	sc("XGROUP", "DELCONSUMER", "s", "g", "carol"), sc("XGROUP", "DELCONSUMER", "s", "g", "carol"),
	sc("XACK", "s", "g", "1-0", "2-0", "9-0"), sc("XACK", "s", "g", "1-0"), sc("XACK", "nokey", "g", "1-0"), sc("XACK", "str", "g", "1-0"),
	sc("XACK", "s", "g", "bad"), sc("XPENDING", "s", "g"), sc("XPENDING", "nokey", "g"), sc("XPENDING", "s", "g", "-", "+", "10"),
	sc("XPENDING", "s", "g", "bad", "+", "10"), sc("XPENDING", "s", "nog"),
	sc("XCLAIM", "s", "g", "dave", "0", "3-0", "4-0"), sc("XCLAIM", "s", "g", "dave", "0", "3-0", "JUSTID"),
	sc("XCLAIM", "s", "g", "erin", "0", "5-0", "FORCE"), sc("XCLAIM", "s", "g", "erin", "0", "9-0", "LASTID", "9-0"),
	sc("XCLAIM", "s", "g", "erin", "0", "9-0", "LASTID", "9-0"), sc("XCLAIM", "s", "g", "erin", "0", "3-0", "LASTID", "10-0"),
	sc("XCLAIM", "nokey", "g", "c", "0", "1-0"), sc("XCLAIM", "s", "g", "c", "x", "1-0"), sc("XCLAIM", "str", "g", "c", "0", "1-0"),
	sc("XDEL", "s", "3-0"), sc("XCLAIM", "s", "g", "erin", "0", "3-0", "4-0"),
	sc("XAUTOCLAIM", "s", "g", "frank", "0", "0", "COUNT", "1"), sc("XAUTOCLAIM", "s", "g", "frank", "0", "0"),
	sc("XAUTOCLAIM", "nokey", "g", "c", "x", "0"), sc("XAUTOCLAIM", "str", "g", "c", "0", "0"), sc("XAUTOCLAIM", "s", "g", "c", "0", "x"),
	sc("XINFO", "GROUPS", "s"), sc("XINFO", "GROUPS", "nokey"), sc("XINFO", "CONSUMERS", "s", "g"), sc("XINFO", "CONSUMERS", "nokey", "g"),
	sc("XINFO", "CONSUMERS", "s", "nog"),
}

// TestDiffStreamGroupCounters checks the counters each command moves,
// and that only XGROUP CREATE ... MKSTREAM (making the stream) disturbs a
// WATCH on the key: Redis signals no change for group state.
func TestDiffStreamGroupCounters(t *testing.T) {
	p := difftest.Start(t)
	c := p.NewConn(t)
	for _, args := range groupSetup {
		groupDo(t, c, args...)
	}
	for _, args := range groupCounterCommands {
		counters := func() [3][2]string {
			var out [3][2]string
			for i, f := range []string{"keyspace_hits", "keyspace_misses", "rdb_changes_since_last_save"} {
				sec := "stats"
				if i == 2 {
					sec = "persistence"
				}
				out[i][0], out[i][1] = infoBoth(t, p, sec, f)
			}
			return out
		}
		before := counters()
		groupDo(t, c, args...)
		after := counters()
		for i, name := range []string{"keyspace_hits", "keyspace_misses", "rdb_changes_since_last_save"} {
			if r, n := delta(after[i][0], before[i][0]), delta(after[i][1], before[i][1]); r != n {
				t.Errorf("after %q: %s moved by %s in redis, %s in the node", args, name, r, n)
			}
		}
	}

	p.Flush(t)
	a, b := p.NewConn(t), p.NewConn(t)
	for _, args := range groupSetup {
		groupDo(t, a, args...)
	}
	for _, write := range [][]string{
		sc("XGROUP", "CREATE", "s", "w1", "0"), sc("XGROUP", "CREATE", "w", "g", "0", "MKSTREAM"),
		sc("XGROUP", "CREATE", "s", "w1", "0", "MKSTREAM"), sc("XGROUP", "SETID", "s", "w1", "5"),
		sc("XGROUP", "CREATECONSUMER", "s", "g", "zed"), sc("XGROUP", "DELCONSUMER", "s", "g", "zed"),
		sc("XGROUP", "DESTROY", "s", "w1"), sc("XACK", "s", "g", "1-0"), sc("XCLAIM", "s", "g", "zed", "0", "2-0"),
		sc("XCLAIM", "s", "g", "zed", "0", "6-0", "FORCE", "LASTID", "9-0"), sc("XAUTOCLAIM", "s", "g", "yan", "0", "0"),
		sc("XDEL", "s", "6-0"), sc("XAUTOCLAIM", "s", "g", "yan", "0", "0"), sc("XPENDING", "s", "g"),
	} {
		key := write[2]
		if write[0] != "XGROUP" {
			key = write[1]
		}
		groupDo(t, a, "WATCH", key)
		groupDo(t, a, "MULTI")
		groupDo(t, a, "XLEN", key)
		groupDo(t, b, write...)
		groupDo(t, a, "EXEC")
	}
}
