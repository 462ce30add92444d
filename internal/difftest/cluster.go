package difftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/slots"
)

// RedisCLIBinary creates the multi-node oracle clusters
// (redis-cli --cluster create); it comes with redis-tools.
const RedisCLIBinary = "redis-cli"

// clusterCreateTimeout bounds redis-cli --cluster create, which polls the
// nodes once a second until they have all met.
const clusterCreateTimeout = 30 * time.Second

// clusterAnnounceIP is what every oracle node announces as its address.
// A lone cluster node never learns its own IP (nobody MEETs it), so
// without this CLUSTER NODES would print ":port@cport" and CLUSTER SLOTS
// an empty host; with it the one-node cluster answers exactly as the
// shardgate proxy, which knows the address it serves on, should.
const clusterAnnounceIP = "127.0.0.1"

// RedisCluster is a real Redis Cluster of masters on loopback, the oracle
// for behaviour that depends on which node owns a key (CROSSSLOT, MOVED)
// and for the CLUSTER replies of a node that owns every slot.
type RedisCluster struct {
	// Nodes in creation order; with n nodes, redis-cli gives node i the
	// i-th contiguous range of slots.
	Nodes []ClusterNode

	dir     string
	servers []*Redis
}

// ClusterNode is one master of a RedisCluster.
type ClusterNode struct {
	Addr    string      // 127.0.0.1:port
	ID      string      // CLUSTER MYID, 40 hex characters
	Slots   []SlotRange // the slots it owns, ascending
	Version string      // redis_version
}

// SlotRange is an inclusive range of hash slots.
type SlotRange struct{ First, Last uint16 }

