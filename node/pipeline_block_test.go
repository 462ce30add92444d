package node_test

import (
	"io"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
)

// TestBlockingCommandInsideOneRead sends blocking commands in the middle
// of pipelines that arrive in one write. The node serves pipelines inside
// one long socket read (rawio.ReadLoop) and has to leave it for a command
// that may block; the commands before it, the blocking one and those
// after it must all be answered, in order, as Redis answers them.
func TestBlockingCommandInsideOneRead(t *testing.T) {
	checkLeaks(t)
	n := startNode(t, node.Options{}, nil)
	a, b := dialNode(t, n.addr), dialDiff(t, n.addr)
	expect := func(c *rawConn, want ...string) {
		t.Helper()
		for _, w := range want {
			got, err := c.reply()
			if err != nil || got != w {
				t.Fatalf("reply %q, %v; want %q", got, err, w)
			}
		}
	}
	write := func(c *rawConn, s string) {
		t.Helper()
		if _, err := io.WriteString(c, s); err != nil {
			t.Fatal(err)
		}
	}

	// Blocks in the middle: what came before is answered at once, what
	// follows once the push serves it.
	write(a, "SET k v\r\nBLPOP q 0\r\nGET k\r\nPING\r\n")
	expect(a, "+OK")
	waitBlockedClients(t, b, 1)
	if _, err := b.DoStrings("RPUSH", "q", "x"); err != nil {
		t.Fatal(err)
	}
	expect(a, "*[$q $x]", "$v", "+PONG")

	// Served at once, timed out, and a stream read, in one write.
	write(a, "RPUSH q y\r\nBLPOP q 0\r\nBLPOP q 0.01\r\nXADD s 1-1 f v\r\n"+
		"XREAD BLOCK 0 STREAMS s 0\r\nBRPOPLPUSH q {q}2 0.01\r\nECHO end\r\n")
	// (reply renders the timeouts of BLPOP and BRPOPLPUSH, *-1 in RESP2, as "*[]")
	expect(a, ":1", "*[$q $y]", "*[]", "$1-1", "*[*[$s *[*[$1-1 *[$f $v]]]]]", "*[]", "$end")

	// The loop is entered again afterwards: plain pipelines still work.
	write(a, "INCR n\r\nINCR n\r\nINCR n\r\n")
	expect(a, ":1", ":2", ":3")
}

// TestPipelineWrittenBeforeReading: a client that writes a whole big
// pipeline before it reads (redis-py's execute, go-redis's Pipeline) gets
// every reply: the node keeps reading while the client's socket is full
// of replies, as Redis does. Both sides waited for ever.
func TestPipelineWrittenBeforeReading(t *testing.T) {
	n := startNode(t, node.Options{}, nil)
	if err := difftest.WriteAllThenRead(n.addr, "k", 300_000, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}
