package node_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/nodetest"
)

// persistField reads one field of INFO persistence.
func persistField(t *testing.T, c *difftest.Conn, name string) string {
	t.Helper()
	v, err := c.DoStrings("INFO", "persistence")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(v.Text(), "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && k == name {
			return val
		}
	}
	t.Fatalf("INFO persistence has no %s:\n%s", name, v.Text())
	return ""
}

// waitField polls INFO persistence until name has value want.
func waitField(t *testing.T, c *difftest.Conn, name, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := persistField(t, c, name)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO %s = %s, want %s", name, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// churn writes to many slots (so a snapshot's slot-by-slot dump
// interleaves with them): counters, lists moved between, streams with a
// group, transactions, expiring keys, and now and then a FLUSHALL.
func churn(t *testing.T, c *difftest.Conn, rng *rand.Rand, n int, flushAt int) {
	t.Helper()
	for i := range n {
		tag := "{" + strconv.Itoa(rng.IntN(400)) + "}"
		var args []string
		switch rng.IntN(8) {
		case 0:
			args = []string{"INCR", tag + "n"}
		case 1:
			args = []string{"RPUSH", tag + "q", strconv.Itoa(i)}
		case 2:
			args = []string{"LMOVE", tag + "q", tag + "p", "LEFT", "RIGHT"}
		case 3:
			args = []string{"XADD", tag + "x", "*", "i", strconv.Itoa(i)}
		case 4:
			args = []string{"SET", tag + "s", strconv.Itoa(i), "PX", strconv.Itoa(200000 + rng.IntN(100000))}
		case 5:
			args = []string{"SETBIT", tag + "b", strconv.Itoa(rng.IntN(1 << 20)), "1"}
		case 6:
			args = []string{"PFADD", tag + "h", strconv.Itoa(rng.IntN(1000))}
		default:
			for _, a := range [][]string{{"MULTI"}, {"INCR", tag + "tx"}, {"RPUSH", tag + "q", "tx"}, {"EXEC"}} {
				if _, err := c.DoStrings(a...); err != nil {
					t.Error(err)
					return
				}
			}
			continue
		}
		if i == flushAt {
			args = []string{"FLUSHALL"}
		}
		if v, err := c.DoStrings(args...); err != nil || v.Kind == difftest.Error {
			t.Errorf("%v: %v %v", args, v, err)
			return
		}
	}
}

// TestRewriteUnderLoad: BGREWRITEAOF while clients write to every slot
// (and one FLUSHALL falls among them) compacts the log to one snapshot
// and one log file, and a restart restores exactly the data as it was.
func TestRewriteUnderLoad(t *testing.T) {
	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, RewritePercent: -1}}
	// Each snapshot takes ~100 ms, its slots dumped among the writes.
	_, addr, stop := nodetest.Start(t, opts, func(s *node.Server) { node.SlowSnapshotsForTest(s, 256, 2*time.Millisecond) })
	ctl := dial(t, addr, 2)
	churn(t, ctl, rand.New(rand.NewPCG(7, 7)), 2000, -1) // something to snapshot

	var wg sync.WaitGroup
	stopWriters := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, addr, 2)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for round := 0; ; round++ {
				select {
				case <-stopWriters:
					return
				default:
				}
				flushAt := -1
				if w == 0 && round == 3 {
					flushAt = 50
				}
				churn(t, c, rng, 200, flushAt)
			}
		}()
	}
	for r := 1; r <= 3; r++ {
		if v, err := ctl.DoStrings("BGREWRITEAOF"); err != nil || v.Text() != "Background append only file rewriting started" {
			t.Fatalf("BGREWRITEAOF: %v %v", v, err)
		}
		waitField(t, ctl, "aof_rewrites", strconv.Itoa(r))
	}
	close(stopWriters)
	wg.Wait()
	if t.Failed() {
		return
	}
	if got := persistField(t, ctl, "aof_last_bgrewrite_status"); got != "ok" {
		t.Fatalf("aof_last_bgrewrite_status = %s", got)
	}
	if base, _ := strconv.Atoi(persistField(t, ctl, "aof_base_size")); base <= 0 {
		t.Fatalf("aof_base_size = %d after rewrites", base)
	}
	want := dataset(t, ctl)
	stop()
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snap"))
	logs, _ := filepath.Glob(filepath.Join(dir, "*.aof"))
	if len(snaps) != 1 || len(logs) != 1 {
		t.Fatalf("after the rewrites the directory holds snapshots %v and logs %v, want one of each", snaps, logs)
	}
	_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	compareDatasets(t, dataset(t, dial(t, addr2, 2)), want)
}

