package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// runCLI runs 'shardgate args...' in this process.
func runCLI(args ...string) (rc int, stdout, stderr string) {
	var out, errb bytes.Buffer
	rc = run(args, &out, &errb)
	return rc, out.String(), errb.String()
}

// TestClusterOpsUsage: cluster rebalance and cluster drain take exactly
// one host:port NODE, before or after their flags (exit 2 otherwise), and
// exit 1 saying why when the node cannot be asked.
func TestClusterOpsUsage(t *testing.T) {
	down := closedAddr(t)
	for _, cmd := range []string{"rebalance", "drain"} {
		prefix := "shardgate cluster " + cmd + ": "
		for _, tc := range []struct {
			args []string
			rc   int
			want string
		}{
			{nil, 2, prefix + "want exactly one node address (host:port), got 0 arguments"},
			{[]string{"--timeout", "1s"}, 2, prefix + "want exactly one node address (host:port), got 0 arguments"},
			{[]string{"127.0.0.1:1", "127.0.0.1:2"}, 2, prefix + "want exactly one node address (host:port), got 2 arguments"},
			{[]string{"--timeout", "1s", "127.0.0.1:1", "127.0.0.1:2"}, 2, prefix + "want exactly one node address (host:port), got 2 arguments"},
			{[]string{"127.0.0.1:1", "--timeout", "1s", "127.0.0.1:2"}, 2, prefix + "want exactly one node address (host:port), got 2 arguments"},
			{[]string{"nohost"}, 2, prefix + `bad node address "nohost"`},
			{[]string{"--wait=false", "10.0.0.1"}, 2, prefix + `bad node address "10.0.0.1"`},
			{[]string{"127.0.0.1:1", "--bogus"}, 2, "flag provided but not defined: --bogus"},
			{[]string{"--timeout", "soon", "127.0.0.1:1"}, 2, `invalid value "soon" for flag --timeout: parse error (want a duration such as 500ms, 5s or 1m)`},
			{[]string{"127.0.0.1:1", "--timeout", "soon"}, 2, `invalid value "soon" for flag --timeout: parse error (want a duration such as 500ms, 5s or 1m)`},
			// Nothing listens: the flags before or after NODE are read and
			// the node is tried.
			{[]string{down}, 1, prefix + down + ": "},
			{[]string{"--timeout", "2s", "--wait=false", down}, 1, prefix + down + ": "},
			{[]string{down, "--timeout", "2s", "--wait=false"}, 1, prefix + down + ": "},
		} {
			args := append([]string{"cluster", cmd}, tc.args...)
			rc, out, errb := runCLI(args...)
			if rc != tc.rc || !strings.Contains(errb, tc.want) {
				t.Errorf("%q: rc %d, stderr %q; want %d and %q", args, rc, errb, tc.rc, tc.want)
			}
			if tc.rc == 1 && !strings.Contains(errb, "connection refused") {
				t.Errorf("%q: the reason is not given: %q", args, errb)
			}
			if out != "" {
				t.Errorf("%q: printed %q on stdout", args, out)
			}
		}
		rc, out, errb := runCLI("cluster", cmd, "--help")
		if rc != 0 || errb != "" || !strings.Contains(out, "Usage: shardgate cluster "+cmd+" [flags] NODE") {
			t.Errorf("%s --help: rc %d, stdout %q, stderr %q", cmd, rc, out, errb)
		}
		for _, f := range []string{"password", "wait", "timeout"} {
			if helpEntry(out, f) == "" {
				t.Errorf("%s --help does not document --%s:\n%s", cmd, f, out)
			}
		}
		if got := helpEntry(out, "undo") != ""; got != (cmd == "drain") {
			t.Errorf("%s --help documents --undo: %v\n%s", cmd, got, out)
		}
	}
	rc, out, _ := runCLI("cluster", "--help")
	for _, want := range []string{"  rebalance  ", "  drain  "} {
		if rc != 0 || !strings.Contains(out, want) {
			t.Errorf("cluster --help: rc %d, lacks %q:\n%s", rc, want, out)
		}
	}
}

