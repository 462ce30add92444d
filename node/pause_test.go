package node_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestPausedClientKilledOrClosed: a client whose command a pause holds is
// not let go by CLIENT UNBLOCK, is by CLIENT KILL (the held write never
// runs) and when the node closes, however long the pause.
func TestPausedClientKilledOrClosed(t *testing.T) {
	srv, addr, _ := nodetest.Start(t, node.Options{}, nil)
	a, b := dialDiff(t, addr), dialDiff(t, addr)
	a.DoStrings("SET", "k", "before")
	bID, _ := b.DoStrings("CLIENT", "ID")
	if v, _ := a.DoStrings("CLIENT", "PAUSE", "60000", "WRITE"); v.Text() != "OK" {
		t.Fatalf("CLIENT PAUSE: %v", v)
	}
	if err := b.Send([]byte("SET"), []byte("k"), []byte("held")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	// Not blocked on a key: CLIENT UNBLOCK leaves it held (Redis 7.0.15
	// crashes on this, "Unknown btype in replyToBlockedClientTimedOut()";
	// later Redis answers 0).
	if v, _ := a.DoStrings("CLIENT", "UNBLOCK", strconv.FormatInt(bID.Int, 10)); v.Int != 0 {
		t.Fatalf("CLIENT UNBLOCK of a held client: %v, want 0", v)
	}
	if v, _ := a.DoStrings("CLIENT", "KILL", "ID", strconv.FormatInt(bID.Int, 10)); v.Int != 1 {
		t.Fatalf("CLIENT KILL ID of the held client: %v, want 1", v)
	}
	b.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
	if v, err := b.Receive(); err == nil {
		t.Fatalf("killed while held: got %v, want the connection closed", v)
	}
	a.DoStrings("CLIENT", "UNPAUSE")
	if v, _ := a.DoStrings("GET", "k"); v.Text() != "before" {
		t.Fatalf("GET after the held SET's client was killed: %v, want before", v)
	}

	c := dialDiff(t, addr)
	a.DoStrings("CLIENT", "PAUSE", "60000", "ALL")
	if err := c.Send([]byte("PING")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s with a client held by a 60 s pause")
	}
}

// TestPauseManyHeld: many clients held by one pause are all counted
// blocked, all go on at CLIENT UNPAUSE, and the count returns to 0.
func TestPauseManyHeld(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	a := dialDiff(t, addr)
	if v, _ := a.DoStrings("CLIENT", "PAUSE", "60000", "WRITE"); v.Text() != "OK" {
		t.Fatalf("CLIENT PAUSE: %v", v)
	}
	const n = 20
	replies := make(chan string, n)
	for range n {
		c := dialDiff(t, addr)
		go func() {
			v, err := c.DoStrings("INCR", "counter")
			if err != nil {
				replies <- err.Error()
				return
			}
			replies <- v.String()
		}()
	}
	blocked := func() string {
		info, _ := a.DoStrings("INFO", "clients")
		for _, line := range strings.Split(info.Text(), "\r\n") {
			if v, ok := strings.CutPrefix(line, "blocked_clients:"); ok {
				return v
			}
		}
		return ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for blocked() != strconv.Itoa(n) {
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients %s with %d clients held, want %d", blocked(), n, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.DoStrings("CLIENT", "UNPAUSE")
	for range n {
		select {
		case r := <-replies:
			if !strings.HasPrefix(r, "int:") {
				t.Fatalf("held INCR replied %s", r)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a held INCR had no reply 5 s after CLIENT UNPAUSE")
		}
	}
	if v, _ := a.DoStrings("GET", "counter"); v.Text() != strconv.Itoa(n) {
		t.Fatalf("counter %v after %d held INCRs", v, n)
	}
	if b := blocked(); b != "0" {
		t.Fatalf("blocked_clients %s after the pause, want 0", b)
	}
}

// TestExpiryHold: SHARDGATE EXPIRY-HOLD ms (a proxy's CLIENT PAUSE) keeps
// expired keys stored, holding no client, until its time runs out or a
// hold of 0 lifts it; it wants a password like any command.
func TestExpiryHold(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{RequirePass: "pw"}, nil)
	c := dialDiff(t, addr)
	expect := replyChecker(t, c)
	expect(`error:"NOAUTH Authentication required."`, "SHARDGATE", "EXPIRY-HOLD", "1000")
	expect(`simple:"OK"`, "AUTH", "pw")
	expect(`error:"ERR wrong number of arguments for 'shardgate|expiry-hold' command"`, "SHARDGATE", "EXPIRY-HOLD")
	expect(`error:"ERR timeout is not an integer or out of range"`, "SHARDGATE", "EXPIRY-HOLD", "-1")
	expect(`error:"ERR timeout is not an integer or out of range"`, "SHARDGATE", "expiry-hold", "x")
	// Without gossip the node has no other SHARDGATE command.
	expect(`error:"ERR unknown command 'SHARDGATE', with args beginning with: 'PLAN' "`, "SHARDGATE", "PLAN")

	expect(`simple:"OK"`, "SET", "k", "v", "PX", "20")
	expect(`simple:"OK"`, "SHARDGATE", "EXPIRY-HOLD", "60000")
	time.Sleep(100 * time.Millisecond)
	expect(`null-bulk`, "GET", "k")
	expect(`int:1`, "DBSIZE")              // expired, still stored
	expect(`simple:"OK"`, "SET", "w", "v") // nothing is held
	expect(`simple:"OK"`, "SHARDGATE", "EXPIRY-HOLD", "0")
	expect(`null-bulk`, "GET", "k") // removed now
	expect(`int:1`, "DBSIZE")

	// Holds merge: a shorter one does not cut a longer one short.
	expect(`simple:"OK"`, "SET", "k", "v", "PX", "20")
	expect(`simple:"OK"`, "SHARDGATE", "EXPIRY-HOLD", "60000")
	expect(`simple:"OK"`, "SHARDGATE", "EXPIRY-HOLD", "1")
	time.Sleep(100 * time.Millisecond)
	expect(`null-bulk`, "GET", "k") // still held: not removed
	expect(`int:2`, "DBSIZE")
	expect(`simple:"OK"`, "SHARDGATE", "EXPIRY-HOLD", "0")
	expect(`null-bulk`, "GET", "k")
	expect(`int:1`, "DBSIZE")

	// A hold runs out by itself.
	expect(`simple:"OK"`, "SET", "k", "v", "PX", "20")
	expect(`simple:"OK"`, "SHARDGATE", "EXPIRY-HOLD", "150")
	time.Sleep(50 * time.Millisecond)
	expect(`null-bulk`, "GET", "k")
	expect(`int:2`, "DBSIZE")
	time.Sleep(200 * time.Millisecond)
	expect(`null-bulk`, "GET", "k")
	expect(`int:1`, "DBSIZE")
}
