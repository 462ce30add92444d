package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
)

func TestStatusFromView(t *testing.T) {
	obs, other := cluster.NodeID(strings.Repeat("0", 40)), cluster.NodeID(strings.Repeat("1", 40))
	a, b, c, p := cluster.NodeID(idA), cluster.NodeID(idB), cluster.NodeID(idC), cluster.NodeID(idP)
	table := new([cluster.NumSlots]cluster.SlotOwner)
	set := func(first, last int, o cluster.SlotOwner) {
		for s := first; s <= last; s++ {
			table[s] = o
		}
	}
	set(0, 99, cluster.SlotOwner{Owner: b, Epoch: 4})
	set(100, 5460, cluster.SlotOwner{Owner: a, Epoch: 1})
	set(5461, 10922, cluster.SlotOwner{Owner: b, Epoch: 1})
	set(10923, 16000, cluster.SlotOwner{Owner: c, Epoch: 1})
	v := &cluster.View{Self: obs, ClusterID: "cid", Slots: table, Epoch: 4, Members: []cluster.Member{
		{ID: obs, Role: cluster.RoleObserver, State: cluster.StateAlive, TableEpoch: 4, TableDigest: 0xd1},
		{ID: other, Role: cluster.RoleObserver, State: cluster.StateAlive, TableEpoch: 4, TableDigest: 0xd1},
		{ID: a, Role: cluster.RoleNode, Addr: "a:1", State: cluster.StateAlive, TableEpoch: 4, TableDigest: 0xd1},
		{ID: b, Role: cluster.RoleNode, Addr: "b:1", State: cluster.StateAlive, TableEpoch: 1, TableDigest: 0xd0},
		{ID: c, Role: cluster.RoleNode, Addr: "c:1", State: cluster.StateDead, TableEpoch: 1, TableDigest: 0xd0},
		{ID: p, Role: cluster.RoleProxy, Addr: "p:1", State: cluster.StateAlive, TableEpoch: 4, TableDigest: 0xd1},
	}}
	st := statusFromView("g:1", v, nil)
	if st.EntryID != string(obs) || st.EntryRole != "observer" || st.ClusterID != "cid" || st.Epoch != 4 || st.TableDigest != "00000000000000d1" || st.Entry != "g:1" {
		t.Errorf("status header: %+v", st)
	}
	want := []statusMember{
		{ID: idA, Role: "node", Addr: "a:1", State: "alive", Epoch: 1, Slots: 5361, Ranges: []statusRange{{100, 5460, 1}},
			TableEpoch: 4, TableDigest: "00000000000000d1", View: "agrees"},
		{ID: idB, Role: "node", Addr: "b:1", State: "alive", Epoch: 4, Slots: 5562, Ranges: []statusRange{{0, 99, 4}, {5461, 10922, 1}},
			TableEpoch: 1, TableDigest: "00000000000000d0", View: "differs"},
		{ID: idC, Role: "node", Addr: "c:1", State: "dead", Epoch: 1, Slots: 5078, Ranges: []statusRange{{10923, 16000, 1}}, View: "not checked"},
		{ID: idP, Role: "proxy", Addr: "p:1", State: "alive", Ranges: []statusRange{}, TableEpoch: 4, TableDigest: "00000000000000d1", View: "agrees"},
	}
	if !reflect.DeepEqual(st.Members, want) {
		t.Errorf("members:\n got %+v\nwant %+v", st.Members, want)
	}
	var kinds []string
	for _, p := range st.Problems {
		kinds = append(kinds, p.Kind)
	}
	if !reflect.DeepEqual(kinds, []string{"disagree", "dead-owner", "unassigned"}) || st.Consistent {
		t.Errorf("problems: %+v", st.Problems)
	}
	if !strings.Contains(st.Problems[0].Text, "node bbbbbbbb announces a table at epoch 1 (digest 00000000000000d0), the merged table is at epoch 4 (digest 00000000000000d1)") {
		t.Errorf("disagreement: %q", st.Problems[0].Text)
	}
	if !reflect.DeepEqual(st.Unassigned, []statusRange{{16001, 16383, 0}}) {
		t.Errorf("unassigned: %+v", st.Unassigned)
	}

	var out bytes.Buffer
	writeStatusTable(&out, st)
	for _, line := range []string{
		"cluster cid  epoch 4  read from observer 00000000 at g:1",
		idB + "  node   b:1      alive  4      5562   0-99@4,5461-10922@1  differs",
		idA + "  node   a:1      alive  1      5361   100-5460             agrees",
		idP + "  proxy  p:1      alive  -      0      -                    agrees",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, &out)
		}
	}
}