// String prints the range as CLUSTER NODES does: "0-5460", or "7" alone.
func (r SlotRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// StartRedisCluster gives the test a fresh real Redis Cluster of n masters
// (n = 1, or n >= 3 as redis-cli requires), stopped and removed at
// cleanup. n = 1 is a lone cluster-mode node that was given all 16384
// slots with CLUSTER ADDSLOTSRANGE: what the shardgate proxy presents
// itself as. Larger clusters are made by redis-cli --cluster create with
// no replicas. It returns once every node reports cluster_state:ok and
// knows all n nodes; expect about two seconds (Redis keeps a freshly
// started master out of the ok state for its first 2 s).
//
// Without redis-server or redis-cli on PATH the test is skipped, or fails
// under CI=true.
func StartRedisCluster(t testing.TB, n int) *RedisCluster {
	t.Helper()
	requireBinaries(t, RedisBinary, RedisCLIBinary)
	c, err := LaunchRedisCluster(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// requireBinaries skips the test (fails it under CI=true) when one of the
// oracle's programs is missing.
func requireBinaries(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			msg := name + " not on PATH: differential cluster tests need Redis 7.0 (apt-get install redis-server redis-tools)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// LaunchRedisCluster is StartRedisCluster without a test: for sharing one
// cluster across a test binary from TestMain. The caller must Stop it.
func LaunchRedisCluster(n int) (*RedisCluster, error) {
	if n != 1 && n < 3 {
		return nil, fmt.Errorf("difftest: a Redis Cluster of %d masters cannot be created: redis-cli --cluster create needs at least 3 (or use 1)", n)
	}
	for _, name := range []string{RedisBinary, RedisCLIBinary} {
		if _, err := exec.LookPath(name); err != nil {
			return nil, err
		}
	}
	var errs []error
	for range startAttempts {
		c, err := launchClusterOnce(n)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("difftest: could not start a %d-node Redis Cluster: %w", n, errors.Join(errs...))
}

func launchClusterOnce(n int) (_ *RedisCluster, err error) {
	removeStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix+"cluster-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &RedisCluster{dir: dir}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w%s", err, c.output())
			c.Stop()
		}
	}()
	for i := range n {
		r, err := spawnClusterNode(dir, i)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, r)
	}
	deadline := time.Now().Add(readyTimeout)
	for _, r := range c.servers {
		if err := r.waitPing(deadline); err != nil {
			return nil, err
		}
	}
	if n == 1 {
		if err := addAllSlots(c.servers[0]); err != nil {
			return nil, err
		}
	} else if err := c.create(); err != nil {
		return nil, err
	}
	if err := c.waitOK(deadline, n); err != nil {
		return nil, err
	}
	if err := c.loadTopology(); err != nil {
		return nil, err
	}
	return c, nil
}

// spawnClusterNode starts node i of a cluster in its own directory under
// dir, on a free port and a free cluster-bus port.
func spawnClusterNode(dir string, i int) (*Redis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	busPort, err := freePort()
	if err != nil {
		return nil, err
	}
	nodeDir := filepath.Join(dir, "node-"+strconv.Itoa(i))
	if err := os.Mkdir(nodeDir, 0o755); err != nil {
		return nil, err
	}
	r := &Redis{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:  nodeDir,
		done: make(chan struct{}),
		log:  &bytes.Buffer{},
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--cluster-enabled", "yes",
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-config-file", filepath.Join(nodeDir, "nodes.conf"),
		"--cluster-announce-ip", clusterAnnounceIP,
		"--dir", nodeDir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--loglevel", "warning",
		"--logfile", "",
	}
	if err := r.spawn(args); err != nil {
		return nil, err
	}
	return r, nil
}

// waitPing waits until the server answers PING.
func (r *Redis) waitPing(deadline time.Time) error {
	for {
		select {
		case <-r.done:
			return fmt.Errorf("difftest: redis-server %s exited during startup", r.Addr)
		default:
		}
		c, err := Dial(r.Addr)
		if err == nil {
			v, err2 := c.DoStrings("PING")
			c.Close()
			if err2 == nil && v.Kind == SimpleString {
				return nil
			}
			err = err2
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("difftest: redis-server at %s did not answer PING: %v", r.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addAllSlots makes a lone node the owner of every slot.
func addAllSlots(r *Redis) error {
	c, err := Dial(r.Addr)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.DoStrings("CLUSTER", "ADDSLOTSRANGE", "0", strconv.Itoa(slots.Count-1))
	if err != nil || v.Kind != SimpleString {
		return fmt.Errorf("difftest: CLUSTER ADDSLOTSRANGE on %s: %s %v", r.Addr, v, err)
	}
	return nil
}

// create runs redis-cli --cluster create over all nodes, no replicas.
func (c *RedisCluster) create() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := []string{"--cluster", "create"}
	for _, r := range c.servers {
		args = append(args, r.Addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, RedisCLIBinary, args...)
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("difftest: redis-cli %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	// redis-cli exits 0 on some failures; it prints [OK] when the slots
	// are all covered and every node agrees.
	if !bytes.Contains(out, []byte("[OK] All 16384 slots covered")) {
		return fmt.Errorf("difftest: redis-cli --cluster create did not cover all slots:\n%s", out)
	}
	return nil
}

// waitOK waits until every node reports cluster_state:ok and knows all n
// nodes.
func (c *RedisCluster) waitOK(deadline time.Time, n int) error {
	want := "cluster_known_nodes:" + strconv.Itoa(n)
	for _, r := range c.servers {
		conn, err := Dial(r.Addr)
		if err != nil {
			return err
		}
		for {
			v, err := conn.DoStrings("CLUSTER", "INFO")
			if err != nil {
				conn.Close()
				return err
			}
			info := string(v.Str)
			if infoField(info, "cluster_state") == "ok" && strings.Contains(info, want+"\r\n") {
				break
			}
			if time.Now().After(deadline) {
				conn.Close()
				return fmt.Errorf("difftest: cluster node %s never became ok:\n%s", r.Addr, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
		conn.Close()
	}
	return nil
}

// loadTopology fills Nodes from each node's CLUSTER MYID and the first
// node's CLUSTER SLOTS.
func (c *RedisCluster) loadTopology() error {
	byAddr := map[string]int{}
	c.Nodes = make([]ClusterNode, len(c.servers))
	for i, r := range c.servers {
		conn, err := Dial(r.Addr)
		if err != nil {
			return err
		}
		id, err := conn.DoStrings("CLUSTER", "MYID")
		if err == nil && id.Kind != Bulk {
			err = fmt.Errorf("CLUSTER MYID: %s", id)
		}
		var info Value
		if err == nil {
			info, err = conn.DoStrings("INFO", "server")
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("difftest: %s: %w", r.Addr, err)
		}
		r.Version = infoField(string(info.Str), "redis_version")
		c.Nodes[i] = ClusterNode{Addr: r.Addr, ID: string(id.Str), Version: r.Version}
		byAddr[r.Addr] = i
	}
	conn, err := Dial(c.servers[0].Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	v, err := conn.DoStrings("CLUSTER", "SLOTS")
	if err != nil {
		return err
	}
	covered := 0
	for _, e := range v.Elems {
		// [first, last, [ip, port, id, metadata], replicas...]
		if len(e.Elems) < 3 || len(e.Elems[2].Elems) < 2 {
			return fmt.Errorf("difftest: unexpected CLUSTER SLOTS entry %s", e)
		}
		master := e.Elems[2]
		addr := net.JoinHostPort(string(master.Elems[0].Str), strconv.FormatInt(master.Elems[1].Int, 10))
		i, ok := byAddr[addr]
		if !ok {
			return fmt.Errorf("difftest: CLUSTER SLOTS names unknown node %s", addr)
		}
		r := SlotRange{First: uint16(e.Elems[0].Int), Last: uint16(e.Elems[1].Int)}
		c.Nodes[i].Slots = append(c.Nodes[i].Slots, r)
		covered += int(r.Last-r.First) + 1
	}
	if covered != slots.Count {
		return fmt.Errorf("difftest: CLUSTER SLOTS covers %d slots, want %d: %s", covered, slots.Count, v)
	}
	for i := range c.Nodes {
		s := c.Nodes[i].Slots
		for a := 1; a < len(s); a++ { // CLUSTER SLOTS is in slot order already
			if s[a].First < s[a-1].First {
				return fmt.Errorf("difftest: CLUSTER SLOTS out of order: %s", v)
			}
		}
	}
	return nil
}

// Stop kills every node and removes the cluster's directory.
func (c *RedisCluster) Stop() {
	for _, r := range c.servers {
		r.Stop()
	}
	os.RemoveAll(c.dir)
}

// output gathers the nodes' logs for a startup failure.
func (c *RedisCluster) output() string {
	var sb strings.Builder
	for _, r := range c.servers {
		if out := r.output(); out != "" {
			fmt.Fprintf(&sb, "\n%s output:\n%s", r.Addr, out)
		}
	}
	return sb.String()
}

// Addrs lists the nodes' addresses in creation order.
func (c *RedisCluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr
	}
	return a
}

// NodeForSlot is the node that owns slot.
func (c *RedisCluster) NodeForSlot(slot uint16) *ClusterNode {
	for i := range c.Nodes {
		for _, r := range c.Nodes[i].Slots {
			if r.First <= slot && slot <= r.Last {
				return &c.Nodes[i]
			}
		}
	}
	panic(fmt.Sprintf("difftest: no node owns slot %d", slot)) // loadTopology checked coverage
}

// NodeForKey is the node that owns key's slot.
func (c *RedisCluster) NodeForKey(key string) *ClusterNode {
	return c.NodeForSlot(slots.Slot([]byte(key)))
}

// ConnForSlot opens a RESP2 connection to the node that owns slot, so that
// a command is judged by that node (CROSSSLOT and the rest) rather than
// redirected with MOVED. Cleanup closes it.
func (c *RedisCluster) ConnForSlot(t testing.TB, slot uint16) *Conn {
	t.Helper()
	return c.ConnForSlotProto(t, slot, 2)
}

// ConnForSlotProto is ConnForSlot on a RESP2 or (HELLO 3) RESP3
// connection.
func (c *RedisCluster) ConnForSlotProto(t testing.TB, slot uint16, proto int) *Conn {
	t.Helper()
	return c.NodeForSlot(slot).Conn(t, proto)
}

// ConnForKey is ConnForSlot for key's slot.
func (c *RedisCluster) ConnForKey(t testing.TB, key string) *Conn {
	t.Helper()
	return c.ConnForSlot(t, slots.Slot([]byte(key)))
}

// Conn opens a connection to the node in RESP proto (2 or 3). Cleanup
// closes it.
func (n *ClusterNode) Conn(t testing.TB, proto int) *Conn {
	t.Helper()
	conn, err := DialProto(n.Addr, proto)
	if err != nil {
		t.Fatalf("difftest: connecting to cluster node %s: %v", n.Addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// FlushAll empties every node, so that tests can share one cluster.
func (c *RedisCluster) FlushAll(t testing.TB) {
	t.Helper()
	for i := range c.Nodes {
		conn := c.Nodes[i].Conn(t, 2)
		if v, err := conn.DoStrings("FLUSHALL"); err != nil || v.Kind != SimpleString {
			t.Fatalf("difftest: FLUSHALL on cluster node %s: %s %v", c.Nodes[i].Addr, v, err)
		}
		conn.Close()
	}
}
