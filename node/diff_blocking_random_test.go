package node_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffBlockingRandom interleaves blocking commands from three
// consumer connections with pushes, moves, deletes, type changes,
// transactions and CLIENT UNBLOCKs from a producer connection, on keys of
// one slot, against a real redis-server and the node. After every step it
// demands the same set of blocked consumers on both (CLIENT LIST's 'b'
// flag, which both servers clear the instant a client is served) and the
// same replies, so FIFO order, multi-key choice, chains and rotations are
// compared element by element.
func TestDiffBlockingRandom(t *testing.T) {
	seeds := 6
	steps := 120
	if testing.Short() {
		seeds = 2
	}
	p := difftest.Start(t)
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runBlockingRandom(t, p, uint64(seed), steps)
		})
	}
}

// consumerState is one consumer connection pair and its client ids.
type consumerState struct {
	c        *difftest.ConnPair
	rid, nid string
	pending  []string // the blocking command sent, while blocked
}

func runBlockingRandom(t *testing.T, p *difftest.Pair, seed uint64, steps int) {
	p.Flush(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	proto := 2 + int(seed%2)
	keys := []string{"{r}a", "{r}b", "{r}c", "{r}d"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	side := func() string { return []string{"LEFT", "RIGHT"}[rng.IntN(2)] }
	elem := 0
	elems := func(n int) []string {
		var out []string
		for range n {
			elem++
			out = append(out, fmt.Sprint("e", elem))
		}
		return out
	}

	prod := p.NewConnProto(t, proto)
	ctl := p.NewConn(t)
	cons := make([]*consumerState, 3)
	for i := range cons {
		c := p.NewConnProto(t, proto)
		r, n := c.Both(t, "CLIENT", "ID")
		cons[i] = &consumerState{c: c, rid: fmt.Sprint(r.Int), nid: fmt.Sprint(n.Int)}
	}
	var history []string
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nhistory:\n  %s", seed, fmt.Sprintf(format, a...), strings.Join(history, "\n  "))
	}

	blockingCmd := func() []string {
		switch rng.IntN(5) {
		case 0, 1:
			name := []string{"BLPOP", "BRPOP"}[rng.IntN(2)]
			args := []string{name}
			for range 1 + rng.IntN(3) {
				args = append(args, key())
			}
			return append(args, "0")
		case 2:
			return []string{"BLMOVE", key(), key(), side(), side(), "0"}
		case 3:
			return []string{"BRPOPLPUSH", key(), key(), "0"}
		default:
			n := 1 + rng.IntN(2)
			args := []string{"BLMPOP", "0", fmt.Sprint(n)}
			for range n {
				args = append(args, key())
			}
			args = append(args, side())
			if rng.IntN(2) == 0 {
				args = append(args, "COUNT", fmt.Sprint(1+rng.IntN(3)))
			}
			return args
		}
	}
	producerCmd := func() [][]string {
		switch rng.IntN(10) {
		case 0, 1, 2:
			return [][]string{append([]string{[]string{"LPUSH", "RPUSH"}[rng.IntN(2)], key()}, elems(1+rng.IntN(3))...)}
		case 3:
			return [][]string{{"LMOVE", key(), key(), side(), side()}}
		case 4:
			return [][]string{{"DEL", key()}}
		case 5:
			return [][]string{{"SET", key(), "str"}}
		case 6:
			return [][]string{{"RENAME", key(), key()}}
		case 7:
			return [][]string{{"MULTI"}, append([]string{"RPUSH", key()}, elems(2)...),
				{"LPOP", key()}, append([]string{"LPUSHX", key()}, elems(1)...), {"EXEC"}}
		case 8:
			return [][]string{{"LRANGE", key(), "0", "-1"}}
		default:
			return [][]string{{"RPOP", key(), fmt.Sprint(rng.IntN(3))}}
		}
	}

	for step := 0; step < steps; step++ {
		switch r := rng.IntN(10); {
		case r < 4: // a free consumer sends a blocking command
			var free []*consumerState
			for _, c := range cons {
				if c.pending == nil {
					free = append(free, c)
				}
			}
			if len(free) == 0 {
				continue
			}
			c := free[rng.IntN(len(free))]
			args := blockingCmd()
			history = append(history, fmt.Sprintf("consumer %s: %s", c.rid, difftest.FormatCommand(args)))
			c.pending = args
			c.c.Do(t, "ECHO", "mark") // CLIENT LIST's cmd= then tells when args has run
			send(t, c.c, args)
			// This consumer's outcome first: once known, its command's
			// effects on the others (a BLMOVE feeding them) are complete.
			settle(t, ctl, []*consumerState{c}, fail)
			settle(t, ctl, cons, fail)
		case r < 9: // the producer runs commands
			for _, args := range producerCmd() {
				history = append(history, "producer: "+difftest.FormatCommand(args))
				if a, b := doBoth(t, prod, args); !prod.Compare(t, args, a, b) {
					fail("reply differs")
				}
			}
			settle(t, ctl, cons, fail)
		default: // CLIENT UNBLOCK a consumer
			c := cons[rng.IntN(len(cons))]
			mode := []string{"TIMEOUT", "ERROR"}[rng.IntN(2)]
			history = append(history, fmt.Sprintf("producer: CLIENT UNBLOCK %s %s", c.rid, mode))
			a, err := prod.Redis.DoStrings("CLIENT", "UNBLOCK", c.rid, mode)
			if err != nil {
				t.Fatal(err)
			}
			b, err := prod.Node.DoStrings("CLIENT", "UNBLOCK", c.nid, mode)
			if err != nil {
				t.Fatal(err)
			}
			if !difftest.Equal(a, b) {
				fail("CLIENT UNBLOCK: redis %s, node %s", a, b)
			}
			settle(t, ctl, cons, fail)
		}
	}
	for _, c := range cons {
		if c.pending != nil {
			prod.Redis.DoStrings("CLIENT", "UNBLOCK", c.rid)
			prod.Node.DoStrings("CLIENT", "UNBLOCK", c.nid)
		}
	}
	settle(t, ctl, cons, fail)
	for _, k := range keys {
		if a, b := doBoth(t, prod, []string{"TYPE", k}); !prod.Compare(t, []string{"TYPE", k}, a, b) {
			fail("final TYPE %s differs", k)
		}
		a, b := doBoth(t, prod, []string{"LRANGE", k, "0", "-1"})
		if a.Kind != difftest.Error && !prod.Compare(t, []string{"LRANGE", k, "0", "-1"}, a, b) {
			fail("final LRANGE %s differs", k)
		}
	}
}

func send(t *testing.T, c *difftest.ConnPair, args []string) {
	t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	if err := c.Redis.Send(b...); err != nil {
		t.Fatal(err)
	}
	if err := c.Node.Send(b...); err != nil {
		t.Fatal(err)
	}
}

func doBoth(t *testing.T, c *difftest.ConnPair, args []string) (difftest.Value, difftest.Value) {
	t.Helper()
	return c.Both(t, args...)
}

// settle waits until every consumer with a command pending is, on each
// server, either blocked or answered; answered ones must be answered on
// both, with the same reply.
func settle(t *testing.T, ctl *difftest.ConnPair, cons []*consumerState, fail func(string, ...any)) {
	t.Helper()
	for _, c := range cons {
		if c.pending == nil {
			continue
		}
		rb := waitOutcome(t, ctl.Redis, c.c.Redis, c.rid, c.pending)
		nb := waitOutcome(t, ctl.Node, c.c.Node, c.nid, c.pending)
		switch {
		case rb.blocked && nb.blocked:
			continue
		case rb.blocked != nb.blocked:
			fail("consumer %s (%s): redis blocked=%v (%s), node blocked=%v (%s)", c.rid,
				difftest.FormatCommand(c.pending), rb.blocked, rb.reply, nb.blocked, nb.reply)
		case !difftest.Equal(rb.reply, nb.reply):
			fail("consumer %s (%s): redis replied %s, node %s", c.rid, difftest.FormatCommand(c.pending), rb.reply, nb.reply)
		}
		c.pending = nil
	}
}

type outcome struct {
	blocked bool
	reply   difftest.Value
}

// waitOutcome finds out whether conn's pending command left its client
// (id) blocked or answered it. CLIENT LIST names the client's last command
// and flags it 'b' while it is blocked; a client whose last command is the
// pending one and is not blocked has its reply on the way.
func waitOutcome(t *testing.T, ctl, conn *difftest.Conn, id string, pending []string) outcome {
	t.Helper()
	name := strings.ToLower(pending[0])
	deadline := time.Now().Add(5 * time.Second)
	for {
		flags, cmd := clientFlags(t, ctl, id)
		if cmd == name {
			if strings.Contains(flags, "b") {
				return outcome{blocked: true}
			}
			// Not blocked: answered, or (on the node, for an instant)
			// started and not yet blocked. A short read tells.
			conn.Timeout = 20 * time.Millisecond
			v, err := conn.Receive()
			conn.Timeout = 0
			if err == nil {
				return outcome{reply: v}
			}
			if !isTimeout(err) {
				t.Fatalf("client %s: %v", id, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %s never ran %s (last command %s)", id, name, cmd)
		}
		time.Sleep(time.Millisecond)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// clientFlags returns the flags= and cmd= fields of client id's CLIENT
// LIST line.
func clientFlags(t *testing.T, ctl *difftest.Conn, id string) (flags, cmd string) {
	t.Helper()
	v, err := ctl.DoStrings("CLIENT", "LIST", "ID", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(v.Str)) {
		if s, ok := strings.CutPrefix(f, "flags="); ok {
			flags = s
		}
		if s, ok := strings.CutPrefix(f, "cmd="); ok {
			cmd = s
		}
	}
	return flags, cmd
}