// startMembers starts n nodes bootstrapping a cluster and one proxy, in
// this process, with fast gossip on loopback under key.
func startMembers(t *testing.T, n int, key []byte) (nodes []*cluster.Cluster, proxy *cluster.Cluster) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	startOne := func(role cluster.Role, i int, join []string) *cluster.Cluster {
		cfg := cluster.Config{Role: role, RESPAddr: fmt.Sprintf("127.0.0.1:%d", 21000+i), Bind: "127.0.0.1:0",
			Join: join, Key: key, Fast: true, Logger: quiet}
		if role == cluster.RoleNode {
			cfg.BootstrapExpect, cfg.Dir = n, t.TempDir()
		}
		c, err := cluster.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for i := range n {
		var join []string
		if i > 0 {
			join = []string{nodes[0].GossipAddr()}
		}
		nodes = append(nodes, startOne(cluster.RoleNode, i, join))
	}
	proxy = startOne(cluster.RoleProxy, n, []string{nodes[n-1].GossipAddr()})
	deadline := time.Now().Add(15 * time.Second)
	for {
		ready := true
		for _, c := range append(nodes, proxy) {
			v := c.View()
			if len(v.Alive(cluster.RoleNode)) != n || len(v.Alive(cluster.RoleProxy)) != 1 {
				ready = false
			}
			for s := range cluster.NumSlots {
				if v.Slots[s].Owner == "" {
					ready = false
					break
				}
			}
			// Every member announces the table this one holds.
			for _, m := range v.Members {
				if m.TableDigest != v.SelfMember().TableDigest {
					ready = false
				}
			}
		}
		if ready {
			return nodes, proxy
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster did not form")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterStatusGossip runs the command as an observer against real
// cluster members (in this process): a bootstrapped cluster is consistent
// and the observer is nobody's proxy; a handoff shows in the ranges'
// epochs; a node gone leaves its slots to report; a wrong key reads
// nothing.
func TestClusterStatusGossip(t *testing.T) {
	key, _ := cluster.ParseKey("000102030405060708090a0b0c0d0e0f")
	nodes, proxy := startMembers(t, 3, key)
	status := func(join string, extra ...string) (*clusterStatus, int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{"cluster", "status", "--join", join, "--gossip", "127.0.0.1:0", "--gossip-fast",
			"--gossip-key", "000102030405060708090a0b0c0d0e0f", "--json", "--timeout", "3s"}, extra...)
		rc := run(args, &out, &errb)
		if rc != 0 && rc != exitInconsistent {
			return nil, rc, errb.String()
		}
		var st clusterStatus
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			t.Fatalf("%v\n%s%s", err, &out, &errb)
		}
		return &st, rc, errb.String()
	}

	st, rc, _ := status(nodes[1].GossipAddr())
	if rc != 0 || !st.Consistent || st.EntryRole != "observer" || st.ClusterID != nodes[0].View().ClusterID || st.Epoch != 1 || len(st.Members) != 4 {
		t.Fatalf("exit %d, status %+v", rc, st)
	}
	var ranges []string
	for _, m := range st.Members {
		if m.State != "alive" || m.View != "agrees" || m.TableDigest != st.TableDigest {
			t.Errorf("member %+v", m)
		}
		for _, r := range m.Ranges {
			ranges = append(ranges, fmt.Sprintf("%v@%d", r, r.Epoch))
		}
	}
	slices.Sort(ranges)
	if want := "0-5460@1 10923-16383@1 5461-10922@1"; strings.Join(ranges, " ") != want {
		t.Errorf("ranges %q, want %q", ranges, want)
	}
	// The observer came and went: no member takes it for a proxy.
	for _, c := range append(nodes, proxy) {
		if ps := c.View().Alive(cluster.RoleProxy); len(ps) != 1 || ps[0].ID != proxy.ID() {
			t.Errorf("member %s sees proxies %+v", c.ID(), ps)
		}
	}

	// The owner of 0-5460 hands slots 0-99 to the owner of 5461-10922,
	// at epoch 2.
	owner := func(slot uint16) *cluster.Cluster {
		id := nodes[0].View().Slots[slot].Owner
		for _, c := range nodes {
			if c.ID() == id {
				return c
			}
		}
		t.Fatalf("no node owns slot %d", slot)
		return nil
	}
	from, to := owner(0), owner(5461)
	s0 := make([]uint16, 100)
	for i := range s0 {
		s0[i] = uint16(i)
	}
	if err := from.Handoff(s0, to.ID()); err != nil {
		t.Fatal(err)
	}
	var m1 string
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, rc, _ = status(proxy.GossipAddr())
		for _, m := range st.Members {
			if m.ID == string(to.ID()) {
				m1 = fmt.Sprint(m.Ranges, " epoch ", m.Epoch)
			}
		}
		if rc == 0 && st.Epoch == 2 && m1 == "[0-99 5461-10922] epoch 2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the handoff: exit %d, node 1 %s, status %+v", rc, m1, st)
		}
	}

	// The owner of 10923-16383 leaves: its slots are reported.
	gone := owner(10923)
	gone.Close()
	deadline = time.Now().Add(10 * time.Second)
	for {
		st, rc, _ = status(from.GossipAddr())
		if rc == exitInconsistent && len(st.Problems) == 1 && st.Problems[0].Kind == problemDeadOwner && st.Problems[0].Member == string(gone.ID()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a node left: exit %d, status %+v", rc, st)
		}
	}

	// Another key: no view.
	var out, errb bytes.Buffer
	rc = run([]string{"cluster", "status", "--join", from.GossipAddr(), "--gossip", "127.0.0.1:0", "--gossip-fast",
		"--gossip-key", "0f0e0d0c0b0a09080706050403020100", "--timeout", "1s"}, &out, &errb)
	if rc != exitUnreachable || !strings.Contains(errb.String(), "no cluster member answered at "+from.GossipAddr()+" within 1s (last join attempt: "+from.GossipAddr()+": no installed keys could decrypt the message)") {
		t.Errorf("wrong key: exit %d\n%s%s", rc, &out, &errb)
	}
	t.Logf("wrong key: %s", &errb)
}

