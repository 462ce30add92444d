package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/loopserve"
	"github.com/shardgate/shardgate/internal/resp"
)

// Member ids of the fake clusters below.
var (
	idA = strings.Repeat("a", 40)
	idB = strings.Repeat("b", 40)
	idC = strings.Repeat("c", 40)
	idP = strings.Repeat("e", 40)
)

func TestViewFromClusterNodes(t *testing.T) {
	// Redis 7.0's format: hostname after the address, migrating and
	// importing slots in brackets, fail and fail? flags, a node without
	// an address (":0@0" before it met anyone).
	text := idA + " 10.0.0.1:7000@17000,host-a myself,master - 0 0 3 connected 0-5460 [5461->-" + idB + "]\n" +
		idB + " 10.0.0.2:7000@17000 master,fail - 1700000000 1700000000 1 disconnected 5461-10922 16383\n" +
		idC + " 10.0.0.3:7000@17000 master,fail? - 0 0 2 connected 10923-16382 [10923-<-" + idA + "]\n" +
		idP + " :0@0 master,noaddr - 0 0 0 disconnected\n"
	v, err := viewFromClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []viewMember{
		{ID: idA, Role: "node", Addr: "10.0.0.1:7000", State: "alive", Epoch: 3, Ranges: []statusRange{{First: 0, Last: 5460}}},
		{ID: idB, Role: "node", Addr: "10.0.0.2:7000", State: "dead", Epoch: 1, Ranges: []statusRange{{First: 5461, Last: 10922}, {First: 16383, Last: 16383}}},
		{ID: idC, Role: "node", Addr: "10.0.0.3:7000", State: "suspect", Epoch: 2, Ranges: []statusRange{{First: 10923, Last: 16382}}},
		{ID: idP, Role: "node", Addr: "", State: "alive", Epoch: 0},
	}
	if !reflect.DeepEqual(v.Members, want) {
		t.Errorf("members:\n got %+v\nwant %+v", v.Members, want)
	}
	if v.Epoch != 3 {
		t.Errorf("epoch %d, want the highest config epoch 3", v.Epoch)
	}
	for _, bad := range []string{"", idA + " 10.0.0.1:7000@17000 master - 0 0", idA + " 10.0.0.1:7000@17000 master - 0 0 x connected",
		idA + " 10.0.0.1:7000@17000 master - 0 0 1 connected 16384", idA + " 10.0.0.1:7000@17000 master - 0 0 1 connected 9-3"} {
		if _, err := viewFromClusterNodes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// proxyInfo is INFO's cluster section of a proxy in gossip mode.
func proxyInfo(clusterID string, epoch int, self string, members ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Cluster\r\ncluster_enabled:1\r\ncluster_mode:gossip\r\nredirects_moved:0\r\ncluster_id:%s\r\ncluster_my_id:%s\r\ncluster_table_epoch:%d\r\n", clusterID, self, epoch)
	for i, m := range members {
		fmt.Fprintf(&b, "member%d:%s\r\n", i, m)
	}
	return b.String()
}

func TestViewFromInfo(t *testing.T) {
	text := proxyInfo("c1", 4, idP,
		"id="+idA+",role=node,addr=10.0.0.1:7000,state=alive,slots=0-5460 16383",
		// An older proxy separated the ranges with commas.
		"id="+idB+",role=node,addr=10.0.0.2:7000,state=dead,slots=5461-9000,9001-16382",
		"id="+idP+",role=proxy,addr=10.0.0.9:7379,state=alive,slots=",
		// A `cluster status --join` looking on is left out.
		"id="+idC+",role=observer,addr=10.0.0.5:41234,state=alive,slots=")
	v, ok, err := viewFromInfo(parseInfoFields(text))
	if err != nil || !ok {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
	want := &memberView{Self: idP, Role: "proxy", ClusterID: "c1", Epoch: 4, Members: []viewMember{
		{ID: idA, Role: "node", Addr: "10.0.0.1:7000", State: "alive", Ranges: []statusRange{{First: 0, Last: 5460}, {First: 16383, Last: 16383}}},
		{ID: idB, Role: "node", Addr: "10.0.0.2:7000", State: "dead", Ranges: []statusRange{{First: 5461, Last: 9000}, {First: 9001, Last: 16382}}},
		{ID: idP, Role: "proxy", Addr: "10.0.0.9:7379", State: "alive"},
	}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("view:\n got %+v\nwant %+v", v, want)
	}
	// A node's INFO without member lines: not a view.
	if _, ok, err := viewFromInfo(parseInfoFields("# Cluster\r\ncluster_enabled:1\r\n")); ok || err != nil {
		t.Errorf("no members: ok=%v err=%v", ok, err)
	}
	for name, text := range map[string]string{
		"unknown role":  proxyInfo("c1", 1, idP, "id="+idP+",role=watcher,addr=x:1,state=alive,slots="),
		"unknown state": proxyInfo("c1", 1, idP, "id="+idP+",role=proxy,addr=x:1,state=gone,slots="),
		"bad range":     proxyInfo("c1", 1, idP, "id="+idP+",role=proxy,addr=x:1,state=alive,slots=7-x"),
		"no self":       proxyInfo("c1", 1, idP, "id="+idA+",role=node,addr=x:1,state=alive,slots=0-16383"),
		"bad epoch":     strings.Replace(proxyInfo("c1", 1, idP, "id="+idP+",role=proxy,addr=x:1,state=alive,slots="), "epoch:1", "epoch:-1", 1),
	} {
		if _, _, err := viewFromInfo(parseInfoFields(text)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// fakeCluster serves member views by address for collectStatus.
type fakeCluster map[string]*memberView

func (f fakeCluster) fetch(_ context.Context, addr string) (*memberView, error) {
	v, ok := f[addr]
	if !ok {
		return nil, errors.New("connection refused")
	}
	return v, nil
}

// healthy returns the views of three nodes and a proxy that agree: node
// X's view as it reports it (its own config epoch) and the proxy's.
func healthy() fakeCluster {
	nodes := func(self string) *memberView {
		return &memberView{Self: self, Role: "node", Epoch: 1, Members: []viewMember{
			{ID: idA, Role: "node", Addr: "a:1", State: "alive", Epoch: 1, Ranges: []statusRange{{First: 0, Last: 5460}}},
			{ID: idB, Role: "node", Addr: "b:1", State: "alive", Epoch: 1, Ranges: []statusRange{{First: 5461, Last: 10922}}},
			{ID: idC, Role: "node", Addr: "c:1", State: "alive", Epoch: 1, Ranges: []statusRange{{First: 10923, Last: 16383}}},
		}}
	}
	p := &memberView{Self: idP, Role: "proxy", ClusterID: "c1", Epoch: 1, Members: []viewMember{
		{ID: idA, Role: "node", Addr: "a:1", State: "alive", Ranges: []statusRange{{First: 0, Last: 5460}}},
		{ID: idB, Role: "node", Addr: "b:1", State: "alive", Ranges: []statusRange{{First: 5461, Last: 10922}}},
		{ID: idC, Role: "node", Addr: "c:1", State: "alive", Ranges: []statusRange{{First: 10923, Last: 16383}}},
		{ID: idP, Role: "proxy", Addr: "p:1", State: "alive"},
	}}
	return fakeCluster{"a:1": nodes(idA), "b:1": nodes(idB), "c:1": nodes(idC), "p:1": p}
}

func TestCollectStatus(t *testing.T) {
	type want struct {
		kinds []string          // problem kinds, in order
		views map[string]string // member id → View
		text  string            // in the problems' texts
	}
	tests := []struct {
		name   string
		entry  string
		change func(f fakeCluster)
		want   want
	}{
		{name: "healthy from the proxy", entry: "p:1", change: func(fakeCluster) {},
			want: want{views: map[string]string{idA: "agrees", idB: "agrees", idC: "agrees", idP: "agrees"}}},
		{name: "healthy from a node", entry: "b:1", change: func(fakeCluster) {},
			want: want{views: map[string]string{idA: "agrees", idB: "agrees", idC: "agrees"}}},
		{name: "dead owner", entry: "p:1", change: func(f fakeCluster) {
			delete(f, "b:1")
			for _, v := range f { // every member sees it dead
				for i := range v.Members {
					if v.Members[i].ID == idB {
						v.Members[i].State = "dead"
					}
				}
			}
		}, want: want{kinds: []string{"dead-owner"}, views: map[string]string{idB: "not checked"}, text: "5461-10922"}},
		{name: "live but unreachable", entry: "p:1", change: func(f fakeCluster) { delete(f, "c:1") },
			want: want{kinds: []string{"unreachable"}, views: map[string]string{idC: "unreachable"}, text: "connection refused"}},
		{name: "unassigned", entry: "a:1", change: func(f fakeCluster) {
			for _, v := range f {
				for i := range v.Members {
					if v.Members[i].ID == idC {
						v.Members[i].Ranges = []statusRange{{First: 10923, Last: 16000}}
					}
				}
			}
		}, want: want{kinds: []string{"unassigned"}, text: "383 slots are not assigned to any node (16001-16383)"}},
		{name: "a node disagrees", entry: "p:1", change: func(f fakeCluster) {
			// b thinks it still owns 5000-5460 and c's range.
			v := f["b:1"]
			v.Members[0].Ranges = []statusRange{{First: 0, Last: 4999}}
			v.Members[1].Ranges = []statusRange{{First: 5000, Last: 10922}, {First: 10923, Last: 16383}}
			v.Members[2].Ranges = nil
		}, want: want{kinds: []string{"disagree"}, views: map[string]string{idA: "agrees", idB: "differs", idC: "agrees"},
			text: "disagrees with the entry on 5922 slots (5000-5460,10923-16383); slot 5000 is owned by bbbbbbbb there, owned by aaaaaaaa here"}},
		{name: "epochs differ", entry: "p:1", change: func(f fakeCluster) { f["c:1"].Epoch = 2 },
			want: want{kinds: []string{"disagree"}, views: map[string]string{idC: "differs"}, text: "table epoch 2, the entry 1"}},
		{name: "another member at the address", entry: "p:1", change: func(f fakeCluster) { f["a:1"].Self = idC },
			want: want{kinds: []string{"identity"}, views: map[string]string{idA: "differs"}, text: "a:1 answers as node cccccccc, not as node aaaaaaaa"}},
		{name: "cluster ids differ", entry: "p:1", change: func(f fakeCluster) {
			q := *f["p:1"]
			q.Self, q.Role, q.ClusterID = idC, "node", "c2"
			f["c:1"] = &q
		}, want: want{kinds: []string{"cluster-id"}, views: map[string]string{idC: "differs"}, text: "reports cluster id c2, the entry c1"}},
		{name: "two live members at one address", entry: "p:1", change: func(f fakeCluster) {
			f["p:1"].Members = append(f["p:1"].Members, viewMember{ID: strings.Repeat("f", 40), Role: "proxy", Addr: "p:1", State: "alive"})
		}, want: want{kinds: []string{"address-clash", "identity"}, text: "are both live at p:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := healthy()
			tt.change(f)
			st, err := collectStatus(context.Background(), tt.entry, f.fetch)
			if err != nil {
				t.Fatal(err)
			}
			var kinds, texts []string
			for _, p := range st.Problems {
				kinds, texts = append(kinds, p.Kind), append(texts, p.Text)
			}
			if !equalKinds(kinds, tt.want.kinds) {
				t.Errorf("problems %q, want kinds %q", texts, tt.want.kinds)
			}
			if st.Consistent != (len(tt.want.kinds) == 0) {
				t.Errorf("consistent = %v with problems %q", st.Consistent, texts)
			}
			if tt.want.text != "" && !strings.Contains(strings.Join(texts, "\n"), tt.want.text) {
				t.Errorf("problems %q do not say %q", texts, tt.want.text)
			}
			got := map[string]string{}
			for _, m := range st.Members {
				got[m.ID] = m.View
			}
			for id, v := range tt.want.views {
				if got[id] != v {
					t.Errorf("member %s: view %q, want %q", id[:8], got[id], v)
				}
			}
		})
	}
}

func equalKinds(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func TestCollectStatusEpochs(t *testing.T) {
	// From the proxy (whose INFO has no epochs), each node's epoch is the
	// config epoch it reports for itself.
	f := healthy()
	f["a:1"].Members[0].Epoch = 7
	f["a:1"].Epoch = 7
	for _, v := range f {
		v.Epoch = 7
	}
	st, err := collectStatus(context.Background(), "p:1", f.fetch)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		want := uint64(1)
		switch m.ID {
		case idA:
			want = 7
		case idP:
			want = 0
		}
		if m.Epoch != want {
			t.Errorf("member %s: epoch %d, want %d", m.ID[:8], m.Epoch, want)
		}
		for _, r := range m.Ranges {
			if r.Epoch != want {
				t.Errorf("member %s: range %v epoch %d, want %d", m.ID[:8], r, r.Epoch, want)
			}
		}
	}
	if _, err := collectStatus(context.Background(), "nowhere:1", f.fetch); err == nil || !strings.Contains(err.Error(), "nowhere:1") {
		t.Errorf("unreachable entry: %v", err)
	}
}

// fakeMember serves canned replies on a loopback port: a stand-in for a
// node or proxy that answers the commands the status command sends.
func fakeMember(t *testing.T, replies map[string]string) string {
	t.Helper()
	ln := loopserve.Serve(t, func(c net.Conn) {
		defer c.Close()
		r := resp.NewReader(c)
		for {
			args, ok, err := r.Next()
			if err != nil {
				return
			}
			if !ok {
				if r.Fill() != nil {
					return
				}
				continue
			}
			var parts []string
			for _, a := range args {
				parts = append(parts, strings.ToUpper(string(a)))
			}
			w := resp.NewWriter()
			if rep, ok := replies[strings.Join(parts, " ")]; ok {
				w.BulkString(rep)
			} else if rep, ok := replies[parts[0]]; ok && strings.HasPrefix(rep, "-") {
				w.Error(rep[1:])
			} else {
				w.Error("ERR unknown command '" + parts[0] + "'")
			}
			c.Write(w.B)
		}
	})
	return ln.Addr().String()
}

func TestClusterStatusCommand(t *testing.T) {
	// A node answering in Redis's formats, and a proxy listing it (and a
	// second node that is dead) in its INFO.
	node := fakeMember(t, map[string]string{
		"INFO CLUSTER":     "# Cluster\r\ncluster_enabled:1\r\n",
		"CLUSTER MYID":     idA,
		"CLUSTER NODES":    idA + " 127.0.0.1:1@0 myself,master - 0 0 2 connected 0-8191\n" + idB + " 127.0.0.1:2@0 master,fail - 0 0 1 disconnected 8192-16383\n",
		"CLUSTER INFO":     "cluster_state:fail\r\ncluster_current_epoch:2\r\n",
		"SHARDGATE STATUS": "slots_owned:8192\r\ndraining:1\r\n",
	})
	proxy := fakeMember(t, map[string]string{
		"INFO CLUSTER": proxyInfo("c1", 2, idP,
			"id="+idA+",role=node,addr="+node+",state=alive,slots=0-8191",
			"id="+idB+",role=node,addr=127.0.0.1:2,state=dead,slots=8192-16383",
			"id="+idP+",role=proxy,addr=127.0.0.1:3,state=alive,slots="),
	})
	var out, errb bytes.Buffer
	rc := run([]string{"cluster", "status", "--resp", "127.0.0.1:1," + proxy, "--json"}, &out, &errb)
	if rc != exitInconsistent {
		t.Fatalf("exit %d, want %d (a dead owner)\nstdout:\n%s\nstderr:\n%s", rc, exitInconsistent, &out, &errb)
	}
	var st clusterStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if st.Entry != proxy || st.EntryRole != "proxy" || st.ClusterID != "c1" || st.Epoch != 2 || len(st.Members) != 3 {
		t.Errorf("status: %+v", st)
	}
	if len(st.Problems) != 1 || st.Problems[0].Kind != problemDeadOwner || st.Problems[0].Member != idB {
		t.Errorf("problems: %+v", st.Problems)
	}
	if m := st.Members[0]; m.ID != idA || m.View != "agrees" || m.Epoch != 2 || m.Slots != 8192 || !m.Draining {
		t.Errorf("node member: %+v", m)
	}

	// The table, from the node.
	out.Reset()
	errb.Reset()
	rc = run([]string{"cluster", "status", "--resp", node}, &out, &errb)
	if rc != exitInconsistent {
		t.Fatalf("exit %d\n%s%s", rc, &out, &errb)
	}
	for _, want := range []string{
		"cluster (id not reported)  epoch 2  read from node aaaaaaaa at " + node,
		"ID                                        ROLE  ADDRESS      STATE           EPOCH  SLOTS  RANGES      VIEW",
		idA + "  node  127.0.0.1:1  alive,draining  2      8192   0-8191      agrees",
		idB + "  node  127.0.0.1:2  dead            1      8192   8192-16383  not checked",
		"1 problem:\n  dead-owner    node bbbbbbbb (127.0.0.1:2) is dead and owns 8192 slots (8192-16383): they answer CLUSTERDOWN until it returns",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, &out)
		}
	}

	// A shardgate node lists the members in SHARDGATE STATUS: the proxy
	// and a member that left show, which CLUSTER NODES cannot carry.
	listing := fakeMember(t, map[string]string{
		"INFO CLUSTER":  "# Cluster\r\ncluster_enabled:1\r\n",
		"CLUSTER NODES": idA + " 127.0.0.1:1@0 myself,master - 0 0 2 connected 0-8191\n",
		"SHARDGATE STATUS": "node_id:" + idA + "\r\ndraining:0\r\ncluster_id:c1\r\ncluster_my_id:" + idA +
			"\r\ncluster_table_epoch:2\r\n" +
			"member0:id=" + idA + ",role=node,addr=127.0.0.1:1,state=alive,slots=0-8191\r\n" +
			"member1:id=" + idB + ",role=node,addr=127.0.0.1:2,state=left,slots=8192-16383\r\n" +
			"member2:id=" + idP + ",role=proxy,addr=127.0.0.1:3,state=alive,slots=\r\n",
	})
	out.Reset()
	errb.Reset()
	rc = run([]string{"cluster", "status", "--resp", listing, "--json"}, &out, &errb)
	if rc != exitInconsistent {
		t.Fatalf("exit %d, want %d (a left owner)\n%s%s", rc, exitInconsistent, &out, &errb)
	}
	st = clusterStatus{}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if st.EntryRole != "node" || st.ClusterID != "c1" || len(st.Members) != 3 ||
		st.Members[1].State != "left" || st.Members[2].Role != "proxy" {
		t.Errorf("status from a node's SHARDGATE STATUS: %s", &out)
	}

	// Errors and usage.
	static := fakeMember(t, map[string]string{"INFO CLUSTER": "# Cluster\r\ncluster_enabled:1\r\ncluster_mode:static\r\n"})
	auth := fakeMember(t, map[string]string{"AUTH": "-WRONGPASS invalid username-password pair or user is disabled."})
	// A member without a password (a proxy in front of nodes that want
	// one) is read all the same: its view is the error here.
	noPassword := fakeMember(t, map[string]string{
		"AUTH":         "-" + resp.ErrAuthNoPassword,
		"INFO CLUSTER": "# Cluster\r\ncluster_enabled:1\r\ncluster_mode:static\r\n",
	})
	for _, tt := range []struct {
		args   []string
		rc     int
		stderr string
	}{
		{[]string{"cluster"}, 2, "Usage: shardgate cluster <command>"},
		{[]string{"cluster", "stats"}, 2, `unknown command "stats"`},
		{[]string{"cluster", "status"}, 2, "one of --join (gossip) or --resp is required"},
		{[]string{"cluster", "status", "--join", "a:1", "--resp", "b:1"}, 2, "--join and --resp are exclusive"},
		{[]string{"cluster", "status", "--resp", "nohost"}, 2, `bad --resp address "nohost"`},
		{[]string{"cluster", "status", "--join", "nohost"}, 2, `bad --join address "nohost"`},
		{[]string{"cluster", "status", "--join", "a:1", "--gossip", "x"}, 2, `bad --gossip address "x"`},
		{[]string{"cluster", "status", "--join", "a:1", "--gossip-key", "short"}, 2, "bad --gossip-key"},
		{[]string{"cluster", "status", "--resp", "a:1", "--gossip-fast", "--gossip-key", "k"}, 2, "--gossip-fast --gossip-key go with --join, not --resp"},
		{[]string{"cluster", "status", "--resp", node, "--timeout", "0s"}, 2, "--timeout must be a positive duration"},
		{[]string{"cluster", "status", "--resp", static}, 1, "static --nodes list"},
		{[]string{"cluster", "status", "--resp", auth, "--password", "s3cret"}, 1, "AUTH: WRONGPASS"},
		{[]string{"cluster", "status", "--resp", noPassword, "--password", "s3cret"}, 1, "static --nodes list"},
	} {
		out.Reset()
		errb.Reset()
		if rc := run(tt.args, &out, &errb); rc != tt.rc || !strings.Contains(errb.String(), tt.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, rc, &errb, tt.rc, tt.stderr)
		}
		if strings.Contains(errb.String(), "s3cret") {
			t.Errorf("%q: the password is in the error: %q", tt.args, &errb)
		}
	}
}

// TestFillAddrs: a member the gossip view lists without an address (a
// node dead before the observer joined) gets the one a live node's
// CLUSTER NODES gives, so the dead-owner problem names it.
func TestFillAddrs(t *testing.T) {
	node := fakeMember(t, map[string]string{
		"CLUSTER NODES": idA + " 127.0.0.1:1@0 myself,master - 0 0 2 connected 0-8191\n" + idB + " 127.0.0.1:2@0 master,fail - 0 0 1 disconnected 8192-16383\n",
	})
	table := new([cluster.NumSlots]cluster.SlotOwner)
	for s := range cluster.NumSlots {
		table[s] = cluster.SlotOwner{Owner: cluster.NodeID(idA), Epoch: 2}
		if s >= 8192 {
			table[s] = cluster.SlotOwner{Owner: cluster.NodeID(idB), Epoch: 1}
		}
	}
	v := &cluster.View{Self: cluster.NodeID(strings.Repeat("0", 40)), Slots: table, Epoch: 2, Members: []cluster.Member{
		{ID: cluster.NodeID(strings.Repeat("0", 40)), Role: cluster.RoleObserver, State: cluster.StateAlive},
		{ID: cluster.NodeID(idA), Role: cluster.RoleNode, Addr: node, State: cluster.StateAlive},
		{ID: cluster.NodeID(idB), Role: cluster.RoleNode, State: cluster.StateDead},
	}}
	st := statusFromView("g:1", v, func(st *clusterStatus) { fillAddrs(t.Context(), st, "", time.Second) })
	if len(st.Members) != 2 || st.Members[1].Addr != "127.0.0.1:2" {
		t.Fatalf("members: %+v", st.Members)
	}
	if len(st.Problems) != 1 || !strings.Contains(st.Problems[0].Text, "node bbbbbbbb (127.0.0.1:2) is dead and owns 8192 slots (8192-16383)") {
		t.Errorf("problems: %+v", st.Problems)
	}
}

// TestClusterStatusRedisCluster reads a real Redis Cluster (3 masters made
// by redis-cli --cluster create): the node path reads Redis's own
// CLUSTER NODES and CLUSTER INFO.
func TestClusterStatusRedisCluster(t *testing.T) {
	rc := difftest.StartRedisCluster(t, 3)
	var out, errb bytes.Buffer
	if code := run([]string{"cluster", "status", "--resp", rc.Nodes[1].Addr, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, &out, &errb)
	}
	var st clusterStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 3 || !st.Consistent || st.EntryID != rc.Nodes[1].ID {
		t.Fatalf("status: %s", &out)
	}
	for _, n := range rc.Nodes {
		var m *statusMember
		for i := range st.Members {
			if st.Members[i].ID == n.ID {
				m = &st.Members[i]
			}
		}
		if m == nil {
			t.Errorf("node %s missing", n.ID)
			continue
		}
		var want []string
		for _, r := range n.Slots {
			want = append(want, r.String())
		}
		if m.Addr != n.Addr || m.State != "alive" || m.View != "agrees" || formatStatusRanges(m.Ranges) != strings.Join(want, ",") || m.Epoch == 0 {
			t.Errorf("node %s: %+v, want addr %s ranges %v", n.ID[:8], m, n.Addr, want)
		}
	}
}

// TestObserverBind: without --gossip the observer listens on the local
// address that reaches the first member (loopback for a loopback cluster,
// so that the members' probes come back), on a free port; with
// --gossip-advertise, or a member it cannot route to, on every interface.
func TestObserverBind(t *testing.T) {
	for _, tt := range []struct{ join, advertise, want string }{
		{"127.0.0.1:7946", "", "127.0.0.1:0"},
		{"127.0.0.1:7946", "10.0.0.9:7946", "0.0.0.0:0"},
		{"no-such-host.invalid:7946", "", "0.0.0.0:0"},
	} {
		if got := observerBind(tt.join, tt.advertise); got != tt.want {
			t.Errorf("observerBind(%q, %q) = %q, want %q", tt.join, tt.advertise, got, tt.want)
		}
	}
}

// TestFormatEpochRanges: adjacent ranges claimed at different epochs
// print as one range with the span of their epochs; apart, each keeps its
// own.
func TestFormatEpochRanges(t *testing.T) {
	rs := []statusRange{{0, 99, 4}, {5461, 5524, 2}, {5525, 5588, 3}, {5589, 10922, 1}, {16000, 16000, 7}}
	if got, want := formatEpochRanges(rs), "0-99@4,5461-10922@1..3,16000@7"; got != want {
		t.Errorf("formatEpochRanges = %q, want %q", got, want)
	}
	// Without epochs (problem lines), adjacent ranges merge.
	if got, want := formatStatusRanges(rs), "0-99,5461-10922,16000"; got != want {
		t.Errorf("formatStatusRanges = %q, want %q", got, want)
	}
}

// TestCompareViewsLiveness: a member that sees another dead where the
// entry sees it alive (the one cut off by a partition the status
// command's host sees across) disagrees, though its table is the same.
func TestCompareViewsLiveness(t *testing.T) {
	members := func(bState string) []viewMember {
		return []viewMember{
			{ID: "a", Role: "node", Addr: "10.0.0.1:7001", State: memberAlive, Ranges: []statusRange{{First: 0, Last: 8191}}},
			{ID: "b", Role: "node", Addr: "10.0.0.2:7001", State: bState, Ranges: []statusRange{{First: 8192, Last: 16383}}},
		}
	}
	ref := &memberView{Self: "a", Role: "node", Epoch: 1, Members: members(memberAlive)}
	refOwners := ref.owners()
	same := &memberView{Self: "b", Role: "node", Epoch: 1, Members: members(memberAlive)}
	if ps := compareViews(ref, refOwners, ref.Members[1], same); len(ps) != 0 {
		t.Fatalf("identical views: %v", ps)
	}
	cut := &memberView{Self: "b", Role: "node", Epoch: 1, Members: members(memberAlive)}
	cut.Members[0].State = memberDead
	ps := compareViews(ref, refOwners, ref.Members[1], cut)
	if len(ps) != 1 || ps[0].Kind != problemDisagree || !strings.Contains(ps[0].Text, "sees node a dead") {
		t.Fatalf("a member seeing the entry dead: %v", ps)
	}
}