// TestAutoRewrite: a log past the minimum size that doubled since the
// last rewrite is rewritten on its own, and nothing is lost.
func TestAutoRewrite(t *testing.T) {
	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.EverySec, RewriteMinSize: 64 << 10}}
	_, addr, stop := nodetest.Start(t, opts, nil)
	c := dial(t, addr, 2)
	val := strings.Repeat("v", 1000)
	for i := range 300 {
		if _, err := c.DoStrings("SET", "k"+strconv.Itoa(i%50), val); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for persistField(t, c, "aof_rewrites") == "0" || persistField(t, c, "aof_rewrite_in_progress") == "1" {
		if time.Now().After(deadline) {
			t.Fatal("no automatic rewrite of a log of 300 KB")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The snapshot holds the 50 keys of 1 KB, not the 300 writes.
	if base, _ := strconv.Atoi(persistField(t, c, "aof_base_size")); base < 50_000 || base > 120_000 {
		t.Errorf("aof_base_size = %d after rewriting 50 keys of 1 KB", base)
	}
	want := dataset(t, c)
	stop()
	_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.EverySec}}, nil)
	compareDatasets(t, dataset(t, dial(t, addr2, 2)), want)
}

// TestAutoRewriteAfterRestart: after a restart the log's growth is
// measured from its base (none here), as Redis 7.0 does, so a log past the
// minimum size is rewritten though it has not doubled since the start.
func TestAutoRewriteAfterRestart(t *testing.T) {
	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.EverySec, RewriteMinSize: 64 << 10}}
	_, addr, stop := nodetest.Start(t, opts, nil)
	c := dial(t, addr, 2)
	val := strings.Repeat("v", 1000)
	for range 40 { // 40 KB: under the minimum
		mustDo(t, c, "SET", "k", val)
	}
	stop()
	_, addr, _ = nodetest.Start(t, opts, nil)
	c = dial(t, addr, 2)
	for range 30 { // 70 KB: over it, growth 75% since the start
		mustDo(t, c, "SET", "k", val)
	}
	waitField(t, c, "aof_rewrites", "1")
	waitField(t, c, "aof_rewrite_in_progress", "0")
	if v := mustDo(t, c, "STRLEN", "k"); v.Int != 1000 {
		t.Errorf("STRLEN after the rewrite: %v", v)
	}
}

