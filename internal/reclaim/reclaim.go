// Package reclaim gives a server's freed memory back soon after its data
// shrinks, as Redis's allocator does at once, instead of at Go's next
// collection: on an idle Go process that is the runtime's forced one,
// every two minutes, and the pages go back to the OS minutes later
// still. Until then INFO's used_memory counts the garbage (a FLUSHALL of
// 1M keys still read 123 MB after 10 s) and the RSS stays at its peak.
//
// A Reclaimer collects and returns free memory to the OS
// (debug.FreeOSMemory) at once when asked (a flush), and once after a
// burst of writes when the server has been quiet for a whole period
// (unless collections since have found the burst's garbage): a server
// under steady writes is left to Go's own pace, where collections come
// with the allocations. Reclaims are spaced by 50 times the last one's
// duration (at least 100 ms), so that they cost at most about 2% of the
// time however big the heap.
package reclaim

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// quiet is the quiet period after writes before a reclaim.
const quiet = 5 * time.Second

// Reclaimer is one server's reclaimer; use New.
type Reclaimer struct {
	writes func() int64 // grows with every write the server applies
	kick   chan struct{}
	done   chan struct{} // receives after each reclaim, for tests; may be nil

	// Replaced in tests.
	free   func()           // debug.FreeOSMemory
	cycles func() uint64    // completed collections
	ticks  <-chan time.Time // nil: a ticker every quiet period
	ticked func()           // after each tick is handled; may be nil
}

// New returns a Reclaimer that watches writes every 5 s.
func New(writes func() int64) *Reclaimer {
	sample := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	return &Reclaimer{
		writes: writes,
		kick:   make(chan struct{}, 1),
		free:   debug.FreeOSMemory,
		cycles: func() uint64 {
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return 0
			}
			return sample[0].Value.Uint64()
		},
	}
}

// Now asks for a reclaim as soon as possible (once the spacing since the
// last one allows), without waiting for it. Calls made meanwhile are
// folded into one.
func (r *Reclaimer) Now() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Reclaims are spaced so that their collections take a small share of
// the time: a collection of 1 GB of small keys takes about 0.8 s of CPU,
// and a big dataset with a write every few seconds would otherwise be
// collected in full every few seconds.
const (
	minGap     = 100 * time.Millisecond
	costFactor = 50 // a reclaim waits 50 times the last one's duration
)

// Run reclaims when asked or after a burst of writes, until stop closes.
func (r *Reclaimer) Run(stop <-chan struct{}) {
	ticks := r.ticks
	if ticks == nil {
		t := time.NewTicker(quiet)
		defer t.Stop()
		ticks = t.C
	}
	last := r.writes()
	pending := false // writes seen that no collection has followed yet
	var cyclesAtWrite uint64
	due := false       // a reclaim waits for its turn
	var next time.Time // the earliest the next reclaim may start
	var later <-chan time.Time
	try := func() {
		if !due {
			return
		}
		if wait := time.Until(next); wait > 0 {
			if later == nil {
				later = time.After(wait)
			}
			return
		}
		due = false
		start := time.Now()
		r.reclaim()
		next = time.Now().Add(max(minGap, costFactor*time.Since(start)))
		last, pending = r.writes(), false
	}
	for {
		select {
		case <-stop:
			return
		case <-r.kick:
			due = true
			try()
		case <-later:
			later = nil
			try()
		case <-ticks:
			switch w := r.writes(); {
			case w != last:
				// Still writing: wait for a quiet period.
				last, pending, cyclesAtWrite = w, true, r.cycles()
			case pending:
				pending = false
				// Of two collections ended since the tick that saw the
				// last writes, the second started after them: it found
				// their garbage (the runtime returns the pages in time).
				if r.cycles() < cyclesAtWrite+2 {
					due = true
					try()
				}
			}
			if r.ticked != nil {
				r.ticked()
			}
		}
	}
}

func (r *Reclaimer) reclaim() {
	r.free()
	if r.done != nil {
		r.done <- struct{}{}
	}
}
