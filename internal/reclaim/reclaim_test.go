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
	f.Reclaimer = New(func() int64 { return f.writes.Load() }, time.Hour)
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
