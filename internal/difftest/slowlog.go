package difftest

import (
	"fmt"
	"strings"
	"testing"
)

// SlowlogScenario runs, with every command logged, a sequence of commands
// a proxy answers itself (PING, ECHO, CLIENT SETNAME, AUTH, MULTI,
// DISCARD, ...) and commands a node runs, in and out of transactions, and
// checks that SLOWLOG GET lists the same commands in the same order as
// redis-server's (ids, times, durations and client addresses naturally
// differ), and that LEN, GET's count and slowlog-max-len agree.
func SlowlogScenario(t *testing.T, p *Pair) {
	t.Helper()
	c := p.NewConn(t)
	t.Cleanup(func() {
		// The oracle is shared: its defaults back for the next test.
		c.Redis.DoStrings("CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128")
	})
	c.Do(t, "CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "128")
	c.Do(t, "SLOWLOG", "RESET")
	for _, args := range [][]string{
		{"CLIENT", "SETNAME", "worker"},
		{"PING"},
		{"ECHO", "hello"},
		{"SET", "{s}a", "1"},
		{"GET", "{s}a"},
		{"AUTH", "secret"},
		{"SELECT", "0"},
		{"MULTI"},
		{"SET", "{s}b", "2"},
		{"PING"},
		{"INCR", "{s}n"},
		{"EXEC"},
		{"WATCH", "{s}a"},
		{"MULTI"},
		{"GET", "{s}a"},
		{"EXEC"},
		{"MULTI"},
		{"GET", "{s}b"},
		{"DISCARD"},
		{"CLIENT", "GETNAME"},
		{"SLOWLOG", "LEN"},
		// Refused by the command itself, after it ran: logged.
		{"SLOWLOG", "GET", "abc"},
		{"SLOWLOG", "GET", "-2"},
		{"SLOWLOG", "GET", "1", "2"},
	} {
		c.Do(t, args...)
	}
	compareSlowlog(t, c, "-1")
	a, b := c.Both(t, "SLOWLOG", "LEN")
	c.Compare(t, []string{"SLOWLOG", "LEN"}, a, b)

	// Redis's "max entries is correctly handled": the newest
	// slowlog-max-len entries.
	c.Do(t, "CONFIG", "SET", "slowlog-max-len", "10")
	for i := range 30 {
		if i%3 == 0 {
			c.Do(t, "SET", "{s}c", fmt.Sprint(i))
		} else {
			c.Do(t, "PING")
		}
	}
	a, b = c.Both(t, "SLOWLOG", "LEN")
	c.Compare(t, []string{"SLOWLOG", "LEN"}, a, b)
	compareSlowlog(t, c, "5")
	compareSlowlog(t, c, "-1")
}

// compareSlowlog compares SLOWLOG GET count's commands on both servers.
func compareSlowlog(t *testing.T, c *ConnPair, count string) {
	t.Helper()
	a, b := c.Both(t, "SLOWLOG", "GET", count)
	ca, cb := slowlogCommands(t, a), slowlogCommands(t, b)
	if strings.Join(ca, "|") != strings.Join(cb, "|") {
		t.Errorf("SLOWLOG GET %s:\nredis: %q\nshardgate: %q", count, ca, cb)
	}
}

// slowlogCommands is the command of each entry of a SLOWLOG GET reply,
// its arguments joined by spaces.
func slowlogCommands(t *testing.T, v Value) []string {
	t.Helper()
	var out []string
	for _, e := range v.Elems {
		if len(e.Elems) != 6 {
			t.Fatalf("SLOWLOG GET entry %s: not 6 elements", e)
		}
		out = append(out, SlowlogEntryCommand(e))
	}
	return out
}

// SlowlogEntryCommand is the command of a SLOWLOG GET entry, its
// arguments joined by spaces.
func SlowlogEntryCommand(e Value) string {
	if len(e.Elems) < 4 {
		return ""
	}
	var words []string
	for _, a := range e.Elems[3].Elems {
		words = append(words, string(a.Str))
	}
	return strings.Join(words, " ")
}
