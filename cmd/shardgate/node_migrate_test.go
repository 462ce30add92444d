package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestNodeMigrationFlags: the slot migration flags are checked before the
// node listens or joins (exit 2 with the flag's name and the bad value),
// refused without cluster mode, and documented with their defaults.
func TestNodeMigrationFlags(t *testing.T) {
	cl := []string{"--gossip", "127.0.0.1:0"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(cl, "--weight", "0"), "--weight must be between 1 and 1048576, got 0"},
		{append(cl, "--weight", "1048577"), "--weight must be between 1 and 1048576, got 1048577"},
		{append(cl, "--weight", "-1"), `invalid value "-1" for flag --weight`},
		{append(cl, "--migrate-batch", "0"), "--migrate-batch must be between 1 and 16384, got 0"},
		{append(cl, "--migrate-batch", "20000"), "--migrate-batch must be between 1 and 16384, got 20000"},
		{append(cl, "--migrate-batch", "-3"), "--migrate-batch must be between 1 and 16384, got -3"},
		{append(cl, "--fence-wait", "0"), "--fence-wait must be a positive duration, got 0s"},
		{append(cl, "--fence-wait", "-1s"), "--fence-wait must be a positive duration, got -1s"},
		{append(cl, "--drain-timeout", "0"), "--drain-timeout must be a positive duration, got 0s"},
		{append(cl, "--drain-timeout", "-5m"), "--drain-timeout must be a positive duration, got -5m0s"},
		{append(cl, "--drain-linger", "-1s"), "--drain-linger must be 0 or a positive duration, got -1s"},
		{append(cl, "--auto-rebalance=maybe"), `invalid boolean value "maybe" for -auto-rebalance`},
		// Without --gossip or --join every one of them is refused, even
		// when set to its default.
		{[]string{"--weight", "2"}, "shardgate node: --weight needs cluster mode (--gossip or --join)"},
		{[]string{"--auto-rebalance=false"}, "shardgate node: --auto-rebalance needs cluster mode (--gossip or --join)"},
		{[]string{"--auto-rebalance"}, "shardgate node: --auto-rebalance needs cluster mode"},
		{[]string{"--drain-on-exit"}, "shardgate node: --drain-on-exit needs cluster mode (--gossip or --join)"},
		{[]string{"--drain-timeout", "1m"}, "shardgate node: --drain-timeout needs cluster mode (--gossip or --join)"},
		{[]string{"--migrate-batch", "8"}, "shardgate node: --migrate-batch needs cluster mode (--gossip or --join)"},
		{[]string{"--fence-wait", "2s"}, "shardgate node: --fence-wait needs cluster mode (--gossip or --join)"},
		{[]string{"--weight", "0", "--fence-wait", "0", "--drain-on-exit", "--migrate-batch", "64", "--drain-timeout", "1s", "--auto-rebalance"},
			"shardgate node: --auto-rebalance, --drain-on-exit, --drain-timeout, --fence-wait, --migrate-batch, --weight needs cluster mode"},
	} {
		var out, errb bytes.Buffer
		rc := run(append([]string{"node"}, tc.args...), &out, &errb)
		if rc != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: rc %d, stderr %q; want 2 and %q", tc.args, rc, errb.String(), tc.want)
		}
		if strings.Contains(errb.String(), "node listening") {
			t.Errorf("%q: the node started listening before refusing its flags: %s", tc.args, errb.String())
		}
	}

	var out, errb bytes.Buffer
	if rc := run([]string{"node", "--help"}, &out, &errb); rc != 0 {
		t.Fatalf("--help: rc %d %s", rc, errb.String())
	}
	for _, tc := range []struct{ flag, want string }{
		{"weight", "(default 1)"},
		{"auto-rebalance", "(default true)"},
		{"drain-on-exit", "SIGTERM"},
		{"drain-timeout", "(default 5m0s)"},
		{"drain-linger", "(default 5s)"},
		{"migrate-batch", "(default 64)"},
		{"fence-wait", "(default 1s)"},
	} {
		entry := helpEntry(out.String(), tc.flag)
		if entry == "" || !strings.Contains(entry, "cluster mode") || !strings.Contains(entry, tc.want) {
			t.Errorf("--help on --%s: %q; want it documented, for cluster mode, with %q", tc.flag, entry, tc.want)
		}
	}
}

