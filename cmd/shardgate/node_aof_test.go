package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestNodeAOFRestart: 'shardgate node --dir' keeps its data across a
// restart (the log is on by default with --dir and replayed at start);
// with --appendonly=false it does not; a log corrupt in its middle stops
// the start with exit status 1 and an error naming the file, and
// --aof-load-corrupt starts anyway from what comes before the damage.
func TestNodeAOFRestart(t *testing.T) {
	dir := t.TempDir()
	write := func(addr string, n int) {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := range n {
			if v, _ := c.DoStrings("RPUSH", "q", strconv.Itoa(i)); v.IsError() {
				t.Fatalf("RPUSH: %v", v)
			}
		}
	}
	llen := func(addr string) int64 {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		v, _ := c.DoStrings("LLEN", "q")
		if v.IsError() {
			t.Fatalf("LLEN: %v", v)
		}
		return v.Int
	}

	n := startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", dir, "--appendfsync", "always")
	write(n.addr, 50)
	if rc := n.stop(); rc != 0 {
		t.Fatalf("node exited %d", rc)
	}
	n = startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", dir)
	if got := llen(n.addr); got != 50 {
		t.Fatalf("LLEN after a restart = %d, want 50", got)
	}
	if !strings.Contains(n.logs.String(), "append-only log loaded") {
		t.Errorf("no load line in the log: %s", n.logs.String())
	}
	n.stop()

	off := t.TempDir()
	n = startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", off, "--appendonly=false")
	write(n.addr, 5)
	n.stop()
	n = startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", off, "--appendonly=false")
	if got := llen(n.addr); got != 0 {
		t.Errorf("with --appendonly=false LLEN after a restart = %d, want 0", got)
	}
	n.stop()

	logs, _ := filepath.Glob(filepath.Join(dir, "*.aof"))
	if len(logs) != 1 {
		t.Fatalf("log files: %v", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	if err := os.WriteFile(logs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rc := runNode(context.Background(), []string{"--addr", "127.0.0.1:0", "--dir", dir}, &out, &out)
	if rc != 1 || !strings.Contains(out.String(), filepath.Base(logs[0])) || !strings.Contains(out.String(), "--aof-load-corrupt") {
		t.Fatalf("a node on a corrupt log: rc %d, output:\n%s\nwant rc 1 and an error naming %s and the flag that cuts it", rc, out.String(), filepath.Base(logs[0]))
	}
	n = startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", dir, "--aof-load-corrupt")
	if got := llen(n.addr); got <= 0 || got >= 50 {
		t.Errorf("with --aof-load-corrupt LLEN = %d, want what came before the damage", got)
	}
}

// TestNodeDirInUse: a second node on a directory another node is using is
// refused at start (both would append to one log and claim one node id),
// and the directory is free again once the first node stops.
func TestNodeDirInUse(t *testing.T) {
	dir := t.TempDir()
	first := startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", dir)
	var out bytes.Buffer
	rc := runNode(context.Background(), []string{"--addr", "127.0.0.1:0", "--dir", dir}, &out, &out)
	if rc != 1 || !strings.Contains(out.String(), "in use by another process") || !strings.Contains(out.String(), dir) {
		t.Fatalf("a second node on %s: rc %d, output:\n%s\nwant rc 1 and an error saying the directory is in use", dir, rc, out.String())
	}
	if strings.Contains(out.String(), "node listening") {
		t.Fatalf("the second node listened before it was refused:\n%s", out.String())
	}
	if rc := first.stop(); rc != 0 {
		t.Fatalf("first node exited %d", rc)
	}
	second := startNodeCmd(t, "--addr", "127.0.0.1:0", "--dir", dir)
	second.stop()
}
