package node_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/slots"
)

// persistWorkload runs writes of every kind on c: the commands whose
// replay is not a plain re-run (XADD *, relative expiries, blocked pops
// and reads served by a later push, transactions, FLUSHALL) included.
func persistWorkload(t *testing.T, c *difftest.Conn, addr string, rng *rand.Rand) {
	t.Helper()
	do := func(args ...string) {
		t.Helper()
		if _, err := c.DoStrings(args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	do("SET", "gone", "x")
	do("FLUSHALL")
	do("SET", "{t}s", "hello", "EX", "1000")
	do("SET", "{t}n", "10")
	do("INCRBY", "{t}n", "5")
	do("APPEND", "{t}s", " world")
	do("SETRANGE", "{t}r", "100", "x")
	do("SET", "{t}px", "v", "PX", "500000")
	do("PEXPIRE", "{t}n", "900000")
	do("PERSIST", "{t}n")
	do("SETBIT", "{t}b", "4294967295", "1")
	do("BITFIELD", "{t}bf", "INCRBY", "u8", "#40", "1", "SET", "i4", "0", "3")
	do("BITOP", "OR", "{t}bo", "{t}b", "{t}bf")
	do("PFADD", "{t}h1", "a", "b", "c")
	do("PFADD", "{t}h2", "c", "d")
	do("PFMERGE", "{t}h3", "{t}h1", "{t}h2")
	do("PFMERGE", "{t}h4") // only its destination: keyless by the key specs, not by the legacy range
	// PFCOUNT stores the count in the header (GETRANGE shows it), which
	// the log must keep as Redis's AOF does.
	do("PFCOUNT", "{t}h1")
	do("PFCOUNT", "{t}h3")
	do("PFADD", "{t}h3", "e") // the stale count stays, marked invalid
	do("RPUSH", "{t}q", "j1", "j2", "j3", "j4", "j5")
	do("LMOVE", "{t}q", "{t}p", "LEFT", "RIGHT")
	do("LREM", "{t}p", "0", "j1")
	do("LINSERT", "{t}q", "BEFORE", "j3", "j2b")
	do("LSET", "{t}q", "0", "J2")
	do("LPOP", "{t}q", "1")
	do("RENAME", "{t}r", "{t}r2")
	do("COPY", "{t}q", "{t}qcopy")
	do("DEL", "{t}px")
	for i := range 50 {
		do("XADD", "{t}x", "*", "n", strconv.Itoa(i))
	}
	do("XADD", "{t}x", "MAXLEN", "~", "40", "*", "n", "last")
	do("XDEL", "{t}x", "0-1")
	do("XGROUP", "CREATE", "{t}x", "g", "0")
	do("XREADGROUP", "GROUP", "g", "alice", "COUNT", "5", "STREAMS", "{t}x", ">")
	do("XREADGROUP", "GROUP", "g", "bob", "COUNT", "3", "STREAMS", "{t}x", ">")
	do("XGROUP", "CREATECONSUMER", "{t}x", "g", "carol")
	// (XACK, XCLAIM and XAUTOCLAIM take ids from the replies)
	pend, err := c.DoStrings("XPENDING", "{t}x", "g", "-", "+", "10")
	if err != nil || len(pend.Elems) < 4 {
		t.Fatalf("XPENDING: %v %v", pend, err)
	}
	do("XACK", "{t}x", "g", pend.Elems[0].Elems[0].Text())
	do("XCLAIM", "{t}x", "g", "carol", "0", pend.Elems[1].Elems[0].Text())
	do("XAUTOCLAIM", "{t}x", "g", "dave", "0", "0", "COUNT", "1")

	// Blocked commands served by a later push: their effect is logged.
	bl := dial(t, addr, 2)
	blocked := make(chan error, 2)
	go func() {
		_, err := bl.DoStrings("BLMOVE", "{t}wq", "{t}wp", "LEFT", "RIGHT", "5")
		blocked <- err
	}()
	do("XGROUP", "CREATE", "{t}x", "g2", "$")
	br := dial(t, addr, 2)
	go func() {
		_, err := br.DoStrings("XREADGROUP", "GROUP", "g2", "erin", "COUNT", "2", "BLOCK", "5000", "STREAMS", "{t}x", ">")
		blocked <- err
	}()
	waitNodeBlocked(t, c, 2)
	do("RPUSH", "{t}wq", "job-a", "job-b")
	do("XADD", "{t}x", "*", "n", "woke")
	for range 2 {
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
	}
	// A transaction, and a random tail.
	for _, cmd := range [][]string{{"MULTI"}, {"INCR", "{t}n"}, {"RPUSH", "{t}q", "tx"}, {"XADD", "{t}x", "*", "n", "tx"}, {"EXEC"}} {
		do(cmd...)
	}
	for i := range 300 {
		k := "{t}k" + strconv.Itoa(rng.IntN(20))
		switch rng.IntN(4) {
		case 0:
			do("INCR", k+"i")
		case 1:
			do("RPUSH", k+"l", strconv.Itoa(i))
		case 2:
			do("XADD", k+"x", "*", "i", strconv.Itoa(i))
		default:
			do("SET", k+"s", strconv.Itoa(i), "PX", strconv.Itoa(100000+rng.IntN(100000)))
		}
	}
}

// waitNodeBlocked waits until n clients are blocked on the node.
func waitNodeBlocked(t *testing.T, c *difftest.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := c.DoStrings("INFO", "clients")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v.Text(), "blocked_clients:"+strconv.Itoa(n)+"\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %d blocked clients:\n%s", n, v.Text())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dataset reads every key's battery and absolute expiry.
func dataset(t *testing.T, c *difftest.Conn) map[string]string {
	t.Helper()
	keys, err := c.DoStrings("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys.Elems {
		key := k.Text()
		at := expiryAt(t, c, key)
		out[key] = readBattery(t, c, key) + fmt.Sprintf("\nexpiry %d", at) // absolute: exact across a restart or a move
	}
	return out
}

func compareDatasets(t *testing.T, got, want map[string]string) {
	t.Helper()
	var gk, wk []string
	for k := range got {
		gk = append(gk, k)
	}
	for k := range want {
		wk = append(wk, k)
	}
	slices.Sort(gk)
	slices.Sort(wk)
	if !slices.Equal(gk, wk) {
		t.Fatalf("keys after the restart:\n%v\nwant:\n%v", gk, wk)
	}
	for _, k := range wk {
		if got[k] != want[k] {
			t.Errorf("%s after the restart:\n%s\nwant:\n%s", k, got[k], want[k])
		}
	}
}

// TestAOFRestartRestoresEverything: with appendfsync always, a node that
// stops (gracefully, or as if killed: its directory copied while it runs,
// which is what a crash leaves) comes back with every key as it was:
// values, encodings, absolute expiries, stream groups, PELs, delivery
// counts and consumers, and the effects of blocked pops and reads served
// by pushes.
func TestAOFRestartRestoresEverything(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "graceful", true: "crash"}[crash], func(t *testing.T) {
			dir := t.TempDir()
			opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}
			_, addr, stop := nodetest.Start(t, opts, nil)
			c := dial(t, addr, 2)
			persistWorkload(t, c, addr, rand.New(rand.NewPCG(1, 2)))
			want := dataset(t, c)
			loadDir := dir
			if crash {
				loadDir = t.TempDir()
				copyDir(t, dir, loadDir) // every reply came after its fsync
			}
			stop()
			_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: loadDir, Policy: aof.Always}}, nil)
			compareDatasets(t, dataset(t, dial(t, addr2, 2)), want)
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAOFTornTail: a log whose last record was cut short by a crash loads
// without it; garbage in the middle stops the start with an error unless
// CutCorrupt.
func TestAOFTornTail(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	c := dial(t, addr, 2)
	for i := range 10 {
		if _, err := c.DoStrings("SET", "k"+strconv.Itoa(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	log := logFile(t, dir)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, b[:len(b)-3], 0o644); err != nil { // torn last record
		t.Fatal(err)
	}
	_, addr, stop = nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	v, _ := dial(t, addr, 2).DoStrings("DBSIZE")
	if v.Int != 9 {
		t.Fatalf("after a torn last record DBSIZE = %v, want 9", v)
	}
	stop()

	b, _ = os.ReadFile(log)
	mid := len(b) / 2
	b[mid] ^= 0xff // corrupt a record with others after it
	if err := os.WriteFile(log, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := node.New(node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}); err == nil {
		t.Fatal("a node started from a log corrupt in the middle")
	}
	_, addr, _ = nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, CutCorrupt: true}}, nil)
	v, _ = dial(t, addr, 2).DoStrings("DBSIZE")
	if v.Int <= 0 || v.Int >= 9 {
		t.Fatalf("with CutCorrupt DBSIZE = %v, want the records before the corruption", v)
	}
}

