package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/slots"
)

// These tests run a gossip cluster as users do: `shardgate node` processes
// that find each other with --gossip/--join and divide the slots among
// themselves (--bootstrap-expect), a `shardgate proxy` that joins the same
// gossip, and `shardgate cluster status` to look at it. Gossip runs with
// --gossip-fast (a dead member is found in about a second on loopback)
// and is encrypted with a --gossip-key.

// clusterKey is the gossip key of the test clusters (AES-256, hex).
const clusterKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// gossipStartedRE finds a member's gossip address in its log.
var gossipStartedRE = regexp.MustCompile(`msg="cluster: member started".* gossip=(\S+)`)

// clusterDown is the proxy's answer for a slot whose node is dead.
const clusterDown = "CLUSTERDOWN Hash slot not served"

// gossipProc is one node or proxy process of a gossip cluster.
type gossipProc struct {
	cmd    *exec.Cmd
	log    *lineLog
	addr   string // RESP
	gossip string
	dir    string // --dir (nodes)
}

// startGossipProc starts `shardgate <role>` with args plus the gossip
// flags every member of the test cluster shares, and waits until it
// listens and gossips.
func startGossipProc(t *testing.T, bin, role string, args ...string) *gossipProc {
	t.Helper()
	args = append([]string{role, "--gossip", "127.0.0.1:0", "--gossip-fast", "--gossip-key", clusterKey}, args...)
	cmd := exec.Command(bin, args...)
	p := &gossipProc{cmd: cmd, log: startLogged(t, cmd)}
	re := listeningRE
	if role == "proxy" {
		re = proxyListeningRE
	}
	p.addr = p.log.wait(t, re)
	p.gossip = p.log.wait(t, gossipStartedRE)
	return p
}

// startClusterNode starts a node keeping its state in dir, on RESP
// address addr ("127.0.0.1:0" for a free port), joining join.
func startClusterNode(t *testing.T, bin, dir, addr string, join ...string) *gossipProc {
	t.Helper()
	args := []string{"--addr", addr, "--dir", dir, "--bootstrap-expect", "3"}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	p := startGossipProc(t, bin, "node", args...)
	p.dir = dir
	return p
}

