package node_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestMaxMemoryLiveData fills a node started with --maxmemory 48 MB above
// what the process holds: writes get OOM once the values stored pass the
// limit (not before a third of it: the test client, in the same process,
// holds buffers too), reads and deletes go on, INFO reports the limit, and
// once the values are deleted writes are taken again.
func TestMaxMemoryLiveData(t *testing.T) {
	limit := heapPlus(48 << 20)
	_, addr, _ := nodetest.Start(t, node.Options{MaxMemory: limit}, nil)
	c := dialDiff(t, addr)

	if v, err := c.DoStrings("CONFIG", "GET", "maxmemory"); err != nil || len(v.Elems) != 2 || v.Elems[1].Text() != strconv.FormatInt(limit, 10) {
		t.Fatalf("CONFIG GET maxmemory: %v %v, want %d", v, err, limit)
	}
	info, err := c.DoStrings("INFO", "memory")
	if err != nil || !strings.Contains(info.Text(), fmt.Sprintf("\r\nmaxmemory:%d\r\n", limit)) {
		t.Fatalf("INFO memory: %v %v, want maxmemory:%d", info, err, limit)
	}

	stored := fillUntilOOM(t, c, limit)
	for _, cmd := range [][]string{{"GET", "mm:0"}, {"STRLEN", "mm:1"}, {"EXISTS", "mm:2"}, {"DBSIZE"}} {
		if v, err := c.DoStrings(cmd...); err != nil || v.IsError() {
			t.Fatalf("%v over the limit: %v %v, want it served", cmd, v, err)
		}
	}
	if v, err := c.DoStrings("RPUSH", "mm:list", "x"); err != nil || !v.IsError() || !strings.HasPrefix(v.Text(), "OOM ") {
		t.Fatalf("RPUSH over the limit: %v %v, want OOM", v, err)
	}
	for i := range stored {
		if v, err := c.DoStrings("DEL", fmt.Sprint("mm:", i)); err != nil || v.IsError() {
			t.Fatalf("DEL over the limit: %v %v", v, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := c.DoStrings("SET", "mm:after", "x")
		if err != nil {
			t.Fatal(err)
		}
		if !v.IsError() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SET 5 s after deleting every value: %v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fillUntilOOM stores values of 1 MB until the node, started with a
// maxmemory 48 MB above what the process held, refuses one with OOM, then
// lowers the limit well below the data, so that the node stays over it
// whatever the test client's garbage does. It returns the values stored.
func fillUntilOOM(t *testing.T, c *difftest.Conn, limit int64) int {
	t.Helper()
	value := strings.Repeat("v", 1<<20)
	stored := 0
	for ; stored < 200; stored++ {
		v, err := c.DoStrings("SET", fmt.Sprint("mm:", stored), value)
		if err != nil {
			t.Fatal(err)
		}
		if v.IsError() {
			if v.Text() != "OOM command not allowed when used memory > 'maxmemory'." {
				t.Fatalf("SET refused with %q", v.Text())
			}
			break
		}
		if stored%8 == 7 {
			// Let the sampler see the heap, as time passes between
			// writes in a real workload.
			time.Sleep(30 * time.Millisecond)
		}
	}
	t.Logf("OOM after %d values of 1 MB", stored)
	if stored < 16 || stored >= 200 {
		t.Fatalf("%d values of 1 MB stored under a limit 48 MB above the start; want OOM between 16 and 200 (the test client shares the heap)", stored)
	}
	// The OOM came as the data crossed the limit, so it may be over by
	// a buffer's worth only (a collection of the test client's garbage,
	// in this process, could take it back under): lower the limit well
	// below the data.
	if v, err := c.DoStrings("CONFIG", "SET", "maxmemory", strconv.FormatInt(limit-16<<20, 10)); err != nil || v.Text() != "OK" {
		t.Fatalf("CONFIG SET maxmemory: %v %v", v, err)
	}
	return stored
}

// TestMaxMemoryFlush: over maxmemory, a write sent right after FLUSHALL
// or FLUSHDB on the same connection is taken, as Redis, which frees a
// flush before replying, takes it (the node collects before the flush's
// reply; it used to wait for its next heap sample, and refused writes for
// about 10 ms).
func TestMaxMemoryFlush(t *testing.T) {
	limit := heapPlus(48 << 20)
	_, addr, _ := nodetest.Start(t, node.Options{MaxMemory: limit}, nil)
	c := dialDiff(t, addr)
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		if v, err := c.DoStrings("CONFIG", "SET", "maxmemory", strconv.FormatInt(limit, 10)); err != nil || v.Text() != "OK" {
			t.Fatalf("CONFIG SET maxmemory: %v %v", v, err)
		}
		fillUntilOOM(t, c, limit)
		if v, err := c.DoStrings("SET", "mm:before", "x"); err != nil || !strings.HasPrefix(v.Text(), "OOM ") {
			t.Fatalf("SET over the limit: %v %v, want OOM", v, err)
		}
		if v, err := c.DoStrings(flush); err != nil || v.Text() != "OK" {
			t.Fatalf("%s: %v %v", flush, v, err)
		}
		if v, err := c.DoStrings("SET", "mm:after", "x"); err != nil || v.Text() != "OK" {
			t.Fatalf("SET right after %s: %v %v, want OK", flush, v, err)
		}
	}
}

// heapPlus is the process's live heap, just collected, plus n bytes: a
// maxmemory that the test's values, not what the process already holds,
// take the node over.
func heapPlus(n int64) int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc) + n
}