// logFile is the one log file in dir.
func logFile(t *testing.T, dir string) string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(dir, "*.aof"))
	if len(ms) != 1 {
		t.Fatalf("log files in %s: %v", dir, ms)
	}
	return ms[0]
}

// TestAOFMisconf: while the log cannot be written, write commands and
// PING get Redis's MISCONF error (reads still work) and nothing is
// acknowledged that is not stored; once the disk recovers, writes work
// again and everything acknowledged survives a restart.
func TestAOFMisconf(t *testing.T) {
	dir := t.TempDir()
	ffs := aof.NewFaultFS(aof.OSFS())
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, FS: ffs}}
	_, addr, stop := nodetest.Start(t, opts, nil)
	c := dial(t, addr, 2)
	if v, err := c.DoStrings("SET", "before", "1"); err != nil || v.Text() != "OK" {
		t.Fatalf("SET: %v %v", v, err)
	}
	ffs.FailWrites(syscall.ENOSPC)
	// The write that meets the failure is not acknowledged: its
	// connection is closed without the reply.
	if v, err := c.DoStrings("SET", "during", "1"); err == nil {
		t.Fatalf("a write the log could not store was answered %v", v)
	}
	c = dial(t, addr, 2)
	want := "MISCONF Errors writing to the AOF file: No space left on device"
	for _, args := range [][]string{{"SET", "x", "1"}, {"PING"}, {"RPUSH", "l", "a"}} {
		if v, err := c.DoStrings(args...); err != nil || v.Text() != want {
			t.Errorf("%v while the disk is full = %v %v, want %q", args, v, err, want)
		}
	}
	if v, err := c.DoStrings("GET", "before"); err != nil || v.Text() != "1" {
		t.Errorf("GET while the disk is full = %v %v", v, err)
	}
	ffs.FailWrites(nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := c.DoStrings("SET", "after", "1")
		if err != nil {
			t.Fatal(err)
		}
		if v.Text() == "OK" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused after the disk recovered: %v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	_, addr, _ = nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	c = dial(t, addr, 2)
	for _, k := range []string{"before", "after"} {
		if v, _ := c.DoStrings("GET", k); v.Text() != "1" {
			t.Errorf("%s after the restart = %v", k, v)
		}
	}
	if v, _ := c.DoStrings("EXISTS", "x"); v.Int != 0 {
		t.Error("a write refused with MISCONF was stored")
	}
}

