package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/slots"
)

// These tests run the proxy as users do: `shardgate proxy` in front of
// three `shardgate node` processes, or `shardgate up`, driven by real
// clients (go-redis plain and cluster clients, redis-cli, redis-py's
// RedisCluster).

const crossSlotErr = "CROSSSLOT Keys in request don't hash to the same slot"

var proxyListeningRE = regexp.MustCompile(`msg="proxy listening" addr=(\S+)`)

// startProxyCluster runs three nodes and a proxy in front of them, each on
// a port the kernel picks, and returns the proxy's address.
func startProxyCluster(t *testing.T, bin string, extra ...string) string {
	t.Helper()
	var nodes []string
	for range 3 {
		_, addr, _ := startNode(t, bin)
		nodes = append(nodes, addr)
	}
	args := append([]string{"proxy", "--addr", "127.0.0.1:0", "--nodes", strings.Join(nodes, ",")}, extra...)
	cmd := exec.Command(bin, args...)
	return startLogged(t, cmd).wait(t, proxyListeningRE)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestProxyGoRedis drives the proxy with go-redis's plain client in RESP2
// and RESP3: single commands spread over the nodes, pipelines, MULTI/EXEC
// with TxPipelined, optimistic locking with Watch under contention,
// MGET/MSET with hash tags, CROSSSLOT without, and SCAN across nodes.
func TestProxyGoRedis(t *testing.T) {
	bin := buildShardgate(t)
	addr := startProxyCluster(t, bin)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ctx := testContext(t)
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, PoolSize: 8})
			defer rdb.Close()
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := rdb.Ping(ctx).Result(); err != nil || v != "PONG" {
				t.Fatalf("PING: %q %v", v, err)
			}

			// A pipeline over many slots: replies in order.
			const n = 300
			cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range n {
					p.Set(ctx, fmt.Sprint("key:", i), i, 0)
					p.Incr(ctx, fmt.Sprint("ctr:", i))
				}
				return nil
			})
			if err != nil || len(cmds) != 2*n {
				t.Fatalf("pipeline: %d replies, %v", len(cmds), err)
			}
			gets, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range n {
					p.Get(ctx, fmt.Sprint("key:", i))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range gets {
				if v := c.(*redis.StringCmd).Val(); v != strconv.Itoa(i) {
					t.Fatalf("pipelined GET key:%d = %q", i, v)
				}
			}
			if v := rdb.DBSize(ctx).Val(); v != 2*n {
				t.Errorf("DBSIZE = %d, want %d", v, 2*n)
			}
			var scanned int
			iter := rdb.Scan(ctx, 0, "key:*", 50).Iterator()
			for iter.Next(ctx) {
				scanned++
			}
			if err := iter.Err(); err != nil || scanned != n {
				t.Errorf("SCAN: %d keys, %v; want %d", scanned, err, n)
			}

			// MSET/MGET: hash tags in one slot, CROSSSLOT otherwise.
			if err := rdb.MSet(ctx, "{user:1}name", "ann", "{user:1}age", "30").Err(); err != nil {
				t.Fatalf("MSET with a tag: %v", err)
			}
			vals, err := rdb.MGet(ctx, "{user:1}name", "{user:1}age", "{user:1}none").Result()
			if err != nil || len(vals) != 3 || vals[0] != "ann" || vals[1] != "30" || vals[2] != nil {
				t.Errorf("MGET with a tag: %v %v", vals, err)
			}
			if err := rdb.MSet(ctx, "a", "1", "b", "2").Err(); err == nil || err.Error() != crossSlotErr {
				t.Errorf("MSET across slots: %v, want %s", err, crossSlotErr)
			}

			// MULTI/EXEC in one slot.
			res, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "{tx}a", "1", 0)
				p.IncrBy(ctx, "{tx}a", 41)
				p.Get(ctx, "{tx}a")
				return nil
			})
			if err != nil || len(res) != 3 || res[2].(*redis.StringCmd).Val() != "42" {
				t.Fatalf("TxPipelined: %v %v", res, err)
			}
			// ... and across slots: EXEC answers CROSSSLOT.
			_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "a", "1", 0)
				p.Set(ctx, "b", "1", 0)
				return nil
			})
			if err == nil || err.Error() != crossSlotErr {
				t.Errorf("TxPipelined across slots: %v, want %s", err, crossSlotErr)
			}

			// Optimistic locking: concurrent WATCH/MULTI increments,
			// retried on conflict, lose no update.
			const workers, incrs = 4, 15
			key := "{lock}counter"
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range incrs {
						for {
							err := rdb.Watch(ctx, func(tx *redis.Tx) error {
								v, err := tx.Get(ctx, key).Int()
								if err != nil && !errors.Is(err, redis.Nil) {
									return err
								}
								_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
									p.Set(ctx, key, v+1, 0)
									return nil
								})
								return err
							}, key)
							if errors.Is(err, redis.TxFailedErr) {
								continue
							}
							if err != nil {
								errs <- err
								return
							}
							break
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("WATCH transaction: %v", err)
			}
			if v, err := rdb.Get(ctx, key).Int(); err != nil || v != workers*incrs {
				t.Errorf("counter after %d WATCH increments = %d (%v)", workers*incrs, v, err)
			}
		})
	}
}

