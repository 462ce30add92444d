package node_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
)

// Tests of the connection commands in situations the shared differential
// oracle cannot show (it has no requirepass) or that need a fixed clock.
// Expected replies were taken from redis-server 7.0.15 in cluster mode
// started with --requirepass secret.

// connDial opens a connection to a node under test, speaking proto.
func connDial(t testing.TB, addr string, proto int) *difftest.Conn {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if proto == 3 {
		connDo(t, c, "HELLO", "3")
	}
	return c
}

// connDo sends one command and returns its reply.
func connDo(t testing.TB, c *difftest.Conn, args ...string) difftest.Value {
	t.Helper()
	v, err := c.DoStrings(args...)
	if err != nil {
		t.Fatalf("%s: %v", difftest.FormatCommand(args), err)
	}
	return v
}

// connExpect sends a command and demands a reply.
func connExpect(t testing.TB, c *difftest.Conn, want difftest.Value, args ...string) {
	t.Helper()
	if got := connDo(t, c, args...); !difftest.Equal(got, want) {
		t.Errorf("%s: got %s, want %s", difftest.FormatCommand(args), got, want)
	}
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (f *fakeClock) Now() time.Time          { return time.Unix(0, f.ns.Load()) }
func (f *fakeClock) Advance(d time.Duration) { f.ns.Add(int64(d)) }

const helloNoAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"

func TestAuthWithRequirePass(t *testing.T) {
	noauth := difftest.Err("NOAUTH Authentication required.")
	wrongpass := difftest.Err("WRONGPASS invalid username-password pair or user is disabled.")
	ok := difftest.Simple("OK")
	type step struct {
		args []string
		want difftest.Value
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"commands need auth", []step{
			{[]string{"PING"}, noauth}, {[]string{"ECHO", "x"}, noauth}, {[]string{"CLIENT", "ID"}, noauth},
			{[]string{"SELECT", "0"}, noauth}, {[]string{"INFO"}, noauth},
			{[]string{"HELLO"}, difftest.Err(helloNoAuth)}, {[]string{"HELLO", "3"}, difftest.Err(helloNoAuth)},
		}},
		{"wrong passwords", []step{
			{[]string{"AUTH", "bad"}, wrongpass}, {[]string{"AUTH", "default", "bad"}, wrongpass},
			{[]string{"AUTH", "nobody", "secret"}, wrongpass}, {[]string{"HELLO", "3", "AUTH", "default", "bad"}, wrongpass},
			{[]string{"HELLO", "3", "AUTH", "foo", "secret"}, wrongpass}, {[]string{"AUTH", "a", "b", "c"}, difftest.Err("ERR syntax error")},
			{[]string{"PING"}, noauth},
		}},
		{"auth then a wrong auth keeps the session", []step{
			{[]string{"AUTH", "secret"}, ok}, {[]string{"PING"}, difftest.Simple("PONG")},
			{[]string{"AUTH", "bad"}, wrongpass}, {[]string{"PING"}, difftest.Simple("PONG")},
		}},
		{"auth with user", []step{
			{[]string{"AUTH", "default", "secret"}, ok}, {[]string{"ECHO", "x"}, difftest.BulkOf("x")},
		}},
		{"hello options apply in order", []step{
			// AUTH then a bad option: authenticated, then the syntax error.
			{[]string{"HELLO", "3", "AUTH", "default", "secret", "FOO"}, difftest.Err("ERR Syntax error in HELLO option 'FOO'")},
			{[]string{"PING"}, difftest.Simple("PONG")},
			{[]string{"CLIENT", "GETNAME"}, difftest.Value{Kind: difftest.NullBulk}},
		}},
		{"hello setname before auth sticks", []step{
			{[]string{"HELLO", "3", "SETNAME", "early"}, difftest.Err(helloNoAuth)},
			{[]string{"HELLO", "3", "SETNAME", "a b", "AUTH", "default", "bad"}, difftest.Err("ERR Client names cannot contain spaces, newlines or special characters.")},
			{[]string{"HELLO", "3", "AUTH", "default", "bad", "SETNAME", "a b"}, wrongpass},
			{[]string{"HELLO", "4", "AUTH", "default", "bad"}, difftest.Err("NOPROTO unsupported protocol version")},
			{[]string{"AUTH", "secret"}, ok}, {[]string{"CLIENT", "GETNAME"}, difftest.BulkOf("early")},
		}},
		{"reset drops authentication", []step{
			{[]string{"AUTH", "secret"}, ok}, {[]string{"RESET"}, difftest.Simple("RESET")},
			{[]string{"PING"}, noauth}, {[]string{"QUIT"}, ok},
		}},
	}
	n := startNode(t, node.Options{RequirePass: "secret"}, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := connDial(t, n.addr, 2)
			for _, st := range tt.steps {
				connExpect(t, c, st.want, st.args...)
			}
		})
	}
}

// TestHelloAuthSwitchesProtoAndLimits: HELLO 3 AUTH authenticates, which
// lifts the request limits of unauthenticated clients, and switches the
// connection to RESP3 in the same command.
func TestHelloAuthSwitchesProtoAndLimits(t *testing.T) {
	n := startNode(t, node.Options{RequirePass: "secret"}, nil)

	many := append([]string{"PING"}, strings.Split(strings.Repeat("x ", 20), " ")[:20]...)
	c := connDial(t, n.addr, 2)
	v, err := c.DoStrings(many...)
	if err != nil || v.Text() != "ERR Protocol error: unauthenticated multibulk length" {
		t.Fatalf("unauthenticated 21-argument request: %s %v", v, err)
	}

	c = connDial(t, n.addr, 2)
	v = connDo(t, c, "HELLO", "3", "AUTH", "default", "secret", "SETNAME", "svc")
	if v.Kind != difftest.Map || len(v.Elems) != 14 || v.Elems[5].Int != 3 {
		t.Fatalf("HELLO 3 AUTH: %s", v)
	}
	connExpect(t, c, difftest.Err("ERR wrong number of arguments for 'ping' command"), many...)
	connExpect(t, c, difftest.Value{Kind: difftest.Null}, "GET", "missing")
	connExpect(t, c, difftest.BulkOf("svc"), "CLIENT", "GETNAME")
	connExpect(t, c, difftest.Simple("RESET"), "RESET")
	connExpect(t, c, difftest.Err("NOAUTH Authentication required."), "GET", "missing")
	connExpect(t, c, difftest.Simple("OK"), "AUTH", "secret")
	connExpect(t, c, difftest.Value{Kind: difftest.NullBulk}, "GET", "missing")
	connExpect(t, c, difftest.Value{Kind: difftest.NullBulk}, "CLIENT", "GETNAME")
}

func TestTimeUsesNodeClock(t *testing.T) {
	clock := newFakeClock(time.Unix(1700000000, 123456789))
	n := startNode(t, node.Options{Now: clock.Now}, nil)
	c := connDial(t, n.addr, 3)
	want := difftest.ArrayOf(difftest.BulkOf("1700000000"), difftest.BulkOf("123456"))
	connExpect(t, c, want, "TIME")
	clock.Advance(1500 * time.Millisecond)
	want = difftest.ArrayOf(difftest.BulkOf("1700000001"), difftest.BulkOf("623456"))
	connExpect(t, c, want, "TIME")
}

func TestClusterKeyslotMatchesSlots(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	c := connDial(t, n.addr, 2)
	for key, slot := range map[string]int64{"foo": 12182, "{user1000}.following": 3443, "": 0, "{}x": 10595} {
		connExpect(t, c, difftest.Int(slot), "CLUSTER", "KEYSLOT", key)
	}
}