// TestAOFRestartLogsNoEmptyDrops: a node of a cluster drops the slots it
// does not own when it starts; for empty slots that is nothing to log. It
// used to log a drop record for each of them at every start, so the log
// of an idle node grew by one record per slot not owned each restart.
func TestAOFRestartLogsNoEmptyDrops(t *testing.T) {
	dir := t.TempDir()
	start := func() (string, func()) {
		_, addr, stop := nodetest.Start(t, node.Options{Ownership: threeNodes("127.0.0.1:1"),
			AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
		return addr, stop
	}
	addr, stop := start()
	c := dial(t, addr, 2)
	key := keyIn("k", 0, 5460)
	expect(t, c, "OK", "SET", key, "v")
	stop()
	var sizes []int64
	for range 3 {
		addr, stop := start()
		expect(t, dial(t, addr, 2), "v", "GET", key)
		stop()
		st, err := os.Stat(logFile(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.Size())
	}
	if sizes[0] != sizes[1] || sizes[1] != sizes[2] {
		t.Errorf("log sizes after idle restarts %v, want no growth", sizes)
	}
}

// TestTxOverSlotsDuringRewrite: a transaction logged for the whole
// keyspace (here for its DBSIZE) that empties a slot while a rewrite's
// snapshot is being written still marks that slot, so the snapshot lists
// it (empty) and replay does not run the transaction again on an empty
// slot, which would bring back a key the live node had deleted.
func TestTxOverSlotsDuringRewrite(t *testing.T) {
	tag := ""
	for i := 0; tag == ""; i++ {
		// A slot the slowed snapshot reaches well after the transaction.
		if tg := "t" + strconv.Itoa(i); slots.Slot([]byte("{"+tg+"}")) > 16000 {
			tag = tg
		}
	}
	a, b := "{"+tag+"}a", "{"+tag+"}b"
	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, RewritePercent: -1}}
	_, addr, stop := nodetest.Start(t, opts, func(s *node.Server) { node.SlowSnapshotsForTest(s, 256, 30*time.Millisecond) })
	c := dial(t, addr, 2)
	mustDo(t, c, "RPUSH", a, "e")
	mustDo(t, c, "BGREWRITEAOF")
	time.Sleep(100 * time.Millisecond) // the rotation is done, the snapshot at its first slots
	mustDo(t, c, "MULTI")
	for _, cmd := range [][]string{{"SET", b, "str"}, {"RENAME", a, b}, {"LPOP", b}, {"DBSIZE"}} {
		mustDo(t, c, cmd...)
	}
	if v := mustDo(t, c, "EXEC"); fmt.Sprintf("%s %d", v.Elems[2].Text(), v.Elems[3].Int) != "e 0" {
		t.Fatalf("EXEC: %v", v)
	}
	waitField(t, c, "aof_rewrites", "1")
	stop()
	_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	if v := mustDo(t, dial(t, addr2, 2), "KEYS", "*"); len(v.Elems) != 0 {
		t.Fatalf("after the restart KEYS * = %v; the live keyspace was empty", v)
	}
}

// TestBlockedXReadGroupReplaysItsCount: a blocked XREADGROUP without COUNT
// is served at most 1000 entries (as Redis's); its log record says so, so
// the pending list after a restart is the one the live node had.
func TestBlockedXReadGroupReplaysItsCount(t *testing.T) {
	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}
	_, addr, stop := nodetest.Start(t, opts, nil)
	c := dial(t, addr, 2)
	mustDo(t, c, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	rd := dial(t, addr, 2)
	got := make(chan int, 1)
	go func() {
		v, err := rd.DoStrings("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
		if err != nil || len(v.Elems) != 1 || len(v.Elems[0].Elems) != 2 {
			got <- -1
			return
		}
		got <- len(v.Elems[0].Elems[1].Elems)
	}()
	waitNodeBlocked(t, c, 1)
	mustDo(t, c, "MULTI")
	for range 1001 {
		mustDo(t, c, "XADD", "s", "*", "f", "v")
	}
	mustDo(t, c, "EXEC")
	if n := <-got; n != 1000 {
		t.Fatalf("the blocked reader got %d entries, want 1000", n)
	}
	live := mustDo(t, c, "XPENDING", "s", "g")
	stop()
	_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	after := mustDo(t, dial(t, addr2, 2), "XPENDING", "s", "g")
	if !difftest.Equal(live, after) {
		t.Fatalf("XPENDING live %v, after a restart %v", live, after)
	}
}

// mustDo sends a command and returns its reply, failing the test if the
// connection fails or the reply is an error.
func mustDo(t *testing.T, c *difftest.Conn, args ...string) difftest.Value {
	t.Helper()
	v, err := c.DoStrings(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if v.IsError() {
		t.Fatalf("%v: %s", args, v.Str)
	}
	return v
}

// TestFailedKeyedCommandDuringRewrite: a write command whose arguments
// name no key (LMPOP with a count past its arguments) fails and changes nothing, but is
// logged; logged while a rewrite's snapshot is being written, it must not
// stop the next start as a keyless write inside the snapshot.
func TestFailedKeyedCommandDuringRewrite(t *testing.T) {
	tag := ""
	for i := 0; tag == ""; i++ {
		if tg := "t" + strconv.Itoa(i); slots.Slot([]byte("{"+tg+"}")) > 16000 {
			tag = tg
		}
	}
	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, RewritePercent: -1}}
	_, addr, stop := nodetest.Start(t, opts, func(s *node.Server) { node.SlowSnapshotsForTest(s, 256, 30*time.Millisecond) })
	c := dial(t, addr, 2)
	mustDo(t, c, "SET", "{"+tag+"}k", "v") // a slot the snapshot reaches after the LMPOP
	mustDo(t, c, "BGREWRITEAOF")
	time.Sleep(100 * time.Millisecond)
	if v, err := c.DoStrings("LMPOP", "5", "{"+tag+"}k", "LEFT"); err != nil || !v.IsError() {
		t.Fatalf("LMPOP 5 with one key: %v %v, want an error", v, err)
	}
	waitField(t, c, "aof_rewrites", "1")
	stop()
	_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	if v := mustDo(t, dial(t, addr2, 2), "GET", "{"+tag+"}k"); v.Text() != "v" {
		t.Fatalf("GET after the restart: %v", v)
	}
}
