package node_test

import (
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/aof"
	"github.com/shardgate/shardgate/node/nodetest"
)

// replayFamilies are the generator's families whose commands change data
// (and the transactions around them).
var replayFamilies = []string{"strings", "counters", "keyspace", "expire", "tx", "bits", "hll", "bitfield", "lists", "streams"}

// TestAOFReplayRandom: seeded random sequences of the commands that change
// data, on two connections with transactions between them, leave a log
// that a restart replays to the same dataset: with a rewrite in the
// middle or not, stopped gracefully or as a crash leaves it. The node's
// clock stops before the dataset is read, and the restarted node's stands
// at the same instant, so expiries read alike. SHARDGATE_DIFF_SEED and
// SHARDGATE_DIFF_N choose the sequence.
func TestAOFReplayRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(difftest.EnvSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = s
	}
	n := 1500
	if v := os.Getenv(difftest.EnvN); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		name           string
		rewrite, crash bool
	}{{"graceful", false, false}, {"rewrite", true, false}, {"crash", false, true}, {"rewrite-crash", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			seed := seed + uint64(i)
			t.Logf("seed %d (%s=%d reproduces it)", seed, difftest.EnvSeed, seed-uint64(i))
			var frozen atomic.Int64 // unix nanoseconds; 0: the real clock
			now := func() time.Time {
				if f := frozen.Load(); f != 0 {
					return time.Unix(0, f)
				}
				return time.Now()
			}
			dir := t.TempDir()
			opts := node.Options{AOF: &node.AOFOptions{Dir: dir, Policy: aof.Always, RewritePercent: -1}, Now: now}
			_, addr, stop := nodetest.Start(t, opts, nil)
			conns := []*difftest.Conn{dial(t, addr, 2), dial(t, addr, 2)}
			admin := dial(t, addr, 2) // never in a transaction
			gen, err := difftest.NewGen(seed, replayFamilies, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for k := range n {
				if tc.rewrite && k == n/2 {
					mustDo(t, admin, "BGREWRITEAOF")
				}
				st, err := gen.Next()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := conns[st.Conn].DoStrings(st.Args...); err != nil {
					t.Fatalf("step %d %v: %v", k, st.Args, err)
				}
			}
			if tc.rewrite {
				waitField(t, admin, "aof_rewrite_in_progress", "0")
			}
			frozen.Store(time.Now().UnixNano())
			want := dataset(t, admin)
			loadDir := dir
			if tc.crash {
				loadDir = t.TempDir()
				copyDir(t, dir, loadDir) // every reply came after its fsync
			}
			stop()
			_, addr2, _ := nodetest.Start(t, node.Options{AOF: &node.AOFOptions{Dir: loadDir, Policy: aof.Always}, Now: now}, nil)
			compareDatasets(t, dataset(t, dial(t, addr2, 2)), want)
		})
	}
}