// TestClusterOpsOneNode: a node's error reply ends the command with
// exit 1 and the node's words: a standalone node has no SHARDGATE (it
// says so before asking for a password, as Redis does for an unknown
// command), and a cluster node with --requirepass wants the right
// --password, which the wait loop sends too. A one-node cluster is
// balanced at once and cannot be drained: the node refuses the mark at
// once (its slots would have nowhere to go), and --undo is a no-op.
func TestClusterOpsOneNode(t *testing.T) {
	plain := startNodeCmd(t, "--addr", "127.0.0.1:0", "--requirepass", "secret")
	locked := startNodeCmd(t, "--addr", "127.0.0.1:0", "--requirepass", "secret",
		"--gossip", "127.0.0.1:0", "--gossip-fast", "--bootstrap-expect", "1")
	waitClusterOKAuth(t, locked.addr, "secret")
	for _, tc := range []struct {
		args          []string
		rc            int
		stderr        string
		stdout        string
		draining      string
		atMostSeconds float64
	}{
		{args: []string{"drain", plain.addr}, rc: 1,
			stderr: "shardgate cluster drain: " + plain.addr + ": not a node of a gossip cluster (a standalone node, a proxy or a Redis server?): SHARDGATE DRAIN: ERR unknown command 'SHARDGATE'"},
		{args: []string{"rebalance", plain.addr}, rc: 1,
			stderr: "shardgate cluster rebalance: " + plain.addr + ": not a node of a gossip cluster (a standalone node, a proxy or a Redis server?): SHARDGATE REBALANCE: ERR unknown command 'SHARDGATE'"},
		{args: []string{"drain", locked.addr}, rc: 1, draining: "0",
			stderr: "shardgate cluster drain: " + locked.addr + ": SHARDGATE DRAIN: NOAUTH Authentication required."},
		{args: []string{"rebalance", locked.addr}, rc: 1,
			stderr: "shardgate cluster rebalance: " + locked.addr + ": SHARDGATE REBALANCE: NOAUTH Authentication required."},
		{args: []string{"rebalance", "--password", "wrong", locked.addr}, rc: 1,
			stderr: "shardgate cluster rebalance: " + locked.addr + ": AUTH: WRONGPASS invalid username-password pair or user is disabled."},
		{args: []string{"drain", locked.addr, "--password", "wrong"}, rc: 1, draining: "0",
			stderr: "shardgate cluster drain: " + locked.addr + ": AUTH: WRONGPASS"},
		{args: []string{"rebalance", locked.addr, "--password", "secret", "--timeout", "10s"}, rc: 0,
			stdout: "rebalance asked\nrebalance done\n"},
		{args: []string{"drain", "--wait=false", "--password", "secret", locked.addr}, rc: 1, draining: "0",
			stderr: "shardgate cluster drain: " + locked.addr + ": SHARDGATE DRAIN: ERR no other live node that is not draining can take this node's slots", atMostSeconds: 0.9},
		{args: []string{"drain", "--password", "secret", "--timeout", "1500ms", locked.addr}, rc: 1, draining: "0",
			stderr: "ERR no other live node that is not draining", atMostSeconds: 0.9},
		{args: []string{"drain", "--undo", "--password", "secret", locked.addr}, rc: 0, draining: "0",
			stdout: locked.addr + ": draining stopped\n"},
	} {
		args := append([]string{"cluster"}, tc.args...)
		start := time.Now()
		rc, out, errb := runCLI(args...)
		took := time.Since(start)
		if rc != tc.rc || !strings.Contains(errb, tc.stderr) || !strings.Contains(out, tc.stdout) || (tc.stderr == "" && errb != "") {
			t.Errorf("%q: rc %d, stdout %q, stderr %q; want %d, %q and %q", args, rc, out, errb, tc.rc, tc.stdout, tc.stderr)
		}
		if tc.atMostSeconds > 0 && took.Seconds() > tc.atMostSeconds {
			t.Errorf("%q took %s", args, took)
		}
		if tc.draining != "" {
			st, err := nodeStatus(t.Context(), locked.addr, "secret")
			if err != nil || st["draining"] != tc.draining {
				t.Errorf("after %q: draining:%s (%v), want %s", args, st["draining"], err, tc.draining)
			}
		}
	}
}

// waitClusterOKAuth waits until the node behind password reports
// cluster_state:ok.
func waitClusterOKAuth(t *testing.T, addr, password string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.ClusterInfo(t.Context()).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became ok: %q %v", addr, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pollStatus reads SHARDGATE STATUS from every node in addrs, each on
// its own connection, until the returned function is called, which
// returns how many replies it read and how many described a migration in
// progress; such a description must be complete (target, slots, phase
// copy or fence).
func pollStatus(t *testing.T, addrs []string) (stop func() (replies, migrating int)) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var nReplies, nMigrating atomic.Int64
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		wg.Go(func() {
			defer c.Close()
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
				}
				text, err := c.Do(context.Background(), "SHARDGATE", "STATUS").Text()
				if err != nil {
					continue // a node busy or stopping: not what this checks
				}
				nReplies.Add(1)
				st := parseInfoFields(text)
				if to, ok := st["migrating_to"]; ok {
					nMigrating.Add(1)
					if ph := st["migrating_phase"]; len(to) != 40 || st["migrating_slots"] == "" || (ph != "copy" && ph != "fence") {
						t.Errorf("%s: SHARDGATE STATUS during a migration: %v", addr, st)
					}
				}
			}
		})
	}
	var once sync.Once
	return func() (int, int) {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
		return int(nReplies.Load()), int(nMigrating.Load())
	}
}

