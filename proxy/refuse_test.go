package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/slots"
)

// TestPipelineRefusedAfterDownHead: a pipeline whose first command's node
// is down gets CLUSTERDOWN for its keyed commands after it too, without
// running them, however many reads it spans; one that reaches the down
// node further along runs the rest as before; the client's next command,
// sent after it read the replies, runs.
func TestPipelineRefusedAfterDownHead(t *testing.T) {
	down := freeAddr(t)
	addr, topo := clusterWith(t, []string{"", down, ""}, proxy.Options{RedialBackoff: time.Minute})
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	c := dial(t, addr, 2)
	if v := do(t, c, "INCR", k1); v.Text() != resp.ErrClusterDownSlot {
		t.Fatalf("INCR on the down node's slot: %v", v)
	}
	receive := func(what string, want ...string) {
		t.Helper()
		for i, w := range want {
			v, err := c.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Text(); v.IsError() && got != w || !v.IsError() && fmt.Sprint(v.Int) != w && got != w {
				t.Errorf("%s: reply %d = %v, want %s", what, i, v, w)
			}
		}
	}
	send := func(b []byte) {
		t.Helper()
		if err := c.WriteRaw(b); err != nil {
			t.Fatal(err)
		}
	}

	send(pipeline(4, func(i int) []string {
		return [][]string{{"INCR", k1}, {"RPUSH", k0, "x"}, {"PING"}, {"RPUSH", k2, "x"}}[i]
	}))
	receive("down node first", resp.ErrClusterDownSlot, resp.ErrClusterDown, "PONG", resp.ErrClusterDown)
	for _, k := range []string{k0, k2} {
		if v := do(t, c, "LLEN", k); v.Int != 0 {
			t.Errorf("LLEN %s after a refused pipeline = %v, want 0", k, v)
		}
	}

	send(pipeline(3, func(i int) []string {
		return [][]string{{"RPUSH", k0, "y"}, {"INCR", k1}, {"RPUSH", k2, "y"}}[i]
	}))
	receive("down node second", "1", resp.ErrClusterDownSlot, "1")

	// One write, far bigger than a read: every part is refused.
	const n = 20000
	send(pipeline(n+1, func(i int) []string {
		if i == 0 {
			return []string{"INCR", k1}
		}
		return []string{"RPUSH", k0, strings.Repeat("v", 20)}
	}))
	want := make([]string, n+1)
	want[0] = resp.ErrClusterDownSlot
	for i := 1; i <= n; i++ {
		want[i] = resp.ErrClusterDown
	}
	receive("long pipeline", want...)
	if v := do(t, c, "LLEN", k0); v.Int != 1 {
		t.Errorf("LLEN %s after the long refused pipeline = %v, want 1", k0, v)
	}
	if v := do(t, c, "RPUSH", k2, "z"); v.Int != 2 {
		t.Errorf("RPUSH after the refused pipeline's replies: %v, want 2", v)
	}
}

// TestRefusedSplitCommand: in a refused pipeline, a split command whose
// parts all go to live nodes ran nowhere and is refused as a whole, not
// reported as a failed part of a live node; one with a part for the down
// node names that node.
func TestRefusedSplitCommand(t *testing.T) {
	down := freeAddr(t)
	addr, topo := clusterWith(t, []string{"", down, ""}, proxy.Options{RedialBackoff: time.Minute, CrossSlot: proxy.CrossSlotSplit})
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	c := dial(t, addr, 2)
	if err := c.WriteRaw(pipeline(3, func(i int) []string {
		return [][]string{{"GET", k1}, {"MSET", k0, "new", k2, "new"}, {"MSET", k0, "new", k1, "new"}}[i]
	})); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		resp.ErrClusterDownSlot, resp.ErrClusterDown,
		fmt.Sprintf(resp.ErrSplitPart, slots.SlotString(k1), down, resp.ErrClusterDownSlot),
	} {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if v.Text() != want {
			t.Errorf("reply %d = %v, want %s", i, v, want)
		}
	}
	for _, k := range []string{k0, k2} {
		if v := do(t, c, "EXISTS", k); v.Int != 0 {
			t.Errorf("EXISTS %s after the refused pipeline = %v, want 0", k, v)
		}
	}
}

// ledPipeline runs, through cc, a pipeline led by INCR head, then RPUSH
// push x and INCR incr, and returns its error.
func ledPipeline(ctx context.Context, cc *redis.ClusterClient, head, push, incr string) error {
	_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, head)
		p.RPush(ctx, push, "x")
		p.Incr(ctx, incr)
		return nil
	})
	return err
}

