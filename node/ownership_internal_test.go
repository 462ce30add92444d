package node

import (
	"bytes"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/shardgate/shardgate/internal/clusterfmt"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// flipOwnership serves every slot or none (every slot then owned by
// 10.0.0.9:7000).
type flipOwnership struct{ mine atomic.Bool }

func (f *flipOwnership) Slot(uint16) (bool, string) {
	if f.mine.Load() {
		return true, ""
	}
	return false, "10.0.0.9:7000"
}
func (f *flipOwnership) Layout() *clusterfmt.Layout { return clusterfmt.Single("x", "", 0, 0) }
func (f *flipOwnership) Changes() <-chan struct{}   { return nil }

// TestOwnershipRecheckUnderLock: a command that passed the dispatcher's
// check just before its slot was given away (and the slot's keys
// dropped) is refused with MOVED once it holds the shard, so it cannot
// leave a key behind in a slot the node no longer serves; a blocking
// command does not register a waiter there.
func TestOwnershipRecheckUnderLock(t *testing.T) {
	own := &flipOwnership{}
	own.mine.Store(true)
	s, err := New(Options{Ownership: own, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newClient(s, a)
	s.reconcileSlots(true)

	run := func(args ...string) {
		t.Helper()
		bargs := make([][]byte, len(args))
		for i, x := range args {
			bargs[i] = []byte(x)
		}
		cmd := slots.Lookup(bargs[0])
		slot, ok := c.commandSlot(cmd, bargs)
		if !ok || s.slotRefusal(slot, false) != "" {
			t.Fatalf("%q refused before the change", args)
		}
		// The slot goes between the dispatcher's check and the run.
		own.mine.Store(false)
		s.reconcileSlots(false)
		c.w.Reset()
		switch args[0] {
		case "BLPOP":
			if w := s.serveOrRegister(c, s.ks.Shard(uint16(slot)), &blockReq{op: opPop, keys: bargs[1:2], front: true}); w != nil {
				t.Errorf("BLPOP registered a waiter in a slot given away")
			}
		case "XREAD":
			req, errText := engine.ParseXRead(bargs, false)
			if errText != "" {
				t.Fatal(errText)
			}
			if w := s.xreadOrRegister(c, s.ks.Shard(uint16(slot)), &req, bargs); w != nil {
				t.Errorf("XREAD registered a waiter in a slot given away")
			}
		default:
			s.run(c, &s.routes[cmd.ID], bargs, slot)
		}
		if want := "-MOVED " + strconv.Itoa(slot) + " 10.0.0.9:7000\r\n"; !bytes.Equal(c.w.B, []byte(want)) {
			t.Errorf("%q: %q, want %q", args, c.w.B, want)
		}
		if n := s.ks.Shard(uint16(slot)).Len(); n != 0 {
			t.Errorf("%q left %d keys in a slot given away", args, n)
		}
		if s.blk.slots[slot] != nil {
			t.Errorf("%q left waiters in a slot given away", args)
		}
		own.mine.Store(true)
		s.reconcileSlots(false)
	}
	run("SET", "k", "v")
	run("RPUSH", "list", "x")
	run("BLPOP", "empty", "0")
	run("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
}