// migratedRE matches a source's log line for one finished migration.
var migratedRE = regexp.MustCompile(`msg="slots migrated" to=\S+ slots=("[^"]*"|\S+)`)

// migratedBatches returns the size of every batch a node's log says it
// migrated out.
func migratedBatches(t *testing.T, logs string) []int {
	t.Helper()
	var out []int
	for _, m := range migratedRE.FindAllStringSubmatch(logs, -1) {
		n := 0
		for _, r := range strings.Fields(strings.Trim(m[1], `"`)) {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := a, error(nil)
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || b < a {
				t.Fatalf("bad slots in %q", m[0])
			}
			n += b - a + 1
		}
		out = append(out, n)
	}
	return out
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}

// checkBatches checks that batches moved want slots in all, none bigger
// than limit.
func checkBatches(t *testing.T, who string, batches []int, want, limit int) {
	t.Helper()
	for _, n := range batches {
		if n > limit {
			t.Errorf("%s migrated a batch of %d slots, more than --migrate-batch %d", who, n, limit)
		}
	}
	if sum := sum(batches); sum != want || len(batches) < (want+limit-1)/limit {
		t.Errorf("%s migrated %d slots in %d batches %v; want %d in batches of at most %d", who, sum, len(batches), batches, want, limit)
	}
}

