package reclaim

import (
	"sync/atomic"
	"testing"
	"time"
)

// fake is a Reclaimer on counters and ticks the test drives.
type fake struct {
	*Reclaimer
	writes, cycles, frees atomic.Int64
	tick                  chan time.Time
	handled               chan struct{}
}

func newFake(t *testing.T) *fake {
	f := &fake{tick: make(chan time.Time), handled: make(chan struct{})}
	f.Reclaimer = New(func() int64 { return f.writes.Load() })
	f.free = func() { f.frees.Add(1) }
	f.Reclaimer.cycles = func() uint64 { return uint64(f.cycles.Load()) }
	f.ticks = f.tick
	f.ticked = func() { f.handled <- struct{}{} }
	f.done = make(chan struct{}, 16)
	stop, exited := make(chan struct{}), make(chan struct{})
	go func() { defer close(exited); f.Run(stop) }()
	t.Cleanup(func() { close(stop); <-exited })
	return f
}

// period ends one quiet period and returns once Run has handled it.
func (f *fake) period() {
	f.tick <- time.Time{}
	<-f.handled
}

// reclaims is the number of reclaims done so far.
func (f *fake) reclaims() int64 { return f.frees.Load() }

func TestNowReclaimsAtOnce(t *testing.T) {
	f := newFake(t)
	f.Now()
	select {
	case <-f.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Now did not reclaim")
	}
	f.period()
	if n := f.reclaims(); n != 1 {
		t.Errorf("one Now reclaimed %d times", n)
	}
}

func TestReclaimAfterBurst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cycles int64 // collections after the last writes were seen
		want   int64
	}{
		{"no collection since", 0, 1},
		{"one collection, maybe begun before the last writes", 1, 1},
		{"two collections: the second found the garbage", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.period()
			f.period()
			if n := f.reclaims(); n != 0 {
				t.Fatalf("%d reclaims with no writes", n)
			}
			for range 3 { // a burst over three periods
				f.writes.Add(100)
				f.period()
			}
			f.cycles.Add(tc.cycles)
			f.period() // a quiet period
			if n := f.reclaims(); n != tc.want {
				t.Fatalf("%d reclaims after the burst, want %d", n, tc.want)
			}
			f.period()
			f.period()
			if n := f.reclaims(); n != tc.want {
				t.Errorf("%d reclaims after more quiet periods, want %d (once per burst)", n, tc.want)
			}
		})
	}
}

func TestNoReclaimWhileWriting(t *testing.T) {
	f := newFake(t)
	for range 20 {
		f.writes.Add(1)
		f.period()
	}
	if n := f.reclaims(); n != 0 {
		t.Errorf("%d reclaims during steady writes", n)
	}
}

// TestReclaimsSpaced: a reclaim waits 50 times the last one's duration
// (at least 100 ms) after it, however often it is asked for: a flush
// storm or a write every few seconds on a big heap does not keep the
// process collecting.
func TestReclaimsSpaced(t *testing.T) {
	f := newFake(t)
	const cost = 10 * time.Millisecond
	f.free = func() {
		time.Sleep(cost)
		f.frees.Add(1)
	}
	waitDone := func() time.Time {
		t.Helper()
		select {
		case <-f.done:
			return time.Now()
		case <-time.After(5 * time.Second):
			t.Fatal("no reclaim")
		}
		return time.Time{}
	}
	f.Now()
	first := waitDone()
	for range 10 {
		f.Now()
	}
	second := waitDone()
	const spacing = 50 * cost // the documented factor
	if gap := second.Sub(first); gap < spacing-cost {
		t.Errorf("second reclaim %v after the first, want about %v", gap, spacing)
	}
	time.Sleep(spacing)
	f.period()
	if n := f.reclaims(); n != 2 {
		t.Errorf("%d reclaims for one Now and ten folded ones, want 2", n)
	}
}
