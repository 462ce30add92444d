package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// TestSegmentedBitmapsThroughProxy tracks user ids far past 2^32 in DAU
// bitmaps through the proxy and checks exact counts, positions and BITOP.
func TestSegmentedBitmapsThroughProxy(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"dau:*"}})
	c := dial(t, cl.Addr, 2)
	ids := []uint64{0, 7, 4294967295, 4294967296, 5_000_000_000, 5_000_000_001, 1 << 40, 1<<40 + 123, 1<<63 - 1}
	for _, id := range ids {
		if v := do(t, c, "SETBIT", "dau:mon", fmt.Sprint(id), "1"); v.Kind != ':' || v.Int != 0 {
			t.Fatalf("SETBIT dau:mon %d: %v", id, v)
		}
	}
	for _, id := range ids[:6] {
		do(t, c, "SETBIT", "dau:tue", fmt.Sprint(id), "1")
	}
	if v := do(t, c, "SETBIT", "dau:mon", "5000000000", "1"); v.Int != 1 {
		t.Errorf("second SETBIT returns the old bit: %v", v)
	}
	if v := do(t, c, "BITCOUNT", "dau:mon"); v.Int != int64(len(ids)) {
		t.Errorf("BITCOUNT dau:mon = %v, want %d", v, len(ids))
	}
	for _, id := range []uint64{5_000_000_000, 1 << 40, 1<<63 - 1} {
		if v := do(t, c, "GETBIT", "dau:mon", fmt.Sprint(id)); v.Int != 1 {
			t.Errorf("GETBIT %d = %v", id, v)
		}
	}
	if v := do(t, c, "GETBIT", "dau:mon", "5000000002"); v.Int != 0 {
		t.Errorf("GETBIT unset = %v", v)
	}
	if v := do(t, c, "BITPOS", "dau:mon", "1", "1"); v.Int != 4294967295 {
		t.Errorf("BITPOS dau:mon 1 from byte 1 = %v", v)
	}
	if v := do(t, c, "BITOP", "AND", "dau:both", "dau:mon", "dau:tue"); v.IsError() {
		t.Fatalf("BITOP AND: %v", v)
	}
	if v := do(t, c, "BITCOUNT", "dau:both"); v.Int != 6 {
		t.Errorf("BITCOUNT of AND = %v, want 6", v)
	}
	do(t, c, "BITOP", "OR", "dau:either", "dau:mon", "dau:tue")
	if v := do(t, c, "BITCOUNT", "dau:either"); v.Int != int64(len(ids)) {
		t.Errorf("BITCOUNT of OR = %v", v)
	}
	// The explicit commands work on any key; plain commands on other keys
	// keep Redis's 2^32 limit.
	do(t, c, "SEGBIT.SETBIT", "big", "5000000000", "1")
	if v := do(t, c, "SEGBIT.BITCOUNT", "big"); v.Int != 1 {
		t.Errorf("SEGBIT.BITCOUNT = %v", v)
	}
	if v := do(t, c, "SETBIT", "plain", "5000000000", "1"); v.Text() != "ERR bit offset is not an integer or out of range" {
		t.Errorf("plain SETBIT past 2^32: %v", v)
	}
	// The segments are spread over the nodes.
	spread := 0
	for _, addr := range cl.NodeAddrs {
		if do(t, dial(t, addr, 2), "DBSIZE").Int > 0 {
			spread++
		}
	}
	if spread < 2 {
		t.Errorf("segments on %d node(s), want them spread", spread)
	}
	if v := do(t, c, "DEL", "dau:mon", "dau:tue", "dau:both", "dau:either"); v.Int != 4 {
		t.Errorf("DEL = %v", v)
	}
	do(t, c, "SEGBIT.DEL", "big")
	// Only upper index levels stay (see segbit's "Consistency").
	for _, k := range do(t, c, "KEYS", "*").Elems {
		if !strings.HasPrefix(string(k.Str), "{sgi:") || strings.Contains(string(k.Str), "}2:") {
			t.Errorf("after DEL %q is left", k.Str)
		}
	}
}

