package difftest

import "testing"

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
