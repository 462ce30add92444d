package memlimit

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// sink keeps test allocations alive (or, set to nil, makes them garbage)
// where the compiler cannot see through it.
var sink [][]byte

func fill(mb int) [][]byte {
	out := make([][]byte, mb)
	for i := range out {
		out[i] = make([]byte, 1<<20)
		out[i][0] = 1
	}
	return out
}

// churn allocates mb megabytes that die at once, one at a time: garbage
// as a write load makes it, where a collection at any moment finds little
// of it live.
func churn(mb int) {
	for range mb {
		b := make([]byte, 1<<20)
		b[0] = 1
		sinkOne = b
	}
	sinkOne = nil
}

var sinkOne []byte

func newTestGuard(t *testing.T) (*Guard, *atomic.Int64, *atomic.Int32) {
	t.Helper()
	var writes atomic.Int64
	var gcs atomic.Int32
	g := New(writes.Load)
	g.collectNow = func() { gcs.Add(1); runtime.GC() }
	t.Cleanup(func() { g.SetLimit(0); sink = nil })
	return g, &writes, &gcs
}

func TestNoLimitNeverOver(t *testing.T) {
	g, _, gcs := newTestGuard(t)
	sink = fill(16)
	g.Check()
	if g.Over() || gcs.Load() != 0 {
		t.Fatalf("no limit: over=%v, forced collections %d", g.Over(), gcs.Load())
	}
}

func TestOverAtOnceAndBack(t *testing.T) {
	g, _, _ := newTestGuard(t)
	if used := g.SetLimit(1); used <= 1 || !g.Over() {
		t.Fatalf("limit 1 byte: used %d, over=%v; want over", used, g.Over())
	}
	g.SetLimit(0)
	if g.Over() {
		t.Fatal("limit removed: still over")
	}
}

// TestGarbageDoesNotCount: a heap over the limit only because of garbage
// is collected before anything is refused; live data over it is refused.
func TestGarbageDoesNotCount(t *testing.T) {
	g, writes, gcs := newTestGuard(t)
	runtime.GC()
	base := g.Check()
	churn(64) // 64 MB of garbage
	if used := g.SetLimit(base + 32<<20); g.Over() {
		t.Fatalf("garbage counted: used %d over a limit of %d after %d collections", used, base+32<<20, gcs.Load())
	}
	sink = fill(64) // live
	time.Sleep(minForcedGCGap)
	writes.Add(1)
	if used := g.Check(); !g.Over() {
		t.Fatalf("64 MB live over a limit 32 MB above the base: used %d, not over", used)
	}
	// Freed: the next look after a write collects and lets writes in.
	sink = nil
	time.Sleep(minForcedGCGap + 2*g.gcCost)
	writes.Add(1)
	if used := g.Check(); g.Over() {
		t.Fatalf("data freed: used %d, still over", used)
	}
}

// TestGarbageWithinTheGap: garbage that takes the heap over the limit
// right after a forced collection, before another may run, refuses
// nothing: the last collection found the live data under the limit.
func TestGarbageWithinTheGap(t *testing.T) {
	g, writes, gcs := newTestGuard(t)
	runtime.GC()
	base := g.Check()
	sink = fill(24) // live data, under the limit
	limit := base + 32<<20
	g.SetLimit(limit)
	for round := range 5 {
		churn(64)
		writes.Add(1) // overwrites
		if used := g.Check(); g.Over() {
			t.Fatalf("round %d: garbage took the heap to %d over a limit of %d with 24 MB live: refused (%d collections)",
				round, used, limit, gcs.Load())
		}
	}
}