// TestSegmentedDelRemovesOrdinaryValue: DEL of a name matching
// --segment-keys also removes an ordinary value stored under that name
// (GET and SET see the name as an ordinary key), counting the name once.
func TestSegmentedDelRemovesOrdinaryValue(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"sb*"}})
	c := dial(t, cl.Addr, 2)
	do(t, c, "SET", "sbx", "v")
	if v := do(t, c, "DEL", "sbx"); v.Int != 1 {
		t.Errorf("DEL of an ordinary value under a segmented name = %v, want 1", v)
	}
	if v := do(t, c, "GET", "sbx"); !isNull(v) {
		t.Errorf("GET after DEL = %v, want nil", v)
	}
	// A name holding both a segmented bitmap and an ordinary value is one
	// key deleted; a name holding nothing counts 0.
	do(t, c, "SET", "sby", "v")
	do(t, c, "SETBIT", "sby", "5000000000", "1")
	if v := do(t, c, "DEL", "sby", "sby", "sbz", "other"); v.Int != 1 {
		t.Errorf("DEL sby sby sbz other = %v, want 1", v)
	}
	if v := do(t, c, "EXISTS", "sby"); v.Int != 0 {
		t.Errorf("EXISTS sby after DEL = %v", v)
	}
	if v := do(t, c, "BITCOUNT", "sby"); v.Int != 0 {
		t.Errorf("BITCOUNT sby after DEL = %v", v)
	}
	// SEGBIT.DEL is about the segmented bitmap only.
	do(t, c, "SET", "plainname", "v")
	if v := do(t, c, "SEGBIT.DEL", "plainname"); v.Int != 0 {
		t.Errorf("SEGBIT.DEL of an ordinary key = %v, want 0", v)
	}
	if v := do(t, c, "GET", "plainname"); v.Text() != "v" {
		t.Errorf("GET after SEGBIT.DEL = %v", v)
	}
}

// TestSegmentedDelCrossSlot: under --cross-slot strict a DEL naming a
// segmented key still refuses ordinary keys in different slots, as a
// Redis Cluster node would; the segmented keys themselves are exempt.
// UNLINK deletes segmented bitmaps as DEL does.
func TestSegmentedDelCrossSlot(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"dau:*"}})
	c := dial(t, cl.Addr, 2)
	do(t, c, "SET", "a", "1")
	do(t, c, "SET", "b", "1")
	do(t, c, "SETBIT", "dau:z", "5000000000", "1")
	for _, args := range [][]string{{"DEL", "dau:z", "a", "b"}, {"UNLINK", "a", "dau:z", "b"}} {
		if v := do(t, c, args...); v.Text() != "CROSSSLOT Keys in request don't hash to the same slot" {
			t.Errorf("%q = %v, want CROSSSLOT", args, v)
		}
	}
	if v := do(t, c, "BITCOUNT", "dau:z"); v.Int != 1 {
		t.Errorf("BITCOUNT after the refused DELs = %v, want 1", v)
	}
	if v := do(t, c, "DEL", "dau:z", "a", "dau:y"); v.Int != 2 {
		t.Errorf("DEL dau:z a dau:y = %v, want 2", v)
	}
	do(t, c, "SETBIT", "dau:z", "5000000000", "1")
	if v := do(t, c, "UNLINK", "dau:z"); v.Int != 1 {
		t.Errorf("UNLINK dau:z = %v, want 1", v)
	}
	if v := do(t, c, "BITCOUNT", "dau:z"); v.Int != 0 {
		t.Errorf("BITCOUNT after UNLINK = %v, want 0", v)
	}
}

