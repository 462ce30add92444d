package node_test

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/nodetest"
)

// heldFS is the real filesystem whose reads wait, once the first has
// come, until release is closed: a load that stays in progress.
type heldFS struct {
	aof.FS
	reached chan struct{}
	release chan struct{}
	once    *sync.Once
}

func (h heldFS) OpenFile(name string, flag int, perm fs.FileMode) (aof.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return heldFile{File: f, h: h}, nil
}

type heldFile struct {
	aof.File
	h heldFS
}

func (f heldFile) ReadAt(p []byte, off int64) (int, error) {
	if off > 0 { // past the header: the records
		f.h.once.Do(func() { close(f.h.reached) })
		<-f.h.release
	}
	return f.File.ReadAt(p, off)
}

// TestLoadWhileServing: with LoadWhileServing a node accepts clients while
// it loads its log and answers as Redis does meanwhile: LOADING for the
// commands Redis refuses (a transaction that queued one then fails with
// EXECABORT), the rest served, INFO with loading:1 and the loading_*
// fields after the log's; then everything, with the data in.
func TestLoadWhileServing(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always}}, nil)
	c := dial(t, addr, 2)
	for _, k := range []string{"a", "b", "c"} {
		if v, err := c.DoStrings("SET", k, "v-"+k); err != nil || v.Text() != "OK" {
			t.Fatalf("SET %s: %v %v", k, v, err)
		}
	}
	stop()

	h := heldFS{FS: aof.OSFS(), reached: make(chan struct{}), release: make(chan struct{}), once: new(sync.Once)}
	released := sync.OnceFunc(func() { close(h.release) })
	t.Cleanup(released)
	_, addr, _ = nodetest.Start(t, node.Options{LoadWhileServing: true, MaxMemory: 1 << 30, AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, FS: h}}, nil)
	select {
	case <-h.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the load never read the log")
	}
	c = dial(t, addr, 2)
	const loading = "LOADING Redis is loading the dataset in memory"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, loading},
		{[]string{"GET", "a"}, loading},
		{[]string{"DBSIZE"}, loading},
		{[]string{"ECHO", "hi"}, "hi"},
		{[]string{"CONFIG", "GET", "appendonly"}, "[appendonly yes]"},
		{[]string{"MULTI"}, "OK"},
		{[]string{"SET", "d", "1"}, loading},
		{[]string{"EXEC"}, "EXECABORT Transaction discarded because of previous errors."},
		// No OOM while loading (Redis neither evicts nor refuses for
		// memory then), and the setting outlives the load.
		{[]string{"CONFIG", "SET", "maxmemory", "1"}, "OK"},
		{[]string{"SET", "d", "1"}, loading},
	} {
		v, err := c.DoStrings(tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		got := v.Text()
		if v.Kind == difftest.Array {
			var parts []string
			for _, e := range v.Elems {
				parts = append(parts, e.Text())
			}
			got = "[" + strings.Join(parts, " ") + "]"
		}
		if got != tc.want {
			t.Errorf("while loading, %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	info := infoFields(t, c, "persistence")
	if info["loading"] != "1" || info["aof_enabled"] != "0" {
		t.Errorf("while loading: loading:%s aof_enabled:%s, want 1 and 0 (as Redis, whose log is off until loaded)", info["loading"], info["aof_enabled"])
	}
	names := infoNames(t, c, "persistence")
	wantTail := []string{"aof_current_size", "aof_base_size", "aof_pending_rewrite", "aof_buffer_length", "aof_pending_bio_fsync", "aof_delayed_fsync",
		"loading_start_time", "loading_total_bytes", "loading_rdb_used_mem", "loading_loaded_bytes", "loading_loaded_perc", "loading_eta_seconds"}
	if len(names) < len(wantTail) || strings.Join(names[len(names)-len(wantTail):], " ") != strings.Join(wantTail, " ") {
		t.Errorf("INFO persistence while loading ends with %v, want %v", names, wantTail)
	}
	if info["loading_total_bytes"] == "0" {
		t.Error("loading_total_bytes is 0 while a log of three records loads")
	}

	released()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.DoStrings("GET", "b")
		if err != nil {
			t.Fatal(err)
		}
		if v.Text() == "v-b" {
			break
		}
		if v.Text() != loading || time.Now().After(deadline) {
			t.Fatalf("after the load GET b = %v", v)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if v, _ := c.DoStrings("DBSIZE"); v.Int != 3 {
		t.Errorf("DBSIZE after the load = %v, want 3", v)
	}
	if v, _ := c.DoStrings("CONFIG", "GET", "maxmemory"); len(v.Elems) != 2 || v.Elems[1].Text() != "1" {
		t.Errorf("CONFIG GET maxmemory after the load = %v, want the CONFIG SET during it (1)", v)
	}
	c.DoStrings("CONFIG", "SET", "maxmemory", "0")
	if info := infoFields(t, c, "persistence"); info["loading"] != "0" || info["aof_enabled"] != "1" || info["loading_total_bytes"] != "" {
		t.Errorf("after the load: loading:%s aof_enabled:%s loading_total_bytes:%q", info["loading"], info["aof_enabled"], info["loading_total_bytes"])
	}
	if v, _ := c.DoStrings("SET", "d", "1"); v.Text() != "OK" {
		t.Errorf("SET after the load = %v", v)
	}
}

// infoNames lists an INFO section's field names in order.
func infoNames(t *testing.T, c *difftest.Conn, section string) []string {
	t.Helper()
	v, err := c.DoStrings("INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(v.Text(), "\r\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			names = append(names, k)
		}
	}
	return names
}

// TestLoadStopsOnClose: a node closed while it loads (SIGTERM, SHUTDOWN)
// stops loading rather than loading everything first, and Serve ends
// cleanly.
func TestLoadStopsOnClose(t *testing.T) {
	const n = 5000
	dir := loggedKeys(t, n)

	h := heldFS{FS: aof.OSFS(), reached: make(chan struct{}), release: make(chan struct{}), once: new(sync.Once)}
	srv, addr, stop := nodetest.Start(t, node.Options{LoadWhileServing: true, AOF: &node.AOFOptions{Dir: dir, Policy: aof.No, FS: h}}, nil)
	<-h.reached
	c := dial(t, addr, 2)
	// No reply: the node closes (without saving, as Redis while
	// loading), and the connection with it.
	if err := c.Send([]byte("SHUTDOWN")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Receive(); err == nil {
		t.Fatalf("SHUTDOWN while loading replied %v", v)
	}
	close(h.release)
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop while loading")
	}
	got := 0
	for slot := range 16384 {
		got += srv.Keyspace().Shard(uint16(slot)).Len()
	}
	if got >= n {
		t.Errorf("closed while loading, the node still loaded all %d keys", got)
	}
}

// TestLoadLetsCommandsIn: the commands served while loading that read the
// keyspace (WATCH, EXEC, the HELP subcommands, INFO keyspace) are
// answered between chunks of the load, as Redis answers them, not after
// it; INFO keyspace counts the keys loaded so far.
func TestLoadLetsCommandsIn(t *testing.T) {
	const n = 3000
	dir := loggedKeys(t, n)

	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	_, addr, _ := nodetest.Start(t, node.Options{LoadWhileServing: true, AOF: &node.AOFOptions{Dir: dir, Policy: aof.No}}, func(s *node.Server) {
		node.OnLoadYieldForTest(s, func() {
			once.Do(func() {
				close(reached)
				<-release // the first turn lasts until the test is done
			})
		})
	})
	defer close(release)
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the load never let commands in")
	}
	c := dial(t, addr, 2)
	c.NetConn().SetDeadline(time.Now().Add(5 * time.Second)) // a command waiting for the load fails the test
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "LOADING Redis is loading the dataset in memory"},
		{[]string{"WATCH", "k1"}, "OK"},
		{[]string{"OBJECT", "HELP"}, ""},
		{[]string{"XINFO", "HELP"}, ""},
		{[]string{"MULTI"}, "OK"},
		{[]string{"ECHO", "x"}, "QUEUED"},
	} {
		v, err := c.DoStrings(tc.args...)
		if err != nil {
			t.Fatalf("while loading, %q: %v", tc.args, err)
		}
		if tc.want != "" && v.Text() != tc.want {
			t.Errorf("while loading, %q = %v, want %q", tc.args, v, tc.want)
		}
	}
	v, err := c.DoStrings("EXEC")
	if err != nil || v.Kind != difftest.Array || len(v.Elems) != 1 || v.Elems[0].Text() != "x" {
		t.Errorf("while loading, EXEC of MULTI/ECHO x = %v %v", v, err)
	}
	info := infoFields(t, c, "keyspace")
	keys := 0
	if db0, ok := info["db0"]; ok {
		fmt.Sscanf(db0, "keys=%d", &keys)
	}
	if keys <= 0 || keys >= n {
		t.Errorf("INFO keyspace while loading: db0 %q, want the keys loaded so far (some of %d)", info["db0"], n)
	}
}

// loggedKeys returns a data directory whose log holds n SETs (k0 ...),
// written by a node that has stopped.
func loggedKeys(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	_, addr, stop := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.No}}, nil)
	c := dial(t, addr, 2)
	for i := range n {
		if err := c.Send([]byte("SET"), []byte("k"+strconv.Itoa(i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if v, err := c.Receive(); err != nil || v.Text() != "OK" {
			t.Fatalf("SET: %v %v", v, err)
		}
	}
	stop()
	return dir
}