// TestClusterStatusNotBootstrapped: two nodes waiting for a third
// (--bootstrap-expect 3) are shown with every slot unassigned.
func TestClusterStatusNotBootstrapped(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var first *cluster.Cluster
	for i := range 2 {
		cfg := cluster.Config{Role: cluster.RoleNode, RESPAddr: fmt.Sprintf("127.0.0.1:%d", 21100+i), Bind: "127.0.0.1:0",
			BootstrapExpect: 3, Fast: true, Logger: quiet}
		if first != nil {
			cfg.Join = []string{first.GossipAddr()}
		}
		c, err := cluster.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if first == nil {
			first = c
		}
	}
	var out, errb bytes.Buffer
	rc := run([]string{"cluster", "status", "--join", first.GossipAddr(), "--gossip", "127.0.0.1:0", "--gossip-fast", "--timeout", "3s"}, &out, &errb)
	if rc != exitInconsistent {
		t.Fatalf("exit %d\n%s%s", rc, &out, &errb)
	}
	for _, want := range []string{"cluster (no id: not bootstrapped yet)  epoch 0", "127.0.0.1:21100  alive  -      0      -",
		"127.0.0.1:21101  alive  -      0      -", "unassigned    16384 slots are not assigned to any node (0-16383)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, &out)
		}
	}
}