// TestSegmentBitsMismatch: a proxy whose --segment-bits differs from the
// size the cluster's segmented bitmaps were written with refuses them
// rather than reading other segment keys for the same offsets.
func TestSegmentBitsMismatch(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"dau:*"}})
	c := dial(t, cl.Addr, 2)
	do(t, c, "SETBIT", "dau:k", "5000000000", "1")
	topo, err := proxy.NewStaticTopology(cl.NodeAddrs)
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, SegmentKeys: []string{"dau:*"}, SegmentBits: 4096})
	c2 := dial(t, other, 2)
	want := "ERR this cluster's segmented bitmaps use --segment-bits 8388608 but this proxy has 4096: every proxy must use the same"
	for _, args := range [][]string{{"GETBIT", "dau:k", "5000000000"}, {"SETBIT", "dau:k", "5000000000", "1"}, {"SEGBIT.BITCOUNT", "x"}} {
		if v := do(t, c2, args...); v.Text() != want {
			t.Errorf("%q through the other proxy = %v, want %q", args, v, want)
		}
	}
	if v := do(t, c2, "GET", "plain"); !isNull(v) {
		t.Errorf("a plain command through the other proxy = %v", v)
	}
	if v := do(t, c, "BITCOUNT", "dau:k"); v.Int != 1 {
		t.Errorf("BITCOUNT = %v, want 1", v)
	}
	// FLUSHALL drops the recorded size with the data: the proxy that ran
	// it records its own again with its next segmented command, at once
	// (not after the recheck interval), so the other one stays refused.
	do(t, c, "FLUSHALL")
	if v := do(t, c, "SETBIT", "dau:k", "7", "1"); v.Int != 0 {
		t.Errorf("SETBIT after FLUSHALL = %v, want 0", v)
	}
	if v := do(t, c2, "SETBIT", "dau:k", "100000", "1"); v.Text() != want {
		t.Errorf("SETBIT through the other proxy after FLUSHALL = %v, want %q", v, want)
	}
}

