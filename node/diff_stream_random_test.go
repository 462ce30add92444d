package node_test

import (
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// streamFamilies is what TestDiffStreamsRandom runs: the generator's
// streams family (difftest/random_stream.go), whole. A command found to
// differ can be excluded here meanwhile ("-XCLAIM", or "-XGROUP|SETID" for
// a subcommand); SHARDGATE_DIFF_FAMILIES replaces the list.
var streamFamilies = []string{"streams"}

// streamRandomN is the length of the RESP2 run (the RESP3 run is half as
// long): a few seconds.
const streamRandomN = 4000

// TestDiffStreamsRandom sends a seeded random sequence of stream and
// consumer-group commands (XADD with auto, explicit, partial and invalid
// ids and trims; XREADGROUP without BLOCK by several consumers, new and
// pending entries, NOACK; XACK, XCLAIM with every option, XAUTOCLAIM,
// XPENDING, XGROUP, XINFO, XDEL, XTRIM, XSETID, ranges, XREAD, other types
// on the same keys) to redis-server and to the node and stops at the first
// different reply. Replies are compared exactly except idle, seen and
// delivery times (XPENDING, XINFO CONSUMERS, XINFO STREAM FULL), which may
// differ by difftest.StreamTimeTolerance; the generator keeps every
// outcome independent of the clock (see random_stream.go). Seed, count and
// families come from -diff.seed and SHARDGATE_DIFF_*; a failure prints the
// seed, the step, the commands before it and a short reproduction.
func TestDiffStreamsRandom(t *testing.T) {
	cfg, err := difftest.RandomConfigFromEnv(difftest.RandomConfig{Seed: *diffSeed, N: streamRandomN, Families: streamFamilies})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Replay != "" {
		difftest.RunRandom(t, difftest.Start(t), cfg)
		return
	}
	for _, proto := range []int{2, 3} {
		t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) {
			one := cfg
			one.Proto = proto
			if proto == 3 {
				one.N = max(1, cfg.N/2)
			}
			difftest.RunRandom(t, difftest.Start(t), one)
		})
	}
}