// TestClusterRebalanceAndDrain runs three nodes with
// --auto-rebalance=false: two bootstrap the cluster, the third joins and
// gets nothing until 'cluster rebalance' (asked of a node that is not the
// planner, which forwards it) gives each node a third of the slots;
// 'cluster drain' then empties the third node onto the two others, and
// 'cluster drain --undo' clears its mark. Keys written before are read
// back, with their values, after each step.
func TestClusterRebalanceAndDrain(t *testing.T) {
	// Batches of 1024 slots keep the test short on a loaded machine (the
	// default of 64 is covered by the node package's tests); the logs
	// show the flag reached the migrations.
	const batch = 1024
	common := []string{"--addr", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--gossip-fast", "--auto-rebalance=false",
		"--migrate-batch", strconv.Itoa(batch)}
	a := startNodeCmd(t, append(common, "--bootstrap-expect", "2")...)
	b := startNodeCmd(t, append(common, "--bootstrap-expect", "2", "--join", a.gossip)...)
	waitClusterOK(t, a.addr, "2")
	c := startNodeCmd(t, append(common, "--join", b.gossip)...)
	addrs := []string{a.addr, b.addr, c.addr}
	for _, addr := range addrs {
		waitClusterOK(t, addr, "3")
	}
	waitSlotCounts(t, addrs, 10*time.Second, func(n map[string]int) bool {
		return n[a.addr] == 8192 && n[b.addr] == 8192 && n[c.addr] == 0
	})

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	data := testData{strings: 1000}
	data.write(t, cc)
	data.check(t, cc, "before the rebalance")

	// Several plan intervals (250ms with --gossip-fast) pass: without
	// --auto-rebalance nothing moves to the new node by itself.
	time.Sleep(time.Second)
	if got := statusField(t, c.addr, "slots_owned"); got != "0" {
		t.Fatalf("the new node owns %s slots without a rebalance", got)
	}
	for _, addr := range addrs {
		if got := statusField(t, addr, "auto_rebalance"); got != "0" {
			t.Errorf("%s: auto_rebalance:%s, want 0", addr, got)
		}
	}

	// SHARDGATE STATUS is read by operators while slots move: poll it
	// throughout (with -race this also checks it reads the migration's
	// state safely) and check what it says of migrations in progress.
	stopPoll := pollStatus(t, addrs)
	defer stopPoll()

	entry := ""
	for _, addr := range addrs {
		if statusField(t, addr, "planner") == "0" {
			entry = addr
			break
		}
	}
	rc, out, errb := runCLI("cluster", "rebalance", "--timeout", "20s", entry)
	t.Logf("cluster rebalance %s (not the planner): %s%s", entry, out, errb)
	if rc != 0 || !strings.Contains(out, "rebalance asked\n") || !strings.Contains(out, "rebalance done\n") {
		t.Fatalf("cluster rebalance: rc %d\n%s%s", rc, out, errb)
	}
	// The command is done when its entry's view is balanced and every
	// member routes by it: each node's own count says so at once.
	counts := waitSlotCounts(t, addrs, 0, func(n map[string]int) bool {
		lo, hi, sum := 16384, 0, 0
		for _, addr := range addrs {
			lo, hi, sum = min(lo, n[addr]), max(hi, n[addr]), sum+n[addr]
		}
		return sum == 16384 && hi-lo <= 1
	})
	t.Logf("after the rebalance: %v", counts)
	gained := counts[c.addr]
	data.check(t, cc, "after the rebalance")

	rc, out, errb = runCLI("cluster", "drain", "--timeout", "20s", c.addr)
	t.Logf("cluster drain %s: %s%s", c.addr, out, errb)
	if rc != 0 || !strings.Contains(out, c.addr+": draining\n") || !strings.Contains(out, "drain done\n") {
		t.Fatalf("cluster drain: rc %d\n%s%s", rc, out, errb)
	}
	if got := statusField(t, c.addr, "slots_owned"); got != "0" {
		t.Errorf("the drained node owns %s slots when the command returns", got)
	}
	counts = waitSlotCounts(t, addrs, 5*time.Second, func(n map[string]int) bool {
		return n[a.addr] == 8192 && n[b.addr] == 8192 && n[c.addr] == 0
	})
	t.Logf("after the drain: %v", counts)
	data.check(t, cc, "after the drain")
	if got := statusField(t, c.addr, "draining"); got != "1" {
		t.Errorf("after the drain: draining:%s, want 1", got)
	}
	// A source drops its copy of the slots it handed over in the
	// background, soon after the commit.
	drained := redis.NewClient(&redis.Options{Addr: c.addr})
	defer drained.Close()
	for deadline := time.Now().Add(5 * time.Second); ; {
		n, err := drained.DBSize(t.Context()).Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("DBSIZE on the drained node: %d, %v; want 0", n, err)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := cc.DBSize(t.Context()).Result(); err != nil || n != int64(data.strings+testDataOthers) {
		t.Errorf("DBSIZE over the cluster after the drain: %d, %v; want %d (no copy left behind)", n, err, data.strings+testDataOthers)
	}

	replies, migrating := stopPoll()
	t.Logf("SHARDGATE STATUS polled %d times during the moves, %d during a migration", replies, migrating)
	if replies == 0 {
		t.Error("SHARDGATE STATUS never answered during the moves")
	}

	// Every slot moved once: a and b gave c its share in the rebalance,
	// c gave it all back in the drain.
	checkBatches(t, "a and b", append(migratedBatches(t, a.logs.String()), migratedBatches(t, b.logs.String())...), gained, batch)
	checkBatches(t, "c", migratedBatches(t, c.logs.String()), gained, batch)

	// --undo after NODE: the mark goes, at once.
	rc, out, errb = runCLI("cluster", "drain", c.addr, "--undo")
	if rc != 0 || out != c.addr+": draining stopped\n" {
		t.Fatalf("cluster drain --undo: rc %d\n%s%s", rc, out, errb)
	}
	if got := statusField(t, c.addr, "draining"); got != "0" {
		t.Errorf("after --undo: draining:%s, want 0", got)
	}
}

// TestClusterRebalanceWeighted: a node of --weight 2 joins two of weight
// 1; 'cluster rebalance' returns once it owns half the slots and the
// others a quarter each. The new node claims each slot as it receives it,
// so its own count is complete the moment the command says it is done.
func TestClusterRebalanceWeighted(t *testing.T) {
	common := []string{"--addr", "127.0.0.1:0", "--gossip", "127.0.0.1:0", "--gossip-fast", "--auto-rebalance=false", "--migrate-batch", "1024"}
	a := startNodeCmd(t, append(common, "--bootstrap-expect", "2")...)
	b := startNodeCmd(t, append(common, "--bootstrap-expect", "2", "--join", a.gossip)...)
	waitClusterOK(t, a.addr, "2")
	c := startNodeCmd(t, append(common, "--join", a.gossip, "--weight", "2")...)
	addrs := []string{a.addr, b.addr, c.addr}
	for _, addr := range addrs {
		waitClusterOK(t, addr, "3")
	}
	if got := statusField(t, c.addr, "weight"); got != "2" {
		t.Fatalf("--weight 2: SHARDGATE STATUS says weight:%s", got)
	}
	rc, out, errb := runCLI("cluster", "rebalance", "--timeout", "20s", a.addr)
	t.Logf("cluster rebalance: %s%s", out, errb)
	if rc != 0 {
		t.Fatalf("cluster rebalance: rc %d\n%s%s", rc, out, errb)
	}
	if got := statusField(t, c.addr, "slots_owned"); got != "8192" {
		t.Errorf("cluster rebalance said done when the node of weight 2 owned %s slots, not 8192", got)
	}
	counts := waitSlotCounts(t, addrs, 10*time.Second, func(n map[string]int) bool {
		return n[a.addr] == 4096 && n[b.addr] == 4096 && n[c.addr] == 8192
	})
	t.Logf("after the rebalance: %v", counts)
}