// TestSegmentedBitsPipelined: segmented SETBIT and GETBIT sent as one
// pipeline, mixed with ordinary commands, repeats, bad arguments and a
// segment whose index cannot be written, get the replies sequential
// commands would: each SETBIT the bit's previous value in pipeline order,
// GETBIT what the SETBITs before it left, errors in place; and every
// segment they wrote is in the index (BITCOUNT, which reads only indexed
// segments, counts every bit).
func TestSegmentedBitsPipelined(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"dau:*"}})
	c := dial(t, cl.Addr, 2)
	type step struct{ args []string }
	var steps []step
	bits := map[uint64]bool{}
	var want []string
	add := func(args []string, reply string) {
		steps = append(steps, step{args: args})
		want = append(want, reply)
	}
	ids := []uint64{3, 1 << 23, 1<<23 + 1, 5_000_000_000, 1 << 40, 3, 1<<63 - 1, 5_000_000_000, 1 << 23}
	for i, id := range ids {
		old := "0"
		if bits[id] {
			old = "1"
		}
		bits[id] = true
		add([]string{"SETBIT", "dau:p", fmt.Sprint(id), "1"}, ":"+old)
		add([]string{"GETBIT", "dau:p", fmt.Sprint(id ^ 1)}, ":"+map[bool]string{true: "1", false: "0"}[bits[id^1]])
		if i == 2 {
			add([]string{"SET", "plain", "v"}, "+OK")
			add([]string{"SETBIT", "dau:p", "-1", "1"}, "-ERR bit offset is not an integer or out of range")
			add([]string{"SETBIT", "dau:p", "7", "2"}, "-ERR bit is not an integer or out of range")
			add([]string{"GETBIT", "dau:p"}, "-ERR wrong number of arguments for 'getbit' command")
			add([]string{"GET", "plain"}, "$v")
			add([]string{"SEGBIT.SETBIT", "other", "9", "1"}, ":0")
		}
	}
	for _, s := range steps {
		args := make([][]byte, len(s.args))
		for i, a := range s.args {
			args[i] = []byte(a)
		}
		if err := c.Send(args...); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range steps {
		v, err := c.Receive()
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		switch {
		case v.IsError():
			got = "-" + v.Text()
		case v.Kind == ':':
			got = fmt.Sprint(":", v.Int)
		case v.Kind == '+':
			got = "+" + v.Text()
		default:
			got = "$" + string(v.Str)
		}
		if got != want[i] {
			t.Errorf("reply %d to %v: %q, want %q", i, s.args, got, want[i])
		}
	}
	if v := do(t, c, "BITCOUNT", "dau:p"); v.Int != int64(len(bits)) {
		t.Errorf("BITCOUNT dau:p = %v, want %d: a segment is missing from the index", v, len(bits))
	}
	if v := do(t, c, "SEGBIT.BITCOUNT", "other"); v.Int != 1 {
		t.Errorf("SEGBIT.BITCOUNT other = %v, want 1", v)
	}

	// An index key that holds a list: the SETBIT sets its segment's bit,
	// and fails with the index key's error, as a SETBIT run alone does.
	do(t, c, "SETBIT", "dau:q", "1", "1")
	idx := do(t, c, "KEYS", "{sgi:*dau:q").Elems
	if len(idx) == 0 {
		t.Fatal("no index keys for dau:q")
	}
	for _, k := range idx {
		do(t, c, "DEL", string(k.Str))
		do(t, c, "RPUSH", string(k.Str), "x")
	}
	if err := c.Send([]byte("SETBIT"), []byte("dau:q"), []byte("2"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Send([]byte("GETBIT"), []byte("dau:q"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	v, err := c.Receive()
	if err != nil {
		t.Fatal(err)
	}
	if !v.IsError() || !strings.HasPrefix(v.Text(), "WRONGTYPE ") || !strings.Contains(v.Text(), "(segmented bitmap key \"{sgi:") {
		t.Errorf("SETBIT with a broken index: %v", v)
	}
	if v, err := c.Receive(); err != nil || v.Int != 1 {
		t.Errorf("GETBIT after it: %v %v", v, err)
	}
}

// TestSegmentedBitsPipelinedDistinctBitmaps: two bitmaps whose name and
// segment number read alike run together ("dau:k1" segment 23, "dau:k12"
// segment 3) in one pipeline each get their own segment indexed.
func TestSegmentedBitsPipelinedDistinctBitmaps(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"dau:*"}})
	c := dial(t, cl.Addr, 2)
	for _, args := range [][]string{
		{"SETBIT", "dau:k1", fmt.Sprint(uint64(23) << 23), "1"},
		{"SETBIT", "dau:k12", fmt.Sprint(uint64(3) << 23), "1"},
	} {
		if err := c.Send([]byte(args[0]), []byte(args[1]), []byte(args[2]), []byte(args[3])); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if v, err := c.Receive(); err != nil || v.Int != 0 {
			t.Fatalf("SETBIT: %v %v", v, err)
		}
	}
	for _, k := range []string{"dau:k1", "dau:k12"} {
		if v := do(t, c, "BITCOUNT", k); v.Int != 1 {
			t.Errorf("BITCOUNT %s = %v, want 1: its segment is missing from the index", k, v)
		}
	}
}

// TestSegmentedSetbitIndexNodeDown: a SETBIT whose segment is written but
// whose index update fails (the index's node went away in between) answers
// an error, yet its bit is set; once the node is back, BITCOUNT, BITPOS and
// DEL see the segment (the proxy indexes it before they read the index),
// rather than miss it and leave it behind to come back with the next write.
func TestSegmentedSetbitIndexNodeDown(t *testing.T) {
	var relays []string
	var rs []*proxytest.Relay
	for range 3 {
		_, addr, _ := nodetest.Start(t, node.Options{}, nil)
		r := proxytest.NewRelay(t, addr)
		relays, rs = append(relays, r.Addr), append(rs, r)
	}
	topo, err := proxy.NewStaticTopology(relays)
	if err != nil {
		t.Fatal(err)
	}
	_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, SegmentKeys: []string{"dau:*"}, SegmentBits: 1 << 12})
	owner := func(key string) int { return int(slots.SlotString(key)) * 3 / slots.Count } // the static ranges, near enough away from their edges
	// A bitmap whose index is on another node than segment 1.
	var key string
	for i := 0; key == ""; i++ {
		k := fmt.Sprint("dau:r", i)
		idx, seg := fmt.Sprintf("{sgi:%d}0:0:%s", slots.SlotString(k), k), "{sg:1}"+k
		if s := slots.SlotString(idx); owner(idx) != owner(seg) && s%5461 > 10 && s%5461 < 5450 && slots.SlotString(seg)%5461 > 10 && slots.SlotString(seg)%5461 < 5450 {
			key = k
		}
	}
	idxNode := owner(fmt.Sprintf("{sgi:%d}0:0:%s", slots.SlotString(key), key))
	c := dial(t, addr, 2)
	do(t, c, "SETBIT", key, "1", "1") // segment 0 indexed
	rs[idxNode].Cut()
	v := do(t, c, "SETBIT", key, "4096", "1")
	if !v.IsError() {
		t.Fatalf("SETBIT with the index's node down: %v, want an error", v)
	}
	t.Logf("SETBIT with the index's node down: %v", v)
	if err := rs[idxNode].Heal(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the index's node to be served again", promptly, func() bool { return !do(t, c, "BITCOUNT", key).IsError() })
	if v := do(t, c, "GETBIT", key, "4096"); v.Int != 1 {
		t.Fatalf("GETBIT of the bit the failed SETBIT set: %v", v)
	}
	if v := do(t, c, "BITCOUNT", key); v.Int != 2 {
		t.Errorf("BITCOUNT after the node returned: %v, want 2 (the failed SETBIT's bit is set)", v)
	}
	if v := do(t, c, "BITPOS", key, "1", "1"); v.Int != 4096 {
		t.Errorf("BITPOS %s 1 1 (from byte 1): %v, want 4096", key, v)
	}
	if v := do(t, c, "DEL", key); v.Int != 1 {
		t.Errorf("DEL: %v, want 1", v)
	}
	if v := do(t, c, "GETBIT", key, "4096"); v.Int != 0 {
		t.Errorf("GETBIT after DEL: %v, want 0: DEL left the unindexed segment behind", v)
	}
}