// TestGrowthWithinTheGap: live data that grows past the limit right after
// a collection found it under (with garbage around) is refused at the next
// look, not once the usual spacing has passed: what was allocated since
// could by itself hold more than the room that collection left.
func TestGrowthWithinTheGap(t *testing.T) {
	g, writes, _ := newTestGuard(t)
	runtime.GC()
	base := g.Check()
	sink = fill(24)
	limit := base + 32<<20
	g.SetLimit(limit)
	churn(64)
	writes.Add(1)
	g.Check() // collects: under
	if g.Over() {
		t.Fatal("24 MB live under a limit 32 MB above the base: over")
	}
	sink = append(sink, fill(16)...) // 40 MB live
	writes.Add(1)
	time.Sleep(g.gcCost)
	if used := g.Check(); !g.Over() {
		t.Fatalf("40 MB live over a limit 32 MB above the base, %v after a collection: not over (used %d)", g.gcCost, used)
	}
}

// TestFreedCollectsAtOnce: after a flush, while over, Freed itself
// collects, without waiting for the spacing, a counted write or the
// sampler, and Over is up to date when it returns.
func TestFreedCollectsAtOnce(t *testing.T) {
	g, _, gcs := newTestGuard(t)
	runtime.GC()
	base := g.Check()
	sink = fill(64)
	g.SetLimit(base + 32<<20)
	if used := g.Check(); !g.Over() {
		t.Fatalf("64 MB live over a limit 32 MB above the base: used %d, not over", used)
	}
	n := gcs.Load()
	sink = nil // the flush
	g.Freed()
	if got := gcs.Load(); got != n+1 {
		t.Fatalf("Freed while over: %d collections, want %d", got, n+1)
	}
	if g.Over() {
		t.Fatal("data freed: still over when Freed returned")
	}
	g.SetLimit(0)
	g.Freed() // under: nothing to do
	if got := gcs.Load(); got != n+1 {
		t.Fatalf("Freed under the limit collected: %d collections, want %d", got, n+1)
	}
}

// TestNoPointlessCollections: while over the limit with no write since the
// last collection, nothing could have been freed, so none is forced.
func TestNoPointlessCollections(t *testing.T) {
	g, writes, gcs := newTestGuard(t)
	g.SetLimit(1)
	if !g.Over() {
		t.Fatal("limit 1 byte: not over")
	}
	writes.Add(1)
	g.Check() // a write since: collects
	first := gcs.Load()
	if first == 0 {
		t.Fatal("a write while over forced no collection")
	}
	writes.Add(1)
	g.Check() // within the gap
	time.Sleep(minForcedGCGap + 2*g.gcCost)
	g.Check() // a write since, the gap passed: collects
	if n := gcs.Load(); n != first+1 {
		t.Fatalf("collections: %d, want %d (one after the gap)", n, first+1)
	}
	time.Sleep(minForcedGCGap + 2*g.gcCost)
	g.Check() // nothing written since
	if n := gcs.Load(); n != first+1 {
		t.Fatalf("collections forced with nothing written: %d, want %d", n, first+1)
	}
	if !g.Over() {
		t.Fatal("no longer over a 1-byte limit")
	}
}

// TestGoLimitFollows: Go's soft memory limit is raised above maxmemory
// while one is set, and restored without; with GOMEMLIMIT set for the
// process it is left as it is.
func TestGoLimitFollows(t *testing.T) {
	g, _, _ := newTestGuard(t)
	before := debug.SetMemoryLimit(-1)
	want := int64(1<<30 + 1<<28)
	if !g.ownsGoLim {
		want = before // GOMEMLIMIT: the operator's choice stands
	}
	g.SetLimit(1 << 30)
	if got := debug.SetMemoryLimit(-1); got != want {
		t.Fatalf("Go's limit with maxmemory 1gb: %d, want %d", got, want)
	}
	g.SetLimit(0)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("Go's limit after maxmemory 0: %d, want %d as before", got, before)
	}
}

func TestRunStops(t *testing.T) {
	g, _, _ := newTestGuard(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { g.Run(stop); close(done) }()
	g.SetLimit(1)
	time.Sleep(3 * SampleInterval)
	close(stop)
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Run did not return after stop closed")
	}
}
