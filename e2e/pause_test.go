package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/slots"
)

// TestPausedNodeComesBackFenced: a node paused (SIGSTOP, as a frozen VM or
// a long stall) while the others reassign its slots (--reassign-after)
// must not serve those slots when it resumes, not even for the moment
// before it notices the time that passed: every command for them answers
// CLUSTERDOWN (it is cut off) or MOVED (it has the new table), never the
// old value and never an OK that the cluster would then lose. The write
// acknowledged by the new owner meanwhile survives.
func TestPausedNodeComesBackFenced(t *testing.T) {
	bin := buildShardgate(t)
	ctx := testContext(t)
	tmp := t.TempDir()
	start := func(name string, join ...string) *gossipProc {
		args := []string{"--addr", "127.0.0.1:0", "--dir", filepath.Join(tmp, name), "--bootstrap-expect", "3", "--reassign-after", "1s"}
		if len(join) > 0 {
			args = append(args, "--join", strings.Join(join, ","))
		}
		return startGossipProc(t, bin, "node", args...)
	}
	n1 := start("n1")
	n2 := start("n2", n1.gossip)
	n3 := start("n3", n1.gossip)
	dump := func() string {
		return fmt.Sprintf("\nnode 1:\n%s\nnode 2:\n%s\nnode 3:\n%s", n1.log, n2.log, n3.log)
	}
	st := waitConsistent(t, bin, 3, -1, viaGossip(n1.gossip)...)
	key := keyOnNode(st, n3.addr)
	slot := slots.SlotString(key)
	direct := redis.NewClient(&redis.Options{Addr: n3.addr, MaxRetries: -1, ReadTimeout: 5 * time.Second})
	defer direct.Close()
	if err := direct.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := n3.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			n3.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	var owner string
	waitUntil(t, "the others to reassign the paused node's slots", func() bool {
		st, err := clusterStatus(t, bin, viaGossip(n1.gossip)...)
		if err != nil {
			return false
		}
		owner = ownerAddr(st, slot)
		return owner != "" && owner != n3.addr
	})
	newOwner := redis.NewClient(&redis.Options{Addr: owner, MaxRetries: -1})
	defer newOwner.Close()
	if err := newOwner.Set(ctx, key, "after", 0).Err(); err != nil {
		t.Fatalf("SET on the new owner %s: %v%s", owner, err, dump())
	}

	if err := n3.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	wantMoved := fmt.Sprintf("MOVED %d %s", slot, owner)
	refused := func(err error) bool {
		return err != nil && (strings.HasPrefix(err.Error(), "CLUSTERDOWN ") || err.Error() == wantMoved)
	}
	var replies []string
	for deadline := time.Now().Add(e2eTimeout); ; {
		v, err := direct.Get(ctx, key).Result()
		if !refused(err) {
			t.Fatalf("GET %s on the resumed node: %q %v, want CLUSTERDOWN or %s (replies so far: %v)%s", key, v, err, wantMoved, replies, dump())
		}
		err = direct.Set(ctx, key, "stale", 0).Err()
		if !refused(err) {
			t.Fatalf("SET %s on the resumed node: %v, want CLUSTERDOWN or %s (replies so far: %v)%s", key, err, wantMoved, replies, dump())
		}
		if len(replies) == 0 || replies[len(replies)-1] != err.Error() {
			replies = append(replies, err.Error())
		}
		if err.Error() == wantMoved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed node never learned that %s owns slot %d: %v%s", owner, slot, replies, dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the resumed node answered, in turn: %v", replies)
	if v, err := newOwner.Get(ctx, key).Result(); err != nil || v != "after" {
		t.Fatalf("GET %s on the new owner after the resumed node rejoined: %q %v, want \"after\"", key, v, err)
	}
}