// kill9 kills the process with SIGKILL: no leave, no flush.
func (p *gossipProc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

// statusJSON is the part of `shardgate cluster status --json` the tests
// read.
type statusJSON struct {
	ClusterID string `json:"cluster_id"`
	Members   []struct {
		ID     string `json:"id"`
		Role   string `json:"role"`
		Addr   string `json:"addr"`
		State  string `json:"state"`
		Epoch  uint64 `json:"epoch"`
		Slots  int    `json:"slots"`
		View   string `json:"view"`
		Ranges []struct {
			First uint16 `json:"first"`
			Last  uint16 `json:"last"`
		} `json:"ranges"`
	} `json:"members"`
	Problems []struct {
		Kind   string `json:"kind"`
		Member string `json:"member"`
		Text   string `json:"text"`
	} `json:"problems"`
	Consistent bool `json:"consistent"`
}

// clusterStatus runs `shardgate cluster status --json` with args (--join
// or --resp and their flags); the exit code says whether the cluster is
// consistent (0) or not (3).
func clusterStatus(t *testing.T, bin string, args ...string) (*statusJSON, error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"cluster", "status", "--json", "--timeout", "2s"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		return nil, fmt.Errorf("cluster status %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	var st statusJSON
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		return nil, fmt.Errorf("cluster status output: %v\n%s", err, out.String())
	}
	if (err == nil) != st.Consistent {
		return nil, fmt.Errorf("cluster status exit %v with consistent=%v", err, st.Consistent)
	}
	return &st, nil
}

// viaGossip are the status flags to observe the test cluster by joining
// its gossip at join.
func viaGossip(join string) []string {
	return []string{"--join", join, "--gossip", "127.0.0.1:0", "--gossip-fast", "--gossip-key", clusterKey}
}

// viaRESP are the status flags to read the cluster over RESP from addr.
func viaRESP(addr string) []string { return []string{"--resp", addr} }

// waitConsistent waits until the status (read with args) is consistent
// with nodes nodes and proxies proxies, all alive (proxies < 0: any
// number; a node's CLUSTER NODES has no place for proxies).
func waitConsistent(t *testing.T, bin string, nodes, proxies int, args ...string) *statusJSON {
	t.Helper()
	var (
		last *statusJSON
		err  error
	)
	deadline := time.Now().Add(e2eTimeout)
	for time.Now().Before(deadline) {
		last, err = clusterStatus(t, bin, args...)
		if err == nil && last.Consistent && countMembers(last, "node", "alive") == nodes && (proxies < 0 || countMembers(last, "proxy", "alive") == proxies) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no consistent cluster of %d nodes and %d proxies seen by status %s: %+v %v", nodes, proxies, strings.Join(args, " "), last, err)
	return nil
}

func countMembers(st *statusJSON, role, state string) int {
	n := 0
	for _, m := range st.Members {
		if m.Role == role && m.State == state {
			n++
		}
	}
	return n
}

// ownerAddr returns the RESP address of the node owning slot.
func ownerAddr(st *statusJSON, slot uint16) string {
	for _, m := range st.Members {
		for _, r := range m.Ranges {
			if r.First <= slot && slot <= r.Last {
				return m.Addr
			}
		}
	}
	return ""
}

// keyOnNode returns a key whose slot node addr owns.
func keyOnNode(st *statusJSON, addr string) string {
	for i := 0; ; i++ {
		k := fmt.Sprint("key:", i)
		if ownerAddr(st, slots.SlotString(k)) == addr {
			return k
		}
	}
}

// TestGossipCluster: three nodes and a proxy find each other by gossip and
// serve every slot; a go-redis ClusterClient straight at the nodes (MOVED
// from a node that does not own a key) and a plain client at the proxy
// both work. A node killed with SIGKILL makes the proxy answer
// CLUSTERDOWN for its slots, and only its slots, within 3 seconds; it
// resumes its slots when it restarts from its --dir on the same port, and
// a node restarted on a new port is found there.
func TestGossipCluster(t *testing.T) {
	bin := buildShardgate(t)
	ctx := testContext(t)
	tmp := t.TempDir()
	n1 := startClusterNode(t, bin, filepath.Join(tmp, "n1"), "127.0.0.1:0")
	n2 := startClusterNode(t, bin, filepath.Join(tmp, "n2"), "127.0.0.1:0", n1.gossip)
	n3 := startClusterNode(t, bin, filepath.Join(tmp, "n3"), "127.0.0.1:0", n1.gossip)
	px := startGossipProc(t, bin, "proxy", "--addr", "127.0.0.1:0", "--join", n2.gossip)
	dump := func() string {
		return fmt.Sprintf("\nnode 1:\n%s\nnode 2:\n%s\nnode 3:\n%s\nproxy:\n%s", n1.log, n2.log, n3.log, px.log)
	}

	// Seen from the proxy and from a node: one cluster, three nodes
	// dividing the slots as redis-cli --cluster create would, one proxy.
	st := waitConsistent(t, bin, 3, 1, viaGossip(px.gossip)...)
	nodeSt := waitConsistent(t, bin, 3, -1, viaRESP(n3.addr)...)
	var ranges []string
	for _, m := range st.Members {
		if m.Role == "node" {
			if m.Slots == 0 || m.Epoch == 0 {
				t.Errorf("node %s: %d slots at epoch %d", m.Addr, m.Slots, m.Epoch)
			}
			for _, r := range m.Ranges {
				ranges = append(ranges, fmt.Sprintf("%d-%d", r.First, r.Last))
			}
		}
	}
	slices.Sort(ranges)
	if want := []string{"0-5460", "10923-16383", "5461-10922"}; !slices.Equal(ranges, want) {
		t.Errorf("slot ranges %v, want %v", ranges, want)
	}
	for s := range slots.Count {
		if ownerAddr(st, uint16(s)) != ownerAddr(nodeSt, uint16(s)) {
			t.Fatalf("slot %d: the proxy's status says %s, node 3's %s", s, ownerAddr(st, uint16(s)), ownerAddr(nodeSt, uint16(s)))
		}
	}
	k1, k2, k3 := keyOnNode(st, n1.addr), keyOnNode(st, n2.addr), keyOnNode(st, n3.addr)

	// go-redis's ClusterClient at the nodes, and a plain client at the
	// proxy, over the same keys.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{n1.addr, n2.addr, n3.addr}})
	defer cc.Close()
	pc := redis.NewClient(&redis.Options{Addr: px.addr, MaxRetries: -1})
	defer pc.Close()
	const n = 300
	for i := range n {
		if err := cc.Set(ctx, fmt.Sprint("ck:", i), i, 0).Err(); err != nil {
			t.Fatalf("cluster client SET ck:%d: %v%s", i, err, dump())
		}
	}
	for i := range n {
		if v, err := pc.Get(ctx, fmt.Sprint("ck:", i)).Int(); err != nil || v != i {
			t.Fatalf("proxy GET ck:%d = %d, %v", i, v, err)
		}
	}
	var total atomic.Int64 // ForEachShard runs the shards concurrently
	if err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		v, err := c.DBSize(ctx).Result()
		total.Add(v)
		return err
	}); err != nil || total.Load() != n {
		t.Errorf("DBSIZE over the nodes = %d (%v), want %d", total.Load(), err, n)
	}
	// A node answers MOVED for a key it does not own, as Redis Cluster.
	plain := redis.NewClient(&redis.Options{Addr: n1.addr, MaxRetries: -1})
	defer plain.Close()
	wantMoved := fmt.Sprintf("MOVED %d %s", slots.SlotString(k2), n2.addr)
	if err := plain.Get(ctx, k2).Err(); err == nil || err.Error() != wantMoved {
		t.Errorf("GET %s on node 1: %v, want %s", k2, err, wantMoved)
	}
	for _, k := range []string{k1, k2, k3} {
		if err := pc.Set(ctx, k, "v:"+k, 0).Err(); err != nil {
			t.Fatalf("proxy SET %s: %v", k, err)
		}
	}

	// SIGKILL node 2: CLUSTERDOWN for its slots within 3 s, the others
	// served throughout.
	n2.kill9(t)
	killed := time.Now()
	for {
		err := pc.Get(ctx, k2).Err()
		if err != nil && err.Error() == clusterDown {
			break
		}
		if time.Since(killed) > 3*time.Second {
			t.Fatalf("3 s after node 2 was killed, GET %s through the proxy answers %v, want %s%s", k2, err, clusterDown, dump())
		}
		for _, k := range []string{k1, k3} {
			if v, err := pc.Get(ctx, k).Result(); err != nil || v != "v:"+k {
				t.Fatalf("GET %s (a live node's) after node 2 was killed: %q %v", k, v, err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("CLUSTERDOWN %v after the kill", time.Since(killed).Round(time.Millisecond))
	// And it stays so (past the proxy's redial backoff, once gossip has
	// declared the node dead), the other slots served throughout.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := pc.Get(ctx, k2).Err(); err == nil || err.Error() != clusterDown {
			t.Fatalf("GET %s with node 2 dead: %v, want %s", k2, err, clusterDown)
		}
		for _, k := range []string{k1, k3} {
			if v, err := pc.Get(ctx, k).Result(); err != nil || v != "v:"+k {
				t.Fatalf("GET %s with node 2 dead: %q %v", k, v, err)
			}
		}
	}
	waitUntil(t, "cluster status to report node 2's slots", func() bool {
		st, err := clusterStatus(t, bin, viaGossip(n1.gossip)...)
		return err == nil && !st.Consistent && len(st.Problems) == 1 && st.Problems[0].Kind == "dead-owner" && countMembers(st, "node", "dead") == 1
	})

	// Node 2 back from its --dir on the same port: its slots are served
	// again, by the proxy and to the cluster client.
	n2 = startClusterNode(t, bin, n2.dir, n2.addr, n1.gossip)
	waitUntil(t, "the proxy to serve node 2's slots again", func() bool { return pc.Set(ctx, k2, "again", 0).Err() == nil })
	if v, err := cc.Get(ctx, k2).Result(); err != nil || v != "again" {
		t.Errorf("cluster client GET %s after node 2's restart: %q %v", k2, v, err)
	}
	st = waitConsistent(t, bin, 3, 1, viaGossip(n3.gossip)...)
	if ownerAddr(st, slots.SlotString(k2)) != n2.addr {
		t.Errorf("after its restart node 2 (%s) does not own %s: %+v", n2.addr, k2, st)
	}

	// Node 3 killed and restarted on a new port: found at its new address.
	old3 := n3.addr
	n3.kill9(t)
	waitUntil(t, "CLUSTERDOWN for node 3's slots", func() bool {
		err := pc.Get(ctx, k3).Err()
		return err != nil && err.Error() == clusterDown
	})
	n3 = startClusterNode(t, bin, n3.dir, "127.0.0.1:0", n2.gossip)
	if n3.addr == old3 {
		t.Fatalf("node 3 restarted on its old port %s", old3)
	}
	waitUntil(t, "the proxy to serve node 3's slots at its new address", func() bool { return pc.Set(ctx, k3, "moved", 0).Err() == nil })
	st = waitConsistent(t, bin, 3, -1, viaRESP(n1.addr)...)
	if ownerAddr(st, slots.SlotString(k3)) != n3.addr {
		t.Errorf("node 1 does not see node 3 at %s: %+v", n3.addr, st)
	}
	waitConsistent(t, bin, 3, 1, viaGossip(px.gossip)...)
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{n1.addr}})
	defer cc2.Close()
	if v, err := cc2.Get(ctx, k3).Result(); err != nil || v != "moved" {
		t.Errorf("a new cluster client GET %s: %q %v", k3, v, err)
	}
	for _, k := range []string{k1, k2, k3} {
		if err := pc.Set(ctx, k, "end", 0).Err(); err != nil {
			t.Errorf("proxy SET %s at the end: %v%s", k, err, dump())
		}
	}
}
