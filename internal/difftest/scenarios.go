package difftest

import (
	"strings"
	"testing"
)

// PasswordClearedScenario runs on p a sequence Redis 7.0 answers by its
// authRequired, which looks at the password set now: a client that
// connected while a password was set is refused until the password is
// cleared, then served; set again, it is refused again; HELLO, which
// looks at the client's own state only, keeps refusing it throughout.
// The password is cleared at the end.
func PasswordClearedScenario(t *testing.T, p *Pair) {
	t.Helper()
	admin := p.NewConn(t)
	admin.Do(t, "CONFIG", "SET", "requirepass", "secret")
	a := p.NewConn(t)
	a.Do(t, "GET", "x")
	admin.Do(t, "AUTH", "secret")
	admin.Do(t, "CONFIG", "SET", "requirepass", "")
	a.Do(t, "GET", "x")
	a.Do(t, "SET", "x", "1")
	a.Do(t, "HELLO", "3")
	admin.Do(t, "CONFIG", "SET", "requirepass", "again")
	a.Do(t, "GET", "x")
	b := p.NewConn(t)
	b.Do(t, "GET", "x")
	admin.Do(t, "CONFIG", "SET", "requirepass", "")
	b.Do(t, "GET", "x")
	a.Do(t, "RESET")
	a.Do(t, "GET", "x")
}

// UnauthenticatedScenario compares the refusals a client meets before
// AUTH for Redis commands shardgate does not serve, with and without
// keys, and for unknown ones: Redis looks a command up and checks its
// arity before it asks for authentication.
func UnauthenticatedScenario(t *testing.T, p *Pair) {
	t.Helper()
	admin := p.NewConn(t)
	admin.Do(t, "CONFIG", "SET", "requirepass", "secret")
	a := p.NewConn(t)
	for _, args := range [][]string{
		{"PUBLISH", "ch", "m"}, {"publish", "ch"}, {"SUBSCRIBE", "ch"}, {"PSUBSCRIBE"},
		{"PUBSUB"}, {"PUBSUB", "CHANNELS"}, {"PUBSUB", "NOSUCH"}, {"FUNCTION", "LIST"},
		{"SCRIPT", "FLUSH"}, {"SCRIPT", "EXISTS"}, {"ACL", "WHOAMI"}, {"ACL", "NOSUCH"},
		{"WAIT", "0", "0"}, {"WAIT", "0"}, {"REPLICAOF", "NO", "ONE"}, {"LATENCY", "DOCTOR"},
		{"CLIENT", "TRACKING", "on"}, {"CLIENT", "TRACKING"}, {"CLIENT", "NOSUCH"}, {"CLIENT"},
		{"HSET", "h", "f", "v"}, {"HSET", "h"}, {"EVAL", "return 1", "0"}, {"NOSUCH", "x"},
		{"GET", "x"}, {"GET"}, {"CONFIG"}, {"CONFIG", "NOSUCH"},
	} {
		a.Do(t, args...)
	}
	admin.Do(t, "AUTH", "secret")
	admin.Do(t, "CONFIG", "SET", "requirepass", "")
}

// CommandsProcessedScenario compares total_commands_processed after
// sequences whose commands Redis counts only if call() runs them: not
// those refused before running (unknown, arity, NOAUTH) nor those MULTI
// queues, which count when EXEC runs them. Keys share a slot.
func CommandsProcessedScenario(t *testing.T, p *Pair) {
	t.Helper()
	cases := [][][]string{
		{{"NOSUCH"}, {"GET"}, {"GET", "{t}a"}},
		{{"MULTI"}, {"GET", "{t}a", "b", "c"}, {"SET", "{t}a", "1"}, {"EXEC"}},
		{{"MULTI"}, {"SET", "{t}a", "2"}, {"INCR", "{t}a"}, {"EXEC"}},
		{{"MULTI"}, {"SET", "{t}a", "2"}, {"DISCARD"}},
		{{"EXEC"}, {"DISCARD"}, {"INCR", "{t}a", "b"}, {"MSET", "{t}a"}},
	}
	field := func(info []byte) string {
		for _, line := range strings.Split(string(info), "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
				return v
			}
		}
		return ""
	}
	for _, cmds := range cases {
		p.Do(t, "CONFIG", "RESETSTAT")
		for _, c := range cmds {
			p.Do(t, c...)
		}
		r, n := p.Both(t, "INFO", "stats")
		if got, want := field(n.Str), field(r.Str); got != want || got == "" {
			t.Errorf("after %q: total_commands_processed %q, Redis %q", cmds, got, want)
		}
	}
}
