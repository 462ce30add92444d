// Package memlimit enforces Redis's maxmemory with the noeviction policy
// in a Go process: it tells a server whether its used memory is over the
// limit, so that commands which may grow the data (Redis's denyoom flag)
// are refused with the OOM error while reads and deletes go on.
//
// Used memory is the Go heap's allocated objects, the figure INFO reports
// as used_memory. Redis's allocator frees at once; Go's heap also holds
// garbage until the next collection, so crossing the limit alone does not
// make a Guard say "over": it first collects (runtime.GC) and looks again,
// and only live data over the limit refuses writes. Collections it forces
// are spaced so that they take at most a quarter of the time, and while
// the heap stays over it collects again only after a write (a delete may
// have freed something; refused commands free nothing). Go's own soft
// memory limit is raised to match, a headroom above maxmemory, so the
// runtime collects before the heap doubles past it (GOGC's pace) unless
// GOMEMLIMIT was set for the process.
//
// The check itself is one atomic load: a sampler reads the heap every
// SampleInterval, so a burst of writes may pass the limit by what arrives
// in that time, as one big write passes it in Redis too (the check comes
// before the command).
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

// heapMetric is the live-and-not-yet-swept heap: INFO's used_memory.
const heapMetric = "/memory/classes/heap/objects:bytes"

// Guard tracks one server's maxmemory. The zero value is not usable; use
// New.
type Guard struct {
	limit atomic.Int64 // bytes; 0: no limit
	over  atomic.Bool

	// writes counts the server's successful writes; a forced collection
	// after none is pointless.
	writes func() int64

	mu         sync.Mutex // sample, SetLimit
	sample     []metrics.Sample
	lastGC     time.Time
	gcCost     time.Duration
	gcWrites   int64
	ownsGoLim  bool   // GOMEMLIMIT was not set: the Guard sets Go's limit
	baseGoLim  int64  // Go's limit before the Guard changed it
	collectNow func() // runtime.GC, replaced in tests
}

// New returns a Guard with no limit. writes reports a count that grows
// with every write the server applies (nil: assume every sample follows
// writes).
func New(writes func() int64) *Guard {
	if writes == nil {
		var n atomic.Int64
		writes = func() int64 { return n.Add(1) }
	}
	_, env := os.LookupEnv("GOMEMLIMIT")
	return &Guard{
		writes:     writes,
		sample:     []metrics.Sample{{Name: heapMetric}},
		ownsGoLim:  !env,
		baseGoLim:  debug.SetMemoryLimit(-1),
		collectNow: runtime.GC,
	}
}

// Limit is the current maxmemory in bytes (0: none).
func (g *Guard) Limit() int64 { return g.limit.Load() }

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
	used := g.heap()
	limit := g.limit.Load()
	if limit == 0 || used <= limit {
		g.over.Store(false)
		return used
	}
	writes := g.writes()
	since := time.Since(g.lastGC)
	worth := !g.over.Load() || writes != g.gcWrites
	if worth && since >= max(minForcedGCGap, 4*g.gcCost) {
		start := time.Now()
		g.collectNow()
		g.gcCost = time.Since(start)
		g.lastGC = time.Now()
		g.gcWrites = writes
		used = g.heap()
	}
	g.over.Store(used > limit)
	return used
}

func (g *Guard) heap() int64 {
	metrics.Read(g.sample)
	if g.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(g.sample[0].Value.Uint64())
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