// TestSaveCommands: the replies of BGREWRITEAOF, BGSAVE, SAVE and
// LASTSAVE and the INFO counters they move.
func TestSaveCommands(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	dir := t.TempDir()
	_, addr, _ := nodetest.Start(t, node.Options{Now: clock, AOF: &node.AOFOptions{Dir: dir, Policy: aof.EverySec}}, nil)
	c := dial(t, addr, 2)
	expect := func(want string, args ...string) {
		t.Helper()
		v, err := c.DoStrings(args...)
		if err != nil || v.Text() != want {
			t.Fatalf("%v = %v %v, want %q", args, v, err, want)
		}
	}
	if v, _ := c.DoStrings("LASTSAVE"); v.Kind != difftest.Integer || v.Int != now.Unix() {
		t.Fatalf("LASTSAVE at start = %v, want %d", v, now.Unix())
	}
	expect("OK", "SET", "a", "1")
	if got := persistField(t, c, "rdb_changes_since_last_save"); got != "1" {
		t.Fatalf("rdb_changes_since_last_save = %s, want 1", got)
	}
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	expect("OK", "SAVE")
	if v, _ := c.DoStrings("LASTSAVE"); v.Int != now.Unix() {
		t.Fatalf("LASTSAVE after SAVE = %v, want %d", v, now.Unix())
	}
	// SAVE is not a BGSAVE: Redis leaves rdb_last_bgsave_time_sec at -1.
	for name, want := range map[string]string{"rdb_saves": "1", "rdb_changes_since_last_save": "0", "rdb_last_bgsave_status": "ok",
		"rdb_last_bgsave_time_sec": "-1", "aof_rewrites": "0"} {
		if got := persistField(t, c, name); got != want {
			t.Errorf("after SAVE %s = %s, want %s", name, got, want)
		}
	}
	expect("Background saving started", "BGSAVE")
	waitField(t, c, "rdb_bgsave_in_progress", "0")
	waitField(t, c, "rdb_saves", "2")
	if got := persistField(t, c, "rdb_last_bgsave_time_sec"); got != "0" {
		t.Errorf("after BGSAVE rdb_last_bgsave_time_sec = %s, want 0 (the clock stands still)", got)
	}
	expect("Background append only file rewriting started", "BGREWRITEAOF")
	waitField(t, c, "aof_rewrite_in_progress", "0")
	waitField(t, c, "aof_rewrites", "1")
	// Inside EXEC both are scheduled, as in Redis.
	expect("OK", "MULTI")
	expect("QUEUED", "BGREWRITEAOF")
	v, err := c.DoStrings("EXEC")
	if err != nil || len(v.Elems) != 1 || v.Elems[0].Text() != "Background append only file rewriting scheduled" {
		t.Fatalf("EXEC [BGREWRITEAOF] = %v %v", v, err)
	}
	waitField(t, c, "aof_rewrites", "2")
}

// TestSaveBusy: while a job runs, a second one of the same kind is
// refused, a BGSAVE during a rewrite is refused (or scheduled with
// SCHEDULE) and a BGREWRITEAOF during a save is scheduled, all with
// Redis's texts. The job is held at its snapshot's final rename.
func TestSaveBusy(t *testing.T) {
	dir := t.TempDir()
	ffs := aof.NewFaultFS(aof.OSFS())
	_, addr, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.No, FS: ffs}}, nil)
	c := dial(t, addr, 2)
	expect := func(want string, args ...string) {
		t.Helper()
		v, err := c.DoStrings(args...)
		if err != nil || v.Text() != want {
			t.Fatalf("%v = %v %v, want %q", args, v, err, want)
		}
	}
	release := blockSnapshots(ffs)
	expect("Background append only file rewriting started", "BGREWRITEAOF")
	expect("ERR Background append only file rewriting already in progress", "BGREWRITEAOF")
	expect("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.", "BGSAVE")
	expect("Background saving scheduled", "BGSAVE", "SCHEDULE")
	if got := persistField(t, c, "aof_rewrite_in_progress"); got != "1" {
		t.Errorf("aof_rewrite_in_progress = %s during the rewrite", got)
	}
	release()
	waitField(t, c, "rdb_saves", "1") // the scheduled BGSAVE ran after
	waitField(t, c, "aof_rewrites", "1")

	release = blockSnapshots(ffs)
	expect("Background saving started", "BGSAVE")
	expect("ERR Background save already in progress", "BGSAVE")
	expect("ERR Background save already in progress", "SAVE")
	expect("Background append only file rewriting scheduled", "BGREWRITEAOF")
	if got := persistField(t, c, "aof_rewrite_scheduled"); got != "1" {
		t.Errorf("aof_rewrite_scheduled = %s", got)
	}
	release()
	waitField(t, c, "aof_rewrites", "2")
	waitField(t, c, "rdb_saves", "2")
}