// TestProxyGoRedisCluster points go-redis's ClusterClient at the proxy: it
// discovers the "cluster" with CLUSTER SLOTS (one master, the proxy,
// owning every slot) and then works for keys in every slot.
func TestProxyGoRedisCluster(t *testing.T) {
	bin := buildShardgate(t)
	addr := startProxyCluster(t, bin)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ctx := testContext(t)
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, Protocol: proto})
			defer cc.Close()
			cs, err := cc.ClusterSlots(ctx).Result()
			if err != nil || len(cs) != 1 || cs[0].Start != 0 || cs[0].End != 16383 ||
				len(cs[0].Nodes) != 1 || cs[0].Nodes[0].Addr != addr {
				t.Fatalf("CLUSTER SLOTS: %+v %v; want the proxy %s owning 0-16383", cs, err, addr)
			}
			if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
				return c.FlushAll(ctx).Err()
			}); err != nil {
				t.Fatal(err)
			}
			const n = 1000
			for i := range n {
				if err := cc.Set(ctx, fmt.Sprint("ck:", i), i, 0).Err(); err != nil {
					t.Fatalf("SET ck:%d: %v", i, err)
				}
			}
			cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := range n {
					p.Get(ctx, fmt.Sprint("ck:", i))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cmds {
				if v := c.(*redis.StringCmd).Val(); v != strconv.Itoa(i) {
					t.Fatalf("GET ck:%d = %q", i, v)
				}
			}
			var total int64
			if err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
				v, err := c.DBSize(ctx).Result()
				total += v
				return err
			}); err != nil || total != n {
				t.Errorf("DBSIZE over the shards = %d (%v), want %d", total, err, n)
			}
			res, err := cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, "{c}x")
				p.Incr(ctx, "{c}x")
				return nil
			})
			if err != nil || len(res) != 2 || res[1].(*redis.IntCmd).Val() != 2 {
				t.Errorf("cluster TxPipelined: %v %v", res, err)
			}
			if vals, err := cc.MGet(ctx, "{c}x", "{c}y").Result(); err != nil || len(vals) != 2 || vals[0] != "2" || vals[1] != nil {
				t.Errorf("cluster MGET with a tag: %v %v", vals, err)
			}
			if err := cc.MGet(ctx, "a", "b").Err(); err == nil || err.Error() != crossSlotErr {
				t.Errorf("cluster MGET across slots: %v, want %s", err, crossSlotErr)
			}
			if v, err := cc.ClusterKeySlot(ctx, "ck:1").Result(); err != nil || v != int64(slots.SlotString("ck:1")) {
				t.Errorf("CLUSTER KEYSLOT ck:1 = %d %v", v, err)
			}
		})
	}
}

