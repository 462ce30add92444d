package node_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestPushAfterBlockedClientCloses closes a blocked client's connection
// and at once pushes (or adds) from another: the element must stay for
// the living, as in Redis, which reads the close before it runs the push.
// The node's reader of a blocked client notices the close a moment later
// than the push can arrive, and the element used to go to the dead client
// (43 of 50 rounds lost it).
func TestPushAfterBlockedClientCloses(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c := dialDiff(t, addr)
	if _, err := c.DoStrings("XGROUP", "CREATE", "{j}s", "g", "$", "MKSTREAM"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		block []string
		push  []string
		check []string // its integer reply must be 1 (streams: see below)
	}{
		{"BLPOP", []string{"BLPOP", "{j}q", "0"}, []string{"RPUSH", "{j}q", "job"}, []string{"LLEN", "{j}q"}},
		{"BRPOP two keys", []string{"BRPOP", "{j}q2", "{j}q", "0"}, []string{"RPUSH", "{j}q", "job"}, []string{"LLEN", "{j}q"}},
		{"BLMPOP", []string{"BLMPOP", "0", "1", "{j}q", "LEFT"}, []string{"RPUSH", "{j}q", "job"}, []string{"LLEN", "{j}q"}},
		{"BLMOVE", []string{"BLMOVE", "{j}q", "{j}work", "LEFT", "RIGHT", "0"}, []string{"RPUSH", "{j}q", "job"}, []string{"LLEN", "{j}q"}},
		{"XREADGROUP NOACK", []string{"XREADGROUP", "GROUP", "g", "dead", "NOACK", "BLOCK", "0", "STREAMS", "{j}s", ">"},
			[]string{"XADD", "{j}s", "*", "f", "v"}, []string{"XREADGROUP", "GROUP", "g", "live", "NOACK", "STREAMS", "{j}s", ">"}},
	}
	for _, tc := range cases {
		for _, kill := range []bool{false, true} {
			name := tc.name
			if kill {
				name += " killed"
			}
			t.Run(name, func(t *testing.T) { pushAfterGone(t, c, addr, tc.name, tc.block, tc.push, tc.check, kill) })
		}
	}
}

// pushAfterGone runs one case of TestPushAfterBlockedClientCloses: the
// blocked client closes its connection, or (kill) is killed by CLIENT
// KILL sent in one write with the push, which Redis runs in order: the
// kill unblocks the client before the push can serve it.
func pushAfterGone(t *testing.T, c *difftest.Conn, addr, name string, block, push, check []string, kill bool) {
	rounds := 20
	if kill {
		// The killed client's goroutines notice the close a moment after
		// CLIENT KILL returns; the push wins that race a few times in a
		// hundred.
		rounds = 150
	}
	for round := range rounds {
		c.DoStrings("DEL", "{j}q")
		c.DoStrings("DEL", "{j}work")
		blocked := dialDiff(t, addr)
		id, err := blocked.DoStrings("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		var args [][]byte
		for _, a := range block {
			args = append(args, []byte(a))
		}
		if err := blocked.Send(args...); err != nil {
			t.Fatal(err)
		}
		waitBlockedClients(t, c, 1)
		if kill {
			var raw []byte
			for _, cmd := range [][]string{{"CLIENT", "KILL", "ID", strconv.FormatInt(id.Int, 10)}, push} {
				raw = append(raw, "*"+strconv.Itoa(len(cmd))+"\r\n"...)
				for _, a := range cmd {
					raw = append(raw, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
				}
			}
			if err := c.WriteRaw(raw); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Receive(); err != nil || v.Int != 1 {
				t.Fatalf("CLIENT KILL ID: %v %v", v, err)
			}
			if _, err := c.Receive(); err != nil {
				t.Fatal(err)
			}
			blocked.Close()
		} else {
			blocked.Close()
			if _, err := c.DoStrings(push...); err != nil {
				t.Fatal(err)
			}
		}
		v, err := c.DoStrings(check...)
		if err != nil {
			t.Fatal(err)
		}
		if name == "XREADGROUP NOACK" {
			// The entry is still there for a living consumer.
			if len(v.Elems) != 1 || len(v.Elems[0].Elems) != 2 || len(v.Elems[0].Elems[1].Elems) != 1 {
				t.Fatalf("round %d: a living consumer read %v: the entry went to the gone client", round, v)
			}
			continue
		}
		if v.Int != 1 {
			t.Fatalf("round %d: %v = %v: the element went to the gone client", round, check, v)
		}
	}
}

// waitBlockedClients waits until INFO counts n blocked clients.
func waitBlockedClients(t *testing.T, c *difftest.Conn, n int) {
	t.Helper()
	want := "blocked_clients:" + strconv.Itoa(n)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := c.DoStrings("INFO", "clients")
		if blockedLine(string(v.Str)) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", want, blockedLine(string(v.Str)))
		}
		time.Sleep(time.Millisecond)
	}
}

func dialDiff(t *testing.T, addr string) *difftest.Conn {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// replyChecker returns a function that sends args on c and reports a
// reply other than want (difftest's rendering of it).
func replyChecker(t *testing.T, c *difftest.Conn) func(want string, args ...string) {
	return func(want string, args ...string) {
		t.Helper()
		v, err := c.DoStrings(args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.String(); got != want {
			t.Errorf("%q: %s, want %s", args, got, want)
		}
	}
}

// TestKilledClientRunsNothingMore: nothing a client sent runs after a
// CLIENT KILL of it answered, neither the rest of its pipeline nor a
// blocking pop sent just before the kill (difftest.KilledClientScenario).
func TestKilledClientRunsNothingMore(t *testing.T) {
	difftest.KilledClientScenario(t, difftest.Start(t), 30)
}