// TestClusterClientPipelineRunsOnce: go-redis's ClusterClient retries a
// pipeline whose first command answers CLUSTERDOWN, three times; through
// the proxy, the commands in it for live nodes still run once at most.
func TestClusterClientPipelineRunsOnce(t *testing.T) {
	down := freeAddr(t)
	addr, topo := clusterWith(t, []string{"", down, ""}, proxy.Options{RedialBackoff: time.Minute})
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	defer cc.Close()
	ctx := context.Background()
	for range 3 {
		if err := ledPipeline(ctx, cc, k1, k0, k2); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			t.Fatalf("pipeline with its first command on a down node: err %v", err)
		}
	}
	n, err := cc.LLen(ctx, k0).Result()
	if err != nil {
		t.Fatal(err)
	}
	v, err := cc.Get(ctx, k2).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if n != 0 || v != "" {
		t.Errorf("after 3 refused pipelines: LLEN %s = %d, GET %s = %q; want 0 and nil (nothing ran)", k0, n, k2, v)
	}
}

// TestLoadingNodeRefusesPipelines: a node answering LOADING counts as
// down for pipeline refusals, so a go-redis ClusterClient, which retries
// a whole pipeline whose first command gets CLUSTERDOWN, does not run the
// commands for the other nodes again with every retry (at most the first
// attempt, sent before the proxy had seen a LOADING, runs them). The
// loading node's slots answer CLUSTERDOWN, not LOADING: a pipeline led by
// a live node's command gets that for the loading node's command only.
func TestLoadingNodeRefusesPipelines(t *testing.T) {
	loading := fakeNode(t, func(nc net.Conn) {
		serveCommands(nc, func(args [][]byte) string {
			if strings.EqualFold(string(args[0]), "HELLO") { // served while loading
				return "%1\r\n+proto\r\n:3\r\n"
			}
			return "-" + resp.ErrLoading + "\r\n"
		})
	})
	addr, topo := clusterWith(t, []string{"", loading, ""}, proxy.Options{})
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
	defer cc.Close()
	ctx := context.Background()
	for range 3 {
		if err := ledPipeline(ctx, cc, k1, k0, k2); err == nil {
			t.Fatal("pipeline with its first command on a loading node: no error")
		}
	}
	n, err := cc.LLen(ctx, k0).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n > 1 {
		t.Errorf("after 3 pipelines led by a loading node's command: LLEN %s = %d, want at most 1", k0, n)
	}
	// A live node's pipeline is served whole meanwhile.
	cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, k0, "y")
		p.Incr(ctx, k2)
		return nil
	})
	if err != nil || cmds[1].(*redis.IntCmd).Val() < 1 {
		t.Errorf("pipeline led by a live node's command: %v %v", cmds, err)
	}
	c := dial(t, addr, 2)
	if err := c.WriteRaw(pipeline(3, func(i int) []string {
		return [][]string{{"INCR", k2}, {"INCR", k1}, {"INCR", keyOnNode(t, topo, 0, "n")}}[i]
	})); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"int", resp.ErrClusterDownSlot, "int"} {
		v, err := c.Receive()
		if err != nil || (want == "int") != (v.Kind == difftest.Integer) || want != "int" && v.Text() != want {
			t.Errorf("reply %d of a pipeline with the loading node's command second: %v %v, want %s", i, v, err, want)
		}
	}
}

// TestRefusalReadsPipelinesRight: a client that sends each command once
// it has the last reply never has a live node's command refused, however
// fast it sends; a fresh connection's first pipeline, and one whose first
// command is bigger than a read, are refused after a down node's first
// command as any other.
func TestRefusalReadsPipelinesRight(t *testing.T) {
	down := freeAddr(t)
	addr, topo := clusterWith(t, []string{"", down, ""}, proxy.Options{RedialBackoff: time.Minute})
	k0, k1 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b")
	c := dial(t, addr, 2)
	for i := range 2000 {
		if v := do(t, c, "INCR", k1); v.Text() != resp.ErrClusterDownSlot {
			t.Fatalf("INCR on the down node's slot: %v", v)
		}
		if v := do(t, c, "INCR", k0); v.Int != int64(i+1) {
			t.Fatalf("INCR %d on a live node's slot, sent after the last reply: %v", i+1, v)
		}
	}
	check := func(what string, c *difftest.Conn, first []string) {
		t.Helper()
		if err := c.WriteRaw(pipeline(2, func(i int) []string { return [][]string{first, {"RPUSH", k0 + "l", "x"}}[i] })); err != nil {
			t.Fatal(err)
		}
		for i, want := range []string{resp.ErrClusterDownSlot, resp.ErrClusterDown} {
			if v, err := c.Receive(); err != nil || v.Text() != want {
				t.Fatalf("%s: reply %d = %v, %v; want %s", what, i, v, err, want)
			}
		}
	}
	for range 50 {
		check("a fresh connection's first pipeline", dial(t, addr, 2), []string{"INCR", k1})
	}
	for _, n := range []int{20 << 10, 300 << 10} {
		check(fmt.Sprintf("a pipeline whose first command holds %d bytes", n), c, []string{"SET", k1, strings.Repeat("v", n)})
	}
	if v := do(t, c, "LLEN", k0+"l"); v.Int != 0 {
		t.Errorf("LLEN after refused pipelines = %v, want 0", v)
	}
}

