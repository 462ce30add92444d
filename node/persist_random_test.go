package node_test

import (
	"math/rand/v2"
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
			// A third client blocks, again and again, on the keys the
			// sequence pushes to and adds to, so that pops and reads
			// served by another client's command are logged too.
			stopBlocker := make(chan struct{})
			blockerDone := make(chan error, 1)
			var served int
			go func() {
				var err error
				served, err = blockLoop(dial(t, addr, 2), rand.New(rand.NewPCG(seed, 1)), stopBlocker)
				blockerDone <- err
			}()
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
			close(stopBlocker)
			if err := <-blockerDone; err != nil {
				t.Fatal(err)
			}
			t.Logf("%d blocking commands served", served)
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

// blockLoop sends blocking pops and group reads with short timeouts on
// the random sequence's keys until stop closes; their replies (errors
// included: a key of another type, a missing group) do not matter, only
// what they take. It returns how many were served.
func blockLoop(c *difftest.Conn, rng *rand.Rand, stop <-chan struct{}) (served int, err error) {
	cmds := [][]string{
		{"BLPOP", "{a}2", "{a}3", "0.02"},
		{"BRPOP", "{b}1", "0.02"},
		{"BLMOVE", "{b}1", "{b}2", "LEFT", "RIGHT", "0.02"},
		{"BLMPOP", "0.02", "2", "{b}2", "{b}3", "RIGHT", "COUNT", "2"},
		{"BRPOPLPUSH", "k1", "k1", "0.02"},
		{"XREADGROUP", "GROUP", "g1", "c9", "COUNT", "3", "BLOCK", "20", "STREAMS", "{a}1", ">"},
		{"XREADGROUP", "GROUP", "g2", "c8", "BLOCK", "20", "STREAMS", "{a}2", "{a}3", ">", ">"},
	}
	for {
		select {
		case <-stop:
			return served, nil
		default:
		}
		v, err := c.DoStrings(cmds[rng.IntN(len(cmds))]...)
		if err != nil {
			return served, err
		}
		if !v.IsError() && v.Kind != difftest.NullArray && v.Kind != difftest.NullBulk {
			served++
		}
	}
}
