package slowlog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/slots"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestEntryArgs: what an entry keeps of a command's arguments, as Redis
// 7.0's slowlogCreateEntry and redactClientCommandArgument leave them
// (node/diff_slowlog_test.go compares whole entries with redis-server).
func TestEntryArgs(t *testing.T) {
	long := strings.Repeat("x", 130)
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprint(i))
	}
	for _, tc := range []struct{ in, want string }{
		{"GET k", "GET k"},
		{"SET k " + long, "SET k " + long[:128] + "...|(2|more|bytes)"},
		{"MGET " + strings.Join(many, " "), "MGET " + strings.Join(many[:30], " ") + " ...|(10|more|arguments)"},
		{"AUTH pw", "AUTH (redacted)"},
		{"auth user pw", "auth (redacted) (redacted)"},
		{"HELLO 3 AUTH u p SETNAME n", "HELLO 3 AUTH (redacted) (redacted) SETNAME n"},
		{"HELLO 3 SETNAME n AUTH u p", "HELLO 3 SETNAME n AUTH (redacted) (redacted)"},
		{"HELLO 4 AUTH u p", "HELLO 4 AUTH u p"},                                             // NOPROTO first
		{"HELLO 3 AUTH u p BAD AUTH v q", "HELLO 3 AUTH (redacted) (redacted) BAD AUTH v q"}, // stops at the syntax error
		{"CONFIG SET maxclients 5 REQUIREPASS pw masterauth m", "CONFIG SET maxclients 5 REQUIREPASS (redacted) masterauth (redacted)"},
	} {
		a := args(tc.in)
		cmd := slots.Lookup(a[0])
		if len(cmd.Subcommands) > 0 {
			cmd = slots.LookupSub(cmd, a[1])
		}
		got := entryArgs(cmd, a)
		var parts []string
		for _, g := range got {
			parts = append(parts, strings.ReplaceAll(string(g), " ", "|"))
		}
		if s := strings.Join(parts, " "); s != tc.want {
			t.Errorf("%.40s...: got %q, want %q", tc.in, s, tc.want)
		}
	}
}

// TestPushTrims: entries beyond slowlog-max-len go when the next one
// comes; ids go on across RESET; below the threshold nothing is kept, and
// a negative threshold keeps nothing at all.
func TestPushTrims(t *testing.T) {
	l := New()
	get := slots.Lookup([]byte("get"))
	now := time.Unix(1700000000, 0)
	l.Push(get, args("GET a"), time.Millisecond, "p", "", now)
	if l.Len() != 0 {
		t.Fatalf("1 ms below the 10 ms default was logged")
	}
	l.threshold.Store(0)
	for i := range 5 {
		l.Push(get, args(fmt.Sprint("GET ", i)), time.Duration(i)*time.Microsecond, "p", "n", now)
	}
	l.maxLen.Store(2)
	if l.Len() != 5 {
		t.Errorf("len %d right after slowlog-max-len 2, want 5 until the next push", l.Len())
	}
	l.Push(get, args("GET 5"), 0, "p", "n", now)
	if e := l.Newest(-1); len(e) != 2 || e[0].ID != 5 || e[1].ID != 4 || string(e[1].Args[1]) != "4" || e[1].Duration != 4 {
		t.Errorf("after the push: %+v", e)
	}
	l.Reset()
	l.Push(get, args("GET 6"), 0, "p", "n", now)
	if e := l.Newest(10); len(e) != 1 || e[0].ID != 6 || e[0].Time != now.Unix() {
		t.Errorf("after RESET: %+v", e)
	}
	l.threshold.Store(-1)
	l.Push(get, args("GET 7"), time.Hour, "p", "n", now)
	if l.Len() != 1 {
		t.Errorf("logged with the log off")
	}
}
