//go:build !race

package node_test

import (
	"flag"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

var stallRanges = flag.Bool("stall.ranges", false, "TestBitsNoStall: also loop 8 MB GETRANGEs on the bitmap")

// TestBitsNoStall runs long commands on a 512 MB bitmap in a loop on two
// connections (BITCOUNT over the whole string, and GETRANGE copying 8 MB
// of it, milliseconds each) while a third connection
// times GET on another key: its p99 must stay under 5 ms, because a
// command locks only its own slot's shard. Not built with -race, whose
// slowdown would measure the detector, not the locking.
func TestBitsNoStall(t *testing.T) {
	// rangeBytes is what each GETRANGE copies: enough to hold the bitmap's
	// shard for milliseconds, small enough that the reply buffers' garbage
	// (the writer drops buffers over 1 MB after each reply) does not make
	// GC assists the thing measured on a 2-core machine.
	const rangeBytes = 8 << 20
	if testing.Short() {
		t.Skip("timing test")
	}
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	dial, must := stallClient(t, addr)

	setup := dial()
	must(setup, "SETBIT", "big", "4294967295", "1")
	// dense pages over the first 64 MB, so counts and copies do real work
	must(setup, "SETRANGE", "big", "0", string(bytesOf(0x5a, 1<<20)))
	for i := int64(1); i < 64; i++ {
		must(setup, "BITOP", "OR", "big", "big") // keeps the value; exercises the page walk
		must(setup, "SETRANGE", "big", strconv.FormatInt(i<<20, 10), string(bytesOf(byte(i), 1<<20)))
	}
	must(setup, "SET", "other", "v")

	var stop atomic.Bool
	var wg sync.WaitGroup
	var bitcounts, ranges atomic.Int64
	load := func(args []string, n *atomic.Int64) {
		defer wg.Done()
		c := dial()
		for !stop.Load() {
			if _, err := c.DoStrings(args...); err != nil {
				t.Error(err)
				return
			}
			n.Add(1)
		}
	}
	wg.Add(1)
	go load([]string{"BITCOUNT", "big", "1", "-2"}, &bitcounts)
	if *stallRanges {
		wg.Add(1)
		go load([]string{"GETRANGE", "big", "0", strconv.Itoa(rangeBytes - 1)}, &ranges)
	}

	getter := dial()
	time.Sleep(50 * time.Millisecond)
	p99s := getP99UnderLoad(t, "BITCOUNT/GETRANGE run on a 512 MB bitmap", func() { must(getter, "GET", "other") })
	stop.Store(true)
	wg.Wait()
	t.Logf("%d BITCOUNTs and %d %d MB GETRANGEs ran", bitcounts.Load(), ranges.Load(), rangeBytes>>20)
	if bitcounts.Load() == 0 || (*stallRanges && ranges.Load() == 0) {
		t.Fatal("the load did not run")
	}
	if slices.Min(p99s) >= stallLimit {
		t.Fatalf("GET p99 %v in every window while bitmap commands ran, want < %v", p99s, stallLimit)
	}
}