// TestSegmentedOptionWordsAsCStrings: BITCOUNT's and BITPOS's BIT and
// BITOP's operation are read up to the first NUL, as Redis's strcasecmp
// reads them, on segmented keys as on plain ones.
func TestSegmentedOptionWordsAsCStrings(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{SegmentKeys: []string{"dau:*"}})
	c := dial(t, cl.Addr, 2)
	do(t, c, "SETBIT", "dau:a", "3", "1")
	do(t, c, "SETBIT", "dau:a", "20", "1")
	do(t, c, "SETBIT", "dau:b", "5", "1")
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{[]string{"BITCOUNT", "dau:a", "0", "5", "BIT\x00"}, 1},
		{[]string{"BITCOUNT", "dau:a", "0", "5", "bit\x00z"}, 1},
		{[]string{"BITPOS", "dau:a", "1", "4", "30", "BIT\x00"}, 20},
		{[]string{"BITOP", "AND\x00", "dau:c", "dau:a", "dau:b"}, 3},
		{[]string{"BITOP", "or\x00x", "dau:d", "dau:a", "dau:b"}, 3},
		{[]string{"BITCOUNT", "dau:d"}, 3},
	} {
		if v := do(t, c, tc.args...); v.Kind != ':' || v.Int != tc.want {
			t.Errorf("%q: %v, want %d", tc.args, v, tc.want)
		}
	}
}