// TestProxyRedisCLI: redis-cli in cluster mode (-c) and plain against the
// proxy, strict and split.
func TestProxyRedisCLI(t *testing.T) {
	cli := needTool(t, "redis-cli")
	bin := buildShardgate(t)
	strict := startProxyCluster(t, bin)
	split := startProxyCluster(t, bin, "--cross-slot", "split")
	run := func(addr string, args ...string) string {
		h, p, _ := net.SplitHostPort(addr)
		return strings.TrimSpace(runTool(t, cli, nil, append([]string{"-h", h, "-p", p}, args...)...))
	}
	for _, c := range []struct {
		addr string
		args []string
		want string
	}{
		{strict, []string{"ping"}, "PONG"},
		{strict, []string{"-c", "set", "cli:a", "1"}, "OK"},
		{strict, []string{"-c", "set", "cli:b", "2"}, "OK"},
		{strict, []string{"-c", "get", "cli:b"}, "2"},
		{strict, []string{"-c", "mset", "{cli}x", "1", "{cli}y", "2"}, "OK"},
		{strict, []string{"-c", "mget", "{cli}x", "{cli}y"}, "1\n2"},
		{strict, []string{"-c", "mget", "cli:a", "cli:b"}, crossSlotErr},
		{strict, []string{"mset", "cli:a", "1", "cli:b", "2"}, crossSlotErr},
		{strict, []string{"cluster", "keyslot", "cli:a"}, strconv.Itoa(int(slots.SlotString("cli:a")))},
		{strict, []string{"-c", "dbsize"}, "4"},
		{strict, []string{"-3", "--no-raw", "get", "cli:a"}, `"1"`},
		{split, []string{"mset", "cli:a", "1", "cli:b", "2", "cli:c", "3"}, "OK"},
		{split, []string{"mget", "cli:c", "cli:nope", "cli:a"}, "3\n\n1"},
		{split, []string{"del", "cli:a", "cli:b", "cli:nope"}, "2"},
		{split, []string{"msetnx", "cli:a", "1", "cli:b", "2"}, crossSlotErr},
	} {
		if got := run(c.addr, c.args...); got != c.want && got != "(error) "+c.want {
			t.Errorf("redis-cli %q: %q, want %q", c.args, got, c.want)
		}
	}
	// --cluster check reads CLUSTER NODES/INFO and checks slot coverage.
	if out := run(strict, "--cluster", "check", strict); !strings.Contains(out, "[OK] All 16384 slots covered") {
		t.Errorf("redis-cli --cluster check:\n%s", out)
	}
}

// TestProxyRedisPyCluster runs e2e/py/proxy_cluster.py, redis-py's
// RedisCluster pointed at the proxy.
func TestProxyRedisPyCluster(t *testing.T) {
	py := pythonWithRedis()
	if py == "" {
		t.Skip("no python3 with redis-py (apt-get install python3-redis)")
	}
	bin := buildShardgate(t)
	addr := startProxyCluster(t, bin)
	script, err := filepath.Abs(filepath.Join("py", "proxy_cluster.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	out, err := exec.CommandContext(ctx, py, script, addr).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	t.Logf("%s", out)
}

var upTryRE = regexp.MustCompile(`^try: redis-cli -p (\d+)$`)

// TestUp: `shardgate up` prints its endpoint and slot map, answers
// redis-cli at once, and stops cleanly (exit 0) on SIGINT and SIGTERM.
func TestUp(t *testing.T) {
	cli := needTool(t, "redis-cli")
	bin := buildShardgate(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			cmd := exec.Command(bin, "up", "--addr", addr, "--size", "3")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			startOrFail(t, cmd)
			out, errLog := newLineLog(stdout), newLineLog(stderr)
			port := out.wait(t, upTryRE)
			if _, p, _ := net.SplitHostPort(addr); port != p {
				t.Fatalf("up prints port %s, asked for %s:\n%s", port, p, out)
			}
			if got := strings.TrimSpace(runTool(t, cli, nil, "-p", port, "ping")); got != "PONG" {
				t.Fatalf("redis-cli -p %s ping: %q\n%s\n%s", port, got, out, errLog)
			}
			text := out.String()
			for _, want := range []string{
				"3 nodes behind a proxy at " + addr,
				"slots 0-5460", "slots 5461-10922", "slots 10923-16383",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("up's output lacks %q:\n%s", want, text)
				}
			}
			if got := strings.TrimSpace(runTool(t, cli, nil, "-p", port, "-c", "set", "up:k", "v")); got != "OK" {
				t.Errorf("redis-cli -c set: %q", got)
			}
			signalAndWait(t, cmd, sig, 5*time.Second, errLog)
		})
	}
}