// TestStandaloneSnapshot: with the log off, SAVE writes DIR/dump.snap and
// a restart loads it; without a directory SAVE is refused; a node that
// turns the log on over a dump.snap keeps its data in the log.
func TestStandaloneSnapshot(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	if v, _ := dial(t, addr, 2).DoStrings("SAVE"); v.Text() != "ERR this node keeps no data on disk (started without --dir)" {
		t.Errorf("SAVE without a directory = %v", v)
	}

	dir := t.TempDir()
	_, addr, stop := nodetest.Start(t, node.Options{Dir: dir}, nil)
	c := dial(t, addr, 2)
	persistWorkload(t, c, addr, rand.New(rand.NewPCG(3, 4)))
	if v, err := c.DoStrings("SAVE"); err != nil || v.Text() != "OK" {
		t.Fatalf("SAVE: %v %v", v, err)
	}
	want := dataset(t, c)
	if _, err := c.DoStrings("SET", "after-save", "lost"); err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := os.Stat(filepath.Join(dir, "dump.snap")); err != nil {
		t.Fatal(err)
	}
	// What a save cut short by a crash leaves: not loaded, removed.
	tmp := filepath.Join(dir, "dump.snap.tmp")
	if err := os.WriteFile(tmp, []byte("half a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr, stop = nodetest.Start(t, node.Options{Dir: dir}, nil)
	compareDatasets(t, dataset(t, dial(t, addr, 2)), want)
	stop()
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an interrupted save's %s is still there after a start: %v", tmp, err)
	}

	// The log turned on: the snapshot becomes its base.
	_, addr, stop = nodetest.Start(t, node.Options{Dir: dir, AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	c = dial(t, addr, 2)
	compareDatasets(t, dataset(t, c), want)
	if _, err := c.DoStrings("SET", "logged", "1"); err != nil {
		t.Fatal(err)
	}
	want = dataset(t, c)
	stop()
	if err := os.Remove(filepath.Join(dir, "dump.snap")); err != nil {
		t.Fatal(err)
	}
	_, addr, _ = nodetest.Start(t, node.Options{Dir: dir, AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	compareDatasets(t, dataset(t, dial(t, addr, 2)), want)
}

// TestShutdownCommand: SHUTDOWN closes the connection without a reply,
// Serve returns, and everything written is in the log; a SHUTDOWN SAVE
// that cannot save keeps the node up unless FORCE.
func TestShutdownCommand(t *testing.T) {
	start := func(opts node.Options) (string, <-chan error) {
		opts.Logger = slog.New(slog.DiscardHandler)
		srv, err := node.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(context.Background(), ln) }()
		t.Cleanup(func() { srv.Close() })
		return ln.Addr().String(), done
	}
	waitServe := func(done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve after SHUTDOWN: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after SHUTDOWN")
		}
	}

	addr, done := start(node.Options{})
	c := dial(t, addr, 2)
	if v, _ := c.DoStrings("SHUTDOWN", "SAVE"); v.Text() != "ERR Errors trying to SHUTDOWN. Check logs." {
		t.Fatalf("SHUTDOWN SAVE without a directory = %v", v)
	}
	if v, _ := c.DoStrings("PING"); v.Text() != "PONG" {
		t.Fatalf("after a failed SHUTDOWN PING = %v", v)
	}
	if v, err := c.DoStrings("SHUTDOWN", "SAVE", "FORCE"); err == nil {
		t.Fatalf("SHUTDOWN SAVE FORCE answered %v", v) // it closes the connection instead
	}
	waitServe(done)

	dir := t.TempDir()
	opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.No}}
	addr, done = start(opts)
	c = dial(t, addr, 2)
	for i := range 100 {
		if _, err := c.DoStrings("RPUSH", "q", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := c.DoStrings("SHUTDOWN"); err == nil {
		t.Fatalf("SHUTDOWN answered %v", v)
	}
	waitServe(done)
	addr, _ = start(opts)
	if v, _ := dial(t, addr, 2).DoStrings("LLEN", "q"); v.Int != 100 {
		t.Fatalf("after SHUTDOWN and a restart LLEN = %v, want 100", v)
	}
}

// blockSnapshots holds every snapshot at its final rename until release
// is called.
func blockSnapshots(ffs *aof.FaultFS) (release func()) {
	gate := make(chan struct{})
	ffs.FailOp(func(op aof.Op, path string) error {
		if op == aof.OpRename && strings.Contains(path, ".snap") {
			<-gate
		}
		return nil
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			ffs.FailOp(nil)
			close(gate)
		})
	}
}

// TestLoadedStringsEncodedAfresh: strings loaded from a snapshot get the
// encoding Redis gives a loaded string (tryObjectEncoding in
// rdbLoadObject), not the one their edits left; replaying logged
// commands, as Redis's plain AOF replay does, leaves what the commands
// make.
func TestLoadedStringsEncodedAfresh(t *testing.T) {
	setup := [][]string{
		{"SET", "l", "5"}, {"APPEND", "l", "x"},
		{"SET", "i", "77"}, {"SETRANGE", "i", "0", "7"},
		{"SET", "m", "abc"}, {"APPEND", "m", ""},
		{"SET", "r", strings.Repeat("r", 45)},
	}
	encodings := func(c *difftest.Conn) []string {
		var out []string
		for _, k := range []string{"l", "i", "m", "r"} {
			out = append(out, mustDo(t, c, "OBJECT", "ENCODING", k).Text())
		}
		return append(out, mustDo(t, c, "OBJECT", "REFCOUNT", "i").Text())
	}
	for _, tt := range []struct {
		name string
		opts func(dir string) node.Options
		save []string
		want string
	}{
		{"snapshot", func(dir string) node.Options { return node.Options{Dir: dir} }, []string{"SAVE"},
			"embstr int embstr raw 2147483647"},
		{"rewritten log", func(dir string) node.Options {
			return node.Options{Dir: dir, AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}
		}, []string{"BGREWRITEAOF"}, "embstr int embstr raw 2147483647"},
		{"log replay", func(dir string) node.Options {
			return node.Options{Dir: dir, AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}
		}, nil, "raw raw raw raw 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, addr, stop := nodetest.Start(t, tt.opts(dir), nil)
			c := dial(t, addr, 2)
			for _, args := range setup {
				mustDo(t, c, args...)
			}
			if got := strings.Join(encodings(c), " "); got != "raw raw raw raw 1" {
				t.Fatalf("before the restart: %s", got)
			}
			if tt.save != nil {
				mustDo(t, c, tt.save...)
				if tt.save[0] == "BGREWRITEAOF" {
					waitField(t, c, "aof_rewrites", "1")
					waitField(t, c, "aof_rewrite_in_progress", "0")
				}
			}
			stop()
			_, addr, _ = nodetest.Start(t, tt.opts(dir), nil)
			if got := strings.Join(encodings(dial(t, addr, 2)), " "); got != tt.want {
				t.Errorf("after the restart: %s, want %s", got, tt.want)
			}
		})
	}
}

// TestIdleTimeCountsFromLoad: keys replayed from the log at their logged
// times are idle from the load on, as after Redis's AOF load.
func TestIdleTimeCountsFromLoad(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli())
	dir := t.TempDir()
	opts := node.Options{Dir: dir, AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always},
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }}
	_, addr, stop := nodetest.Start(t, opts, nil)
	c := dial(t, addr, 2)
	mustDo(t, c, "SET", "s", "v")
	mustDo(t, c, "SET", "n", "5")
	mustDo(t, c, "RPUSH", "l", "a")
	clock.Add(100_000)
	if v := mustDo(t, c, "OBJECT", "IDLETIME", "s"); v.Int != 100 {
		t.Fatalf("IDLETIME before the restart: %v, want 100", v)
	}
	stop()
	clock.Add(50_000)
	_, addr, _ = nodetest.Start(t, opts, nil)
	c = dial(t, addr, 2)
	clock.Add(7_000)
	for _, k := range []string{"s", "n", "l"} {
		if v := mustDo(t, c, "OBJECT", "IDLETIME", k); v.Int != 7 {
			t.Errorf("IDLETIME %s 7 s after the load: %v", k, v)
		}
	}
}
