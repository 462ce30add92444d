package node

import (
	"bufio"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/slots"
)

// TestTrackedSlotRecordsChangingReads: while a migration copies a slot,
// every command that changes a key there must leave the key for the
// catch-up, reads included: PFCOUNT stores the count it computes in the
// HyperLogLog's header (as Redis does, which its GET shows), and a
// PFCOUNT between the copy and the fence left the target with the stale
// bytes. A PFCOUNT that finds its count cached changes nothing, and
// plain reads never do; a PFCOUNT in MULTI counts as one outside.
func TestTrackedSlotRecordsChangingReads(t *testing.T) {
	s, err := New(Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	nc := serveForTest(t, s)
	br := bufio.NewReader(nc)
	do := func(args ...string) string {
		t.Helper()
		if _, err := nc.Write(encodeCmd(args...)); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line[0] == '$' && line != "$-1\r\n" {
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		return strings.TrimSpace(line)
	}

	const key = "{h}hll"
	slot := slots.Slot([]byte(key))
	track := &slotTrack{dirty: map[string]struct{}{}}
	s.ks.RLock()
	sh := s.ks.Shard(slot)
	s.ks.RUnlock()
	sh.Lock()
	s.gate.setTrack(slot, track)
	sh.Unlock()
	// dirty reports whether key is marked, and forgets it (as a catch-up
	// round that sent it would).
	dirty := func() bool {
		sh.Lock()
		defer sh.Unlock()
		_, ok := track.dirty[key]
		delete(track.dirty, key)
		return ok
	}

	for _, step := range []struct {
		args  []string
		reply string
		dirty bool
	}{
		{[]string{"PFADD", key, "a", "b", "c"}, ":1", true},
		{[]string{"GET", key}, "$", false},
		{[]string{"PFCOUNT", key}, ":3", true},  // stores the count
		{[]string{"PFCOUNT", key}, ":3", false}, // finds it stored
		{[]string{"PFADD", key, "d"}, ":1", true},
		{[]string{"MULTI"}, "+OK", false},
		{[]string{"PFCOUNT", key}, "+QUEUED", false},
		{[]string{"EXEC"}, "*1", true},
	} {
		got := do(step.args...)
		if step.args[0] == "EXEC" {
			if _, err := br.ReadString('\n'); err != nil { // the array's one integer
				t.Fatal(err)
			}
		}
		if !strings.HasPrefix(got, step.reply) {
			t.Fatalf("%q: %q, want %q", step.args, got, step.reply)
		}
		if d := dirty(); d != step.dirty {
			t.Errorf("after %q the key is marked changed: %v, want %v", step.args, d, step.dirty)
		}
	}
}
