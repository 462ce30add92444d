package node_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/node"
)

// restartableNode is a gossip node with its own directories, stopped and
// started again on the same addresses.
type restartableNode struct {
	*gossipNode
	stop func()
}

// startRestartable starts a node serving at addr with gossip at bind,
// its cluster state in cdir and its migration record in mdir.
func startRestartable(t *testing.T, addr, bind string, join []string, expect int, cdir, mdir string) *restartableNode {
	t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	m, err := cluster.Start(context.Background(), cluster.Config{
		Role: cluster.RoleNode, RESPAddr: addr, Bind: bind, Join: join, BootstrapExpect: expect,
		Fast: true, Dir: cdir, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := node.New(node.Options{
		Ownership: node.NewClusterOwnership(m, nil),
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
		Migration: &node.MigrationOptions{Cluster: m, Dir: mdir, PlanInterval: 100 * time.Millisecond, BatchSlots: 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			srv.Close()
			<-served
			m.Close()
		}
	}
	t.Cleanup(stop)
	return &restartableNode{gossipNode: &gossipNode{member: m, srv: srv, addr: addr, logs: logs}, stop: stop}
}

// freeAddr is a loopback address nothing listens on (for a node to take
// again after a restart).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestRecoveredFenceSettledByLaterClaim: a source that crashed between
// its target's commit and persisting it restarts with its fenced
// migration record, while the target has since passed the slot on and
// left. The fence comes down once the table shows a claim at the
// commit's epoch or later, whoever holds it: the node redirects to the
// new owner (not TRYAGAIN forever), and serves the slot again when it
// comes back.
func TestRecoveredFenceSettledByLaterClaim(t *testing.T) {
	dir := t.TempDir()
	cdir, mdir := filepath.Join(dir, "cluster"), filepath.Join(dir, "migration")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	aAddr, aBind := freeAddr(t), freeAddr(t)
	a := startRestartable(t, aAddr, aBind, nil, 3, cdir, mdir)
	b := startRestartable(t, freeAddr(t), "127.0.0.1:0", []string{a.member.GossipAddr()}, 3, "", "")
	c := startRestartable(t, freeAddr(t), "127.0.0.1:0", []string{a.member.GossipAddr()}, 3, "", "")
	all := []*gossipNode{a.gossipNode, b.gossipNode, c.gossipNode}
	waitLong(t, "the three nodes agree", func() bool {
		for _, gn := range all {
			v := gn.member.View()
			if v.Slots[0].Owner == "" || !v.Converged() || len(v.Alive(cluster.RoleNode)) != 3 {
				return false
			}
		}
		return true
	})
	var slot uint16
	for a.member.View().Slots[slot].Owner != a.member.ID() {
		slot++
	}
	key := keysInSlot(slot, "k", 1)[0]
	expect(t, dial(t, a.addr, 2), "OK", "SET", key, "v1")
	before, err := os.ReadFile(filepath.Join(cdir, "cluster.json"))
	if err != nil {
		t.Fatal(err)
	}
	moveSlots(t, all, a.gossipNode, b.gossipNode, []uint16{slot})
	epoch := b.member.View().Slots[slot].Epoch

	// The crash: a's table as before the commit, its fenced record kept.
	a.stop()
	if err := os.WriteFile(filepath.Join(cdir, "cluster.json"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf(`{"id":"feedfacefeedface","target":%q,"addr":%q,"slots":[%d],"phase":"fence","epoch":%d}`,
		b.member.ID(), b.addr, slot, epoch)
	if err := os.WriteFile(filepath.Join(mdir, "migration.json"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	// Meanwhile b passes the slot on to c and leaves.
	moveSlots(t, []*gossipNode{b.gossipNode, c.gossipNode}, b.gossipNode, c.gossipNode, []uint16{slot})
	b.stop()

	a2 := startRestartable(t, aAddr, aBind, []string{c.member.GossipAddr()}, 3, cdir, mdir)
	ca := dial(t, a2.addr, 2)
	want := fmt.Sprintf("MOVED %d %s", slot, c.addr)
	waitLong(t, "the restarted node to redirect to the slot's owner", func() bool {
		v, err := ca.DoStrings("GET", key)
		return err == nil && v.Text() == want
	})
	// The slot comes back: served.
	moveSlots(t, []*gossipNode{a2.gossipNode, c.gossipNode}, c.gossipNode, a2.gossipNode, []uint16{slot})
	waitLong(t, "the slot served again", func() bool {
		v, err := ca.DoStrings("GET", key)
		return err == nil && !v.IsError()
	})
	if st, _ := ca.DoStrings("SHARDGATE", "STATUS"); strings.Contains(st.Text(), "migrating_phase:fence") {
		t.Errorf("still fenced:\n%s", st.Text())
	}
}

// waitLong polls cond for up to 20 s.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
