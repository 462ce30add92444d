// Package memlimit enforces Redis's maxmemory with the noeviction policy
// in a Go process: it tells a server whether its used memory is over the
// limit, so that commands which may grow the data (Redis's denyoom flag)
// are refused with the OOM error while reads and deletes go on.
//
// Used memory is the Go heap's allocated objects, the figure INFO reports
// as used_memory. Redis's allocator frees at once; Go's heap also holds
// garbage until the next collection, so a heap over the limit refuses
// nothing unless the live data the Guard's last collection found is over
// it too. When the heap crosses the limit while that collection found
// less, the Guard collects (runtime.GC) to know, and writes go on
// meanwhile; it collects again while over only after a write (a delete
// may have freed something; refused commands free nothing), or within
// Freed (a flush). Collections it forces are spaced by twice the
// last one's duration (at least 100 ms), or by its duration alone once
// what was allocated since could by itself take the data over. Go's own soft memory limit is raised to match, a
// headroom above maxmemory, so the runtime collects before the heap
// doubles past it (GOGC's pace), unless GOMEMLIMIT was set for the
// process.
//
// The check itself is one atomic load: a sampler reads the heap every
// SampleInterval, so writes may pass the limit by what arrives before the
// sampler and a collection catch up, as one big write passes it in Redis
// too (the check comes before the command).
package memlimit

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// SampleInterval is how often Run reads the heap while a limit is set.
const SampleInterval = 10 * time.Millisecond

// minForcedGCGap is the least time between two collections a Guard
// forces, whatever the last one cost.
const minForcedGCGap = 100 * time.Millisecond

// The metrics read: the heap's objects, live or not yet swept (INFO's
// used_memory), and the live heap the last collection marked.
const (
	heapMetric = "/memory/classes/heap/objects:bytes"
	liveMetric = "/gc/heap/live:bytes"
)

// Guard tracks one server's maxmemory. The zero value is not usable; use
// New.
type Guard struct {
	limit atomic.Int64 // bytes; 0: no limit
	over  atomic.Bool

	// writes counts the server's successful writes; a forced collection
	// after none is pointless.
	writes func() int64

	mu          sync.Mutex // the samples, SetLimit
	heapSample  []metrics.Sample
	liveSample  []metrics.Sample
	lastGC      time.Time
	gcCost      time.Duration
	gcWrites    int64
	freed       bool   // Freed since the last collection
	live        int64  // live heap the Guard's last collection found
	heapAfterGC int64  // the heap just after it
	ownsGoLim   bool   // GOMEMLIMIT was not set: the Guard sets Go's limit
	baseGoLim   int64  // Go's limit before the Guard changed it
	collectNow  func() // runtime.GC, replaced in tests
}

// New returns a Guard with no limit. writes reports a count that grows
// with every write the server applies.
func New(writes func() int64) *Guard {
	_, env := os.LookupEnv("GOMEMLIMIT")
	return &Guard{
		writes:     writes,
		heapSample: []metrics.Sample{{Name: heapMetric}},
		liveSample: []metrics.Sample{{Name: liveMetric}},
		ownsGoLim:  !env,
		baseGoLim:  debug.SetMemoryLimit(-1),
		collectNow: runtime.GC,
	}
}

// Over reports whether denyoom commands are refused now.
func (g *Guard) Over() bool { return g.over.Load() }

// SetLimit sets maxmemory (0 removes it) and checks the heap against it
// at once, so that CONFIG SET takes effect for the next command. It
// returns the heap's size as measured.
func (g *Guard) SetLimit(n int64) int64 {
	if n < 0 {
		n = 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit.Store(n)
	if g.ownsGoLim {
		debug.SetMemoryLimit(goLimit(n, g.baseGoLim))
	}
	g.lastGC = time.Time{} // a new limit deserves a fresh look
	return g.checkLocked()
}

// goLimit is Go's soft memory limit for maxmemory n: n plus room for the
// runtime's own memory and fragmentation, which Go counts and Redis's
// used_memory does not. Without a maxmemory, base (Go's limit before).
func goLimit(n, base int64) int64 {
	if n == 0 {
		return base
	}
	room := max(n/4, 64<<20)
	if n > math.MaxInt64-room {
		return math.MaxInt64
	}
	return n + room
}

// Check samples the heap now and updates Over; it returns the heap's size.
func (g *Guard) Check() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.checkLocked()
}

func (g *Guard) checkLocked() int64 {
	heap := read(g.heapSample)
	limit := g.limit.Load()
	if limit == 0 || heap <= limit {
		g.over.Store(false)
		return heap
	}
	// The heap is over; the data may not be. Collect to know when the
	// Guard's last collection found the data under the limit, or when
	// something may have been freed since. (Not the runtime's own
	// collections: one that runs while a write load allocates counts
	// what is allocated meanwhile as live.)
	writes := g.writes()
	gap := max(minForcedGCGap, 2*g.gcCost)
	if heap-g.heapAfterGC > limit-g.live {
		// What was allocated since the last collection could by
		// itself take the data over: look again as soon as the last
		// collection's cost allows, or big writes run far past the
		// limit while the heap's garbage hides them.
		gap = g.gcCost
	}
	if g.freed || (g.live <= limit || writes != g.gcWrites) && time.Since(g.lastGC) >= gap {
		start := time.Now()
		g.collectNow()
		g.gcCost = time.Since(start)
		g.lastGC = time.Now()
		g.gcWrites = writes
		g.freed = false
		g.live = read(g.liveSample)
		heap = read(g.heapSample)
		g.heapAfterGC = heap
	}
	g.over.Store(heap > limit && g.live > limit)
	return heap
}

// Freed tells the Guard that much was just freed (a flush). While over,
// it collects at once and updates Over before it returns, so that the
// write a client sends right after its FLUSHALL is judged on what is left,
// as Redis, which frees a flush synchronously, judges it.
func (g *Guard) Freed() {
	if !g.over.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.freed = true
	g.checkLocked()
}

// read reads a one-metric sample, in bytes.
func read(sample []metrics.Sample) int64 {
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}

// Run samples the heap every SampleInterval until stop closes (while no
// limit is set a sample is one atomic load).
func (g *Guard) Run(stop <-chan struct{}) {
	t := time.NewTicker(SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if g.limit.Load() != 0 || g.over.Load() {
				g.Check()
			}
		}
	}
}
