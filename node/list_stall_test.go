//go:build !race

package node_test

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestListNoStall runs whole-list commands on a list of 1,000,000
// elements in a loop (LREM and LINSERT scanning it all without a match,
// milliseconds each; LRANGE of 10,000 elements; LTRIM cutting one element
// and LPUSH putting it back) while another connection times GET on a key
// of another slot: its p99 must stay under 5 ms (in one of up to three
// one-second windows), because list commands lock only their own slot's
// shard. One loader only: on a 2-core machine
// more would measure CPU contention, not locking. Not built with -race.
func TestListNoStall(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	dial, must := stallClient(t, addr)

	setup := dial()
	const n, batch = 1_000_000, 10_000
	for i := 0; i < n; i += batch {
		args := []string{"RPUSH", "big"}
		for j := i; j < i+batch; j++ {
			args = append(args, "e"+strconv.Itoa(j))
		}
		must(setup, args...)
	}
	if v := must(setup, "LLEN", "big"); v.Int != n {
		t.Fatalf("LLEN %d", v.Int)
	}
	must(setup, "SET", "other", "v")
	t0 := time.Now()
	must(setup, "LREM", "big", "0", "nomatch")
	t.Logf("one LREM over %d elements: %v", n, time.Since(t0))

	var stop atomic.Bool
	var wg sync.WaitGroup
	var runs atomic.Int64
	load := func(cmds ...[]string) {
		defer wg.Done()
		c := dial()
		for !stop.Load() {
			for _, args := range cmds {
				if v, err := c.DoStrings(args...); err != nil || v.IsError() {
					t.Errorf("%q: %v %v", args, v, err)
					return
				}
			}
			runs.Add(1)
		}
	}
	wg.Add(1)
	go load([]string{"LREM", "big", "0", "nomatch"}, []string{"LINSERT", "big", "BEFORE", "nomatch", "x"},
		[]string{"LRANGE", "big", "0", "9999"}, []string{"LTRIM", "big", "1", "-1"}, []string{"LPUSH", "big", "e0"})

	getter := dial()
	time.Sleep(50 * time.Millisecond)
	p99s := getP99UnderLoad(t, "list commands run on 1,000,000 elements", func() { must(getter, "GET", "other") })
	stop.Store(true)
	wg.Wait()
	if runs.Load() == 0 {
		t.Fatal("the load did not run")
	}
	t.Logf("%d rounds of list commands ran", runs.Load())
	if slices.Min(p99s) >= stallLimit {
		t.Fatalf("GET p99 %v in every window while list commands ran, want < 5ms", p99s)
	}
	if v := must(setup, "LLEN", "big"); v.Int != n {
		t.Fatalf("LLEN %d after the load, want %d", v.Int, n)
	}
}