// helpEntry returns the flag package's help text for -name: its line and
// the indented description under it.
func helpEntry(help, name string) string {
	re := regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(name) + `\b.*\n(?:    .*\n)*`)
	return re.FindString(help)
}

// TestNodeMigrationConfig: the bounds are inclusive and the weight
// reaches the cluster member's configuration.
func TestNodeMigrationConfig(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		weight  uint32
		wantErr string
	}{
		{nil, 1, ""},
		{[]string{"--weight", "1048576", "--migrate-batch", "16384", "--fence-wait", "1ns", "--drain-timeout", "1ns"}, 1 << 20, ""},
		{[]string{"--weight", "3", "--migrate-batch", "1"}, 3, ""},
		{[]string{"--migrate-batch", "16385"}, 0, "--migrate-batch must be between 1 and 16384, got 16385"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var gf nodeGossipFlags
		gf.register(fs)
		if err := fs.Parse(append([]string{"--gossip", "127.0.0.1:0"}, tc.args...)); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		cfg, err := gf.config(slog.New(slog.DiscardHandler))
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%q: err %v, want %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.wantErr == "" && cfg.Weight != tc.weight:
			t.Errorf("%q: weight %d in the member's config, want %d", tc.args, cfg.Weight, tc.weight)
		}
	}
}

// statusField reads one field of a node's SHARDGATE STATUS.
func statusField(t *testing.T, addr, field string) string {
	t.Helper()
	st, err := nodeStatus(context.Background(), addr, "")
	if err != nil {
		t.Fatalf("SHARDGATE STATUS at %s: %v", addr, err)
	}
	v, ok := st[field]
	if !ok {
		t.Fatalf("SHARDGATE STATUS at %s has no %s: %v", addr, field, st)
	}
	return v
}

// slotCounts reads CLUSTER SLOTS at addr with go-redis: how many slots
// each node address owns in that node's view.
func slotCounts(ctx context.Context, addr string) (map[string]int, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ranges, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, r := range ranges {
		if len(r.Nodes) == 0 {
			return nil, fmt.Errorf("%s: range %d-%d without a node", addr, r.Start, r.End)
		}
		counts[r.Nodes[0].Addr] += r.End - r.Start + 1
	}
	return counts, nil
}

// waitSlotCounts waits until every node in addrs reports the same slot
// counts and ok accepts them, and returns them.
func waitSlotCounts(t *testing.T, addrs []string, within time.Duration, ok func(map[string]int) bool) map[string]int {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	var last []string
	for {
		last = last[:0]
		var first map[string]int
		agree := true
		for _, a := range addrs {
			c, err := slotCounts(ctx, a)
			last = append(last, fmt.Sprintf("%s sees %v (%v)", a, c, err))
			if err != nil {
				agree = false
				continue
			}
			if first == nil {
				first = c
			} else if fmt.Sprint(first) != fmt.Sprint(c) {
				agree = false
			}
		}
		if agree && first != nil && ok(first) {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot counts not as expected after %s:\n%s", within, strings.Join(last, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testData is what the migration tests write before moving slots and
// read back after: strings over many slots and a few values of other
// types, one with a TTL.
type testData struct{ strings int }

// testDataOthers is how many keys write makes besides the strings.
const testDataOthers = 5

func (d testData) write(t *testing.T, c redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	p := c.Pipeline()
	for i := range d.strings {
		p.Set(ctx, "key:"+strconv.Itoa(i), "value:"+strconv.Itoa(i), 0)
	}
	p.RPush(ctx, "list", "a", "b", "c")
	p.PFAdd(ctx, "hll", "x", "y", "z")
	p.SetBit(ctx, "bits", 100000, 1)
	p.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "1-1", Values: []string{"f", "v"}})
	p.XAdd(ctx, &redis.XAddArgs{Stream: "stream", ID: "2-1", Values: []string{"g", "w"}})
	p.Set(ctx, "ttl", "expiring", time.Hour)
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("writing the test data: %v", err)
	}
	// A consumer group with one pending entry: the PEL moves too.
	if err := c.XGroupCreate(ctx, "stream", "grp", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "grp", Consumer: "c1", Streams: []string{"stream", ">"}, Count: 1}).Err(); err != nil {
		t.Fatal(err)
	}
}

