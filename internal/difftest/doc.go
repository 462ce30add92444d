// Package difftest compares a shardgate node with a real Redis 7.0
// redis-server, reply by reply.
//
// The oracle is one redis-server per test binary, started in cluster mode
// on free ports and given all 16384 slots, because a shardgate node answers
// like one cluster node (CROSSSLOT, SELECT refused, ...). Each Start gives
// a test a fresh in-process node and the oracle flushed:
//
//	func TestMain(m *testing.M) { difftest.Main(m) } // stops the oracle
//
//	func TestDiffSet(t *testing.T) {
//		p := difftest.Start(t)
//		p.Do(t, "SET", "k", "v")        // same reply from both, or t.Errorf
//		p.DoProto(t, 3, "GET", "k")     // on RESP3 connections
//		a, b := p.Both(t, "TIME")       // replies for a custom comparison
//		c := p.NewConn(t)               // another client on each side
//		c.Do(t, "WATCH", "k")
//		p.DoUnordered(t, "KEYS", "*")   // order-insensitive
//	}
//
// Replies are compared exactly: RESP type (null bulk and null array are
// different), value, and error text to the letter.
//
// Without redis-server on PATH the tests skip, except when CI=true, where
// they fail so that CI can never pass by skipping.
//
// RunRandom drives a seeded random command sequence through a Pair and
// stops at the first divergence with the seed and the commands leading to
// it (see random_gen.go for the command families).
package difftest