// TestRefusalOnlyAfterKeyedHead: a pipeline is refused only after a first
// command that answers CLUSTERDOWN itself: a keyed command on a node out
// of reach, or a fan-out that needs every node. One that starts with
// INFO or a split command, whose replies say otherwise (a cluster
// client does not retry them), runs the rest; a WATCH transaction in a
// refused pipeline does not run.
func TestRefusalOnlyAfterKeyedHead(t *testing.T) {
	down := freeAddr(t)
	addrs := []string{"", down, ""}
	addr, topo := clusterWith(t, addrs, proxy.Options{RedialBackoff: time.Minute, CrossSlot: proxy.CrossSlotSplit})
	k0, k1, k2 := keyOnNode(t, topo, 0, "a"), keyOnNode(t, topo, 1, "b"), keyOnNode(t, topo, 2, "c")
	kw := "{" + k0 + "}w" // on node 0 too
	c := dial(t, addr, 2)
	if v := do(t, c, "INCR", k1); v.Text() != resp.ErrClusterDownSlot {
		t.Fatalf("INCR on the down node's slot: %v", v)
	}
	run := func(what string, cmds [][]string) []difftest.Value {
		t.Helper()
		if err := c.WriteRaw(pipeline(len(cmds), func(i int) []string { return cmds[i] })); err != nil {
			t.Fatal(err)
		}
		out := make([]difftest.Value, len(cmds))
		for i := range cmds {
			v, err := c.Receive()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			out[i] = v
		}
		return out
	}
	for i, first := range [][]string{{"INFO", "keyspace"}, {"MGET", k0, k1}, {"PING"}} {
		got := run(fmt.Sprint(first), [][]string{first, {"RPUSH", k2, "x"}})
		if got[1].Int != int64(i+1) {
			t.Errorf("pipeline [%v, RPUSH]: %v, RPUSH got %v, want %d (it runs)", first, got[0], got[1], i+1)
		}
	}
	// Fan-outs that need every node answer CLUSTERDOWN of their own,
	// which a cluster client retries the pipeline for: refused.
	for _, first := range [][]string{{"DBSIZE"}, {"KEYS", "*"}, {"RANDOMKEY"}} {
		got := run(fmt.Sprint(first), [][]string{first, {"RPUSH", k2, "x"}})
		if !strings.HasPrefix(got[0].Text(), "CLUSTERDOWN ") || got[1].Text() != resp.ErrClusterDown {
			t.Errorf("pipeline [%v, RPUSH]: %v, %v; want CLUSTERDOWN and %s", first, got[0], got[1], resp.ErrClusterDown)
		}
	}
	if v := do(t, c, "LLEN", k2); v.Int != 3 {
		t.Errorf("LLEN after the pipelines = %v, want 3", v)
	}
	got := run("a WATCH transaction after a refused head", [][]string{
		{"GET", k1}, {"WATCH", kw}, {"MULTI"}, {"INCR", kw}, {"EXEC"}, {"GET", kw},
	})
	for i, want := range []string{resp.ErrClusterDownSlot, resp.ErrClusterDown, "OK", "QUEUED", resp.ErrClusterDown, resp.ErrClusterDown} {
		if got[i].Text() != want {
			t.Errorf("refused pipeline with a WATCH transaction: reply %d = %v, want %s", i, got[i], want)
		}
	}
	if v := do(t, c, "GET", kw); v.Kind != difftest.NullBulk {
		t.Errorf("GET of the key the refused transaction would have incremented: %v, want nil", v)
	}
	// A WATCH transaction of its own, once the pipeline is over, runs.
	got = run("a WATCH transaction", [][]string{{"WATCH", kw}, {"MULTI"}, {"INCR", kw}, {"EXEC"}})
	if len(got[3].Elems) != 1 || got[3].Elems[0].Int != 1 {
		t.Errorf("WATCH transaction with a node down elsewhere: EXEC %v", got[3])
	}
}