func (d testData) check(t *testing.T, c redis.UniversalClient, when string) {
	t.Helper()
	ctx := context.Background()
	p := c.Pipeline()
	gets := make([]*redis.StringCmd, d.strings)
	for i := range d.strings {
		gets[i] = p.Get(ctx, "key:"+strconv.Itoa(i))
	}
	l := p.LRange(ctx, "list", 0, -1)
	hll := p.PFCount(ctx, "hll")
	bit := p.GetBit(ctx, "bits", 100000)
	bits := p.BitCount(ctx, "bits", nil)
	xr := p.XRange(ctx, "stream", "-", "+")
	pel := p.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "stream", Group: "grp", Start: "-", End: "+", Count: 10})
	ttl := p.TTL(ctx, "ttl")
	tv := p.Get(ctx, "ttl")
	p.Exec(ctx) // errors are checked per command
	bad := 0
	for i, g := range gets {
		if v, err := g.Result(); err != nil || v != "value:"+strconv.Itoa(i) {
			if bad++; bad <= 5 {
				t.Errorf("%s: GET key:%d = %q, %v", when, i, v, err)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d strings lost or wrong", when, bad, d.strings)
	}
	if v, err := l.Result(); err != nil || strings.Join(v, ",") != "a,b,c" {
		t.Errorf("%s: LRANGE list = %v, %v", when, v, err)
	}
	if v, err := hll.Result(); err != nil || v != 3 {
		t.Errorf("%s: PFCOUNT hll = %v, %v", when, v, err)
	}
	if v, err := bit.Result(); err != nil || v != 1 {
		t.Errorf("%s: GETBIT bits 100000 = %v, %v", when, v, err)
	}
	if v, err := bits.Result(); err != nil || v != 1 {
		t.Errorf("%s: BITCOUNT bits = %v, %v", when, v, err)
	}
	if v, err := xr.Result(); err != nil || len(v) != 2 || v[0].ID != "1-1" || fmt.Sprint(v[0].Values) != "map[f:v]" ||
		v[1].ID != "2-1" || fmt.Sprint(v[1].Values) != "map[g:w]" {
		t.Errorf("%s: XRANGE stream = %v, %v", when, v, err)
	}
	if v, err := pel.Result(); err != nil || len(v) != 1 || v[0].ID != "1-1" || v[0].Consumer != "c1" || v[0].RetryCount != 1 {
		t.Errorf("%s: XPENDING stream grp = %+v, %v", when, v, err)
	}
	if v, err := ttl.Result(); err != nil || v <= 50*time.Minute || v > time.Hour {
		t.Errorf("%s: TTL ttl = %v, %v (want about an hour)", when, v, err)
	}
	if v, err := tv.Result(); err != nil || v != "expiring" {
		t.Errorf("%s: GET ttl = %q, %v", when, v, err)
	}
}

// TestNodeDrainOnExit: a node run with --drain-on-exit whose run context
// ends (what SIGTERM does through signal.NotifyContext) keeps serving
// until its slots are on the other node, then returns 0; every key it
// held is on the other node.
func TestNodeDrainOnExit(t *testing.T) {
	common := []string{"--addr", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--gossip-fast", "--bootstrap-expect", "3"}
	a := startNodeCmd(t, common...)
	o := startNodeCmd(t, append(common, "--join", a.gossip)...)
	b := startNodeCmd(t, append(common, "--join", a.gossip, "--drain-on-exit", "--drain-timeout", "20s", "--migrate-batch", "512", "--drain-linger", "2s")...)
	for _, n := range []*runningNode{a, o, b} {
		waitClusterOK(t, n.addr, "3")
	}
	var bShare int
	waitSlotCounts(t, []string{a.addr, o.addr, b.addr}, 10*time.Second, func(c map[string]int) bool {
		bShare = c[b.addr]
		return c[a.addr]+c[o.addr]+c[b.addr] == 16384 && c[b.addr] > 5000
	})

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr, b.addr}})
	defer cc.Close()
	data := testData{strings: 500}
	data.write(t, cc)
	data.check(t, cc, "before the drain")

	start := time.Now()
	stopped := make(chan int, 1)
	go func() { stopped <- b.stop() }()
	// Drained, the node lingers answering MOVED: cc, whose slot map still
	// sends b's slots to b (it has been idle since before the drain),
	// learns the new owners from it, so it does not meet b's closed port
	// after the exit.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(b.logs.String(), "answering MOVED before exiting"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no linger line in the draining node's log:\n%s", b.logs.String())
		}
	}
	data.check(t, cc, "while the drained node lingers")
	if rc := <-stopped; rc != 0 {
		t.Fatalf("node exited %d:\n%s", rc, b.logs.String())
	}
	took := time.Since(start)
	data.check(t, cc, "after the drained node exited, with the map it learned while the node lingered")
	logs := b.logs.String()
	t.Logf("drained and exited in %s", took)
	for _, want := range []string{"draining before exit", "drained: no slots left here", "node shut down"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the node's log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "drain timed out") {
		t.Errorf("the drain timed out:\n%s", logs)
	}
	// The last batch's log line follows its commit and may come a moment
	// after runNode returned: Serve returns once its listener is shut,
	// before its goroutines end.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if logs = b.logs.String(); sum(migratedBatches(t, logs)) >= bShare {
			break
		}
	}
	checkBatches(t, "the draining node", migratedBatches(t, logs), bShare, 512)
	// The node waits until every member announces the final table before
	// it leaves, so no view still routes to it the moment it returns.
	for _, n := range []*runningNode{a, o} {
		counts, err := slotCounts(context.Background(), n.addr)
		if err != nil || counts[b.addr] != 0 || counts[a.addr]+counts[o.addr] != 16384 {
			t.Errorf("when the draining node returned, %s's view: %v (%v); want all 16384 slots on the other two", n.addr, counts, err)
		}
	}
	ca := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.addr, o.addr}})
	defer ca.Close()
	data.check(t, ca, "after the drain on exit")
	if n, err := ca.DBSize(context.Background()).Result(); err != nil || n != int64(data.strings+testDataOthers) {
		t.Errorf("DBSIZE on the remaining node: %d, %v; want %d", n, err, data.strings+testDataOthers)
	}
}

// TestNodeDrainOnExitTimeout: with no other node to take its slots, a
// node run with --drain-on-exit exits once --drain-timeout has passed,
// saying so, not before and not much later.
func TestNodeDrainOnExitTimeout(t *testing.T) {
	const timeout = 400 * time.Millisecond
	n := startNodeCmd(t, "--addr", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--gossip-fast", "--bootstrap-expect", "1",
		"--drain-on-exit", "--drain-timeout", timeout.String())
	waitClusterOK(t, n.addr, "1")
	start := time.Now()
	if rc := n.stop(); rc != 0 {
		t.Fatalf("node exited %d:\n%s", rc, n.logs.String())
	}
	took := time.Since(start)
	if took < timeout || took > timeout+5*time.Second {
		t.Errorf("returned %s after its context ended; want just over --drain-timeout %s", took, timeout)
	}
	if logs := n.logs.String(); !strings.Contains(logs, "drain timed out: exiting with slots still here") {
		t.Errorf("no timeout in the log:\n%s", logs)
	}
}
