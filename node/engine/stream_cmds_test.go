package engine

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"pgregory.net/rapid"
)

// Reply builders for stream replies (RESP2).
func rArr(elems ...string) string {
	return "*" + strconv.Itoa(len(elems)) + "\r\n" + strings.Join(elems, "")
}

// rEntry is one entry of XRANGE: [id, [field, value, ...]].
func rEntry(id string, fv ...string) string {
	bulks := make([]string, len(fv))
	for i, v := range fv {
		bulks[i] = rBulk(v)
	}
	return rArr(rBulk(id), rArr(bulks...))
}

// streamSteps runs steps like runSteps, finding container commands'
// handlers by their full name ("xinfo|stream").
func streamSteps(t *testing.T, e *strEnv, steps []step) {
	t.Helper()
	for _, x := range steps {
		if got := streamRun(e, x.args...); got != x.want {
			t.Errorf("%q: got %q, want %q", x.args, got, x.want)
		}
	}
}

// streamRun is strEnv.run for any command, subcommands included.
func streamRun(e *strEnv, args ...string) string {
	e.t.Helper()
	if len(args) > 1 && strings.EqualFold(args[0], "xinfo") {
		name := "xinfo|" + strings.ToLower(args[1])
		e.w.B = e.w.B[:0]
		c := Ctx{KS: e.ks, W: &e.w, Now: e.now}
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		if len(args) > 2 {
			c.Shard = e.ks.ShardOf(c.Args[2])
		}
		e.h[name](&c)
		return string(e.w.B)
	}
	return e.run(args...)
}

// TestStreamCmdScenarios checks replies against what redis-server 7.0.15
// answers (node/diff_stream_test.go runs these cases and more against a
// live one).
func TestStreamCmdScenarios(t *testing.T) {
	e := newStrEnv(t)
	putList(e, "l")
	wrong := rErr(resp.ErrWrongType)
	badID := rErr(resp.ErrStreamInvalidID)
	streamSteps(t, e, []step{
		st(rBulk("1-1"), "XADD", "s", "1-1", "f", "v"),
		st(rErr(resp.ErrStreamIDTooSmall), "XADD", "s", "1-1", "f", "v"),
		st(rErr(resp.ErrStreamIDZero), "XADD", "n", "0-0", "f", "v"),
		st(rInt(0), "EXISTS", "n"),
		st(rBulk("0-1"), "XADD", "n", "0-*", "f", "v"),
		st(rBulk("2-0"), "XADD", "s", "2", "a", "b", "c", "d"),
		st(rBulk("2-1"), "XADD", "s", "2-*", "a", "b"),
		st(rErr(resp.ErrStreamIDTooSmall), "XADD", "s", "1-*", "a", "b"),
		st(badID, "XADD", "s", "-", "f", "v"),
		st(badID, "XADD", "s", "1-x", "f", "v"),
		st(rErr(fmt.Sprintf(resp.ErrWrongArgs, "xadd")), "XADD", "s", "*", "f", "v", "g"),
		st(rErr(fmt.Sprintf(resp.ErrWrongArgs, "xadd")), "XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "NOMKSTREAM"),
		st(rNull, "XADD", "m", "NOMKSTREAM", "1-1", "f", "v"),
		st(rInt(0), "EXISTS", "m"),
		st(rInt(3), "XLEN", "s"),
		st(rInt(0), "XLEN", "m"),
		st(wrong, "XLEN", "l"),
		st(rArr(rEntry("1-1", "f", "v"), rEntry("2-0", "a", "b", "c", "d"), rEntry("2-1", "a", "b")), "XRANGE", "s", "-", "+"),
		st(rArr(rEntry("2-1", "a", "b"), rEntry("2-0", "a", "b", "c", "d")), "XREVRANGE", "s", "+", "(1-1"),
		st(rArr(rEntry("2-0", "a", "b", "c", "d")), "XRANGE", "s", "(1-1", "+", "COUNT", "1"),
		st(rArr(rEntry("2-0", "a", "b", "c", "d"), rEntry("2-1", "a", "b")), "XRANGE", "s", "2", "2"),
		st("*-1\r\n", "XRANGE", "s", "-", "+", "COUNT", "0"),
		st("*-1\r\n", "XRANGE", "s", "-", "+", "COUNT", "-3"),
		st(rArr(), "XRANGE", "m", "-", "+", "COUNT", "0"),
		st(rArr(), "XRANGE", "s", "+", "-"),
		st(rErr(resp.ErrStreamIntervalStart), "XRANGE", "s", "("+MaxStreamID.String(), "+"),
		st(rErr(resp.ErrStreamIntervalEnd), "XRANGE", "s", "-", "(0-0"),
		st(rErr(resp.ErrSyntax), "XRANGE", "s", "-", "+", "COUNT"),
		st(rErr(resp.ErrNotInteger), "XRANGE", "l", "-", "+", "COUNT", "x"),
		st(wrong, "XRANGE", "l", "-", "+"),
		st(rInt(0), "XDEL", "m", "bad"),
		st(badID, "XDEL", "s", "2-0", "bad"),
		st(rInt(1), "XDEL", "s", "2-0", "2-0", "9-9"),
		st(rInt(2), "XLEN", "s"),
		st(rErr(resp.ErrStreamXtrimNoStrategy), "XTRIM", "s", "LIMIT", "0"),
		st(rErr(resp.ErrStreamLimitNoStrategy), "XTRIM", "s", "LIMIT", "5"),
		st(rErr(resp.ErrStreamLimitNoApprox), "XTRIM", "s", "MAXLEN", "1", "LIMIT", "5"),
		st(rErr(resp.ErrNotInteger), "XTRIM", "l", "MAXLEN", "x"),
		st(rInt(0), "XTRIM", "m", "MAXLEN", "0"),
		st(rInt(0), "XTRIM", "s", "MAXLEN", "~", "1"),
		st(rInt(1), "XTRIM", "s", "MAXLEN", "1"),
		st(rErr(resp.ErrNoSuchKey), "XSETID", "m", "1-1"),
		st(rErr(resp.ErrXsetidBelowTop), "XSETID", "s", "2-0"),
		st(rErr(resp.ErrXsetidBelowMaxDeleted), "XSETID", "s", "3-0", "MAXDELETEDID", "3-1"),
		st(rErr(resp.ErrXsetidEntriesNegative), "XSETID", "s", "3-0", "ENTRIESADDED", "-1"),
		st(rErr(resp.ErrXsetidEntriesBelowSize), "XSETID", "s", "3-0", "ENTRIESADDED", "0"),
		st(rErr(resp.ErrSyntax), "XSETID", "s", "3-0", "ENTRIESADDED"),
		st(rOK, "XSETID", "s", "3-0", "ENTRIESADDED", "10", "MAXDELETEDID", "2-5"),
		st(rBulk("3-1"), "XADD", "s", "3-*", "f", "v"),
		st(rErr(resp.ErrNoSuchKey), "XINFO", "STREAM", "m", "FULL", "x"),
		st(wrong, "XINFO", "STREAM", "l"),
		st(rErr(fmt.Sprintf(resp.ErrSubcommandSyntax, "stream", "XINFO")), "xinfo", "stream", "s", "FULL", "COUNT"),
		st(rErr(fmt.Sprintf(resp.ErrSubcommandSyntax, "STREAM", "XINFO")), "XINFO", "STREAM", "s", "FULL", "x"),
	})
	// XADD 1-1 2-0 2-1 then XDEL 2-0, XTRIM 1-1, XSETID 3-0 with 10 added,
	// XADD 3-*.
	want := rArr(rBulk("length"), rInt(2), rBulk("radix-tree-keys"), rInt(1), rBulk("radix-tree-nodes"), rInt(2),
		rBulk("last-generated-id"), rBulk("3-1"), rBulk("max-deleted-entry-id"), rBulk("2-5"),
		rBulk("entries-added"), rInt(11), rBulk("recorded-first-entry-id"), rBulk("2-1"),
		rBulk("groups"), rInt(0), rBulk("first-entry"), rEntry("2-1", "a", "b"), rBulk("last-entry"), rEntry("3-1", "f", "v"))
	if got := streamRun(e, "XINFO", "STREAM", "s"); got != want {
		t.Errorf("XINFO STREAM: got\n%q\nwant\n%q", got, want)
	}
}

// TestStreamAutoID: "*" takes the command's clock while it is ahead of
// the last id, and the last id's next sequence when it is not.
func TestStreamAutoID(t *testing.T) {
	e := newStrEnv(t)
	now := strconv.FormatInt(e.now, 10)
	streamSteps(t, e, []step{
		st(rBulk(now+"-0"), "XADD", "s", "*", "f", "v"),
		st(rBulk(now+"-1"), "XADD", "s", "*", "f", "v"),
	})
	e.now -= 5000 // the clock went back
	streamSteps(t, e, []step{st(rBulk(now+"-2"), "XADD", "s", "*", "f", "v")})
	e.now += 6000
	later := strconv.FormatInt(e.now, 10)
	streamSteps(t, e, []step{
		st(rBulk(later+"-0"), "XADD", "s", "*", "f", "v"),
		st(rBulk(later+"-1"), "XADD", "s", later+"-*", "f", "v"),
		st(rOK, "XSETID", "s", "18446744073709551615-18446744073709551614"),
		st(rBulk("18446744073709551615-18446744073709551615"), "XADD", "s", "*", "f", "v"),
		st(rErr(resp.ErrStreamExhausted), "XADD", "s", "*", "f", "v"),
		st(rErr(resp.ErrStreamExhausted), "XADD", "s", "1-*", "f", "v"),
		st(rBulk("5-18446744073709551615"), "XADD", "t", "5-18446744073709551615", "f", "v"),
		// The sequences of ms 5 are used up: 7.0.15's odd error for it.
		st(rErr(resp.ErrStreamTooLarge), "XADD", "t", "5-*", "f", "v"),
		st(rBulk("6-0"), "XADD", "t", "6-*", "f", "v"),
	})
}

// TestParseAddTrim pins streamParseAddOrTrimArgsOrReply's reading of the
// options: what each form sets, and the first error in Redis's order.
func TestParseAddTrim(t *testing.T) {
	type want struct {
		strategy int
		approx   bool
		len      int64
		minID    StreamID
		limit    int64
		idpos    int
		id       StreamID
		idGiven  bool
		autoSeq  bool
		noMk     bool
		err      string
	}
	for _, tc := range []struct {
		args string
		xadd bool
		want want
	}{
		{"XADD s * f v", true, want{idpos: 2}},
		{"XADD s 5 f v", true, want{idpos: 2, id: StreamID{5, 0}, idGiven: true}},
		{"XADD s 5-* f v", true, want{idpos: 2, id: StreamID{5, 0}, idGiven: true, autoSeq: true}},
		{"XADD s NOMKSTREAM MAXLEN ~ 10 * f v", true, want{strategy: trimMaxLen, approx: true, len: 10, limit: approxTrimLimit, idpos: 6, noMk: true}},
		{"XADD s MAXLEN = 10 * f v", true, want{strategy: trimMaxLen, len: 10, idpos: 5}},
		{"XADD s maxlen 10 LIMIT 5 * f v", true, want{err: resp.ErrStreamLimitNoApprox}},
		{"XADD s MINID ~ 7-1 LIMIT 0 1-1 f v", true, want{strategy: trimMinID, approx: true, minID: StreamID{7, 1}, idpos: 7, id: StreamID{1, 1}, idGiven: true}},
		{"XADD s LIMIT 5 MINID ~ 7 * f v", true, want{strategy: trimMinID, approx: true, minID: StreamID{7, 0}, limit: 5, idpos: 7}},
		{"XADD s MAXLEN 1 MINID 1 * f v", true, want{err: resp.ErrStreamMaxlenAndMinid}},
		{"XADD s MAXLEN -1 MINID 1 * f v", true, want{err: resp.ErrStreamMaxlenNegative}},
		{"XADD s MAXLEN ~ * f v", true, want{err: resp.ErrNotInteger}},
		{"XADD s MINID - * f v", true, want{err: resp.ErrStreamInvalidID}},
		{"XADD s LIMIT -1 * f v", true, want{err: resp.ErrStreamLimitNegative}},
		{"XADD s LIMIT 1 * f v", true, want{err: resp.ErrStreamLimitNoStrategy}},
		{"XADD s LIMIT 0 * f v", true, want{err: resp.ErrStreamLimitNoApprox}},
		{"XADD s MAXLEN", true, want{err: resp.ErrStreamInvalidID}},
		{"XADD s NOMKSTREAM", true, want{idpos: 3, noMk: true}},
		{"XTRIM s MAXLEN 0", false, want{strategy: trimMaxLen, idpos: 4}},
		{"XTRIM s MINID ~ 0", false, want{strategy: trimMinID, approx: true, limit: approxTrimLimit, idpos: 5}},
		{"XTRIM s NOMKSTREAM MAXLEN 0", false, want{err: resp.ErrSyntax}},
		{"XTRIM s MAXLEN", false, want{err: resp.ErrSyntax}},
		{"XTRIM s LIMIT 0", false, want{err: resp.ErrStreamXtrimNoStrategy}},
		{"XTRIM s MAXLEN ~ 5 LIMIT 9223372036854775807", false, want{strategy: trimMaxLen, approx: true, len: 5, limit: math.MaxInt64, idpos: 7}},
	} {
		t.Run(tc.args, func(t *testing.T) {
			var args [][]byte
			for _, a := range strings.Fields(tc.args) {
				args = append(args, []byte(a))
			}
			a, idpos, msg := parseAddTrim(args, tc.xadd)
			got := want{err: msg}
			if msg == "" {
				got = want{strategy: a.strategy, approx: a.trim.Approx, len: a.trim.Len, minID: a.trim.MinID,
					limit: a.trim.Limit, idpos: idpos, id: a.id, idGiven: a.idGiven, autoSeq: a.autoSeq, noMk: a.noMkStream}
			}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestStreamReadyHook: OnStreamReady hears of every entry XADD adds, and
// of nothing else the basic commands do.
func TestStreamReadyHook(t *testing.T) {
	e := newStrEnv(t)
	var heard []string
	e.ks.OnStreamReady = func(_ uint16, key []byte) { heard = append(heard, string(key)) }
	for _, args := range [][]string{
		{"XADD", "s", "1-1", "f", "v"}, {"XADD", "s", "1-1", "f", "v"}, {"XADD", "n", "NOMKSTREAM", "*", "f", "v"},
		{"XADD", "s", "MAXLEN", "0", "2-1", "f", "v"}, {"XDEL", "s", "2-1"}, {"XTRIM", "s", "MAXLEN", "0"},
		{"XSETID", "s", "5-5"}, {"XADD", "t", "1-1", "f", "v"},
	} {
		e.run(args...)
	}
	if want := []string{"s", "s", "t"}; !slices.Equal(heard, want) {
		t.Errorf("OnStreamReady heard %q, want %q", heard, want)
	}
}

// TestStreamDirty: XADD and XSETID count one change, XDEL and XTRIM one
// per entry removed, refusals none (as server.dirty).
func TestStreamDirty(t *testing.T) {
	e := newStrEnv(t)
	for _, tc := range []struct {
		args  string
		dirty int64
	}{
		{"XADD s 1-1 f v", 1}, {"XADD s 1-2 f v", 1}, {"XADD s 1-3 f v", 1}, {"XADD s 1-1 f v", 0},
		{"XADD s MAXLEN 1 1-4 f v", 1}, {"XADD s 1-5 f v", 1}, {"XADD s 1-6 f v", 1}, {"XDEL s 1-5 1-6 9-9", 2},
		{"XDEL s 9-9", 0}, {"XADD s 1-7 f v", 1}, {"XTRIM s MAXLEN 0", 2}, {"XTRIM s MAXLEN 0", 0},
		{"XSETID s 9-9", 1}, {"XSETID s 1-1 ENTRIESADDED x", 0}, {"XLEN s", 0}, {"XRANGE s - +", 0},
		{"XINFO STREAM s FULL", 0},
	} {
		before := e.ks.Changes()
		streamRun(e, strings.Fields(tc.args)...)
		if d := e.ks.Changes() - before; d != tc.dirty {
			t.Errorf("%s: dirty +%d, want +%d", tc.args, d, tc.dirty)
		}
	}
}

// TestXinfoFullGroups checks XINFO STREAM FULL's groups part on a stream
// built through the group API: counters, lag, the PEL in id order with
// its consumer, the consumers with theirs, both cut at COUNT.
func TestXinfoFullGroups(t *testing.T) {
	e := newStrEnv(t)
	for i := 1; i <= 4; i++ {
		e.run("XADD", "s", strconv.Itoa(i)+"-0", "f", strconv.Itoa(i))
	}
	ent := e.entry("s")
	s := streamOf(ent)
	g := s.NewGroup("g2", StreamID{2, 0}, 2)
	s.NewGroup("g1", StreamID{}, -1)
	alice := g.CreateConsumer([]byte("alice"), 1000)
	bob := g.CreateConsumer([]byte("bob"), 2000)
	g.AddPending(StreamID{2, 0}, bob, 1500)
	g.AddPending(StreamID{1, 0}, alice, 1200)
	e.run("XDEL", "s", "3-0") // a tombstone ahead of g2: its lag is unknown

	g1 := rArr(rBulk("name"), rBulk("g1"), rBulk("last-delivered-id"), rBulk("0-0"), rBulk("entries-read"), rNull,
		rBulk("lag"), rNull, rBulk("pel-count"), rInt(0), rBulk("pending"), rArr(), rBulk("consumers"), rArr())
	pel := func(ids ...string) []string {
		var out []string
		for _, id := range ids {
			if id == "1-0" {
				out = append(out, rArr(rBulk("1-0"), rBulk("alice"), rInt(1200), rInt(1)))
			} else {
				out = append(out, rArr(rBulk("2-0"), rBulk("bob"), rInt(1500), rInt(1)))
			}
		}
		return out
	}
	head := func(entries ...string) string {
		return rBulk("length") + rInt(3) + rBulk("radix-tree-keys") + rInt(1) + rBulk("radix-tree-nodes") + rInt(2) +
			rBulk("last-generated-id") + rBulk("4-0") + rBulk("max-deleted-entry-id") + rBulk("3-0") +
			rBulk("entries-added") + rInt(4) + rBulk("recorded-first-entry-id") + rBulk("1-0") +
			rBulk("entries") + rArr(entries...)
	}
	e1, e2, e4 := rEntry("1-0", "f", "1"), rEntry("2-0", "f", "2"), rEntry("4-0", "f", "4")
	consumers := func() string {
		ap, bp := rArr(rArr(rBulk("1-0"), rInt(1200), rInt(1))), rArr(rArr(rBulk("2-0"), rInt(1500), rInt(1)))
		return rArr(
			rArr(rBulk("name"), rBulk("alice"), rBulk("seen-time"), rInt(1000), rBulk("pel-count"), rInt(1), rBulk("pending"), ap),
			rArr(rBulk("name"), rBulk("bob"), rBulk("seen-time"), rInt(2000), rBulk("pel-count"), rInt(1), rBulk("pending"), bp))
	}
	group2 := func(pending []string) string {
		return rArr(rBulk("name"), rBulk("g2"), rBulk("last-delivered-id"), rBulk("2-0"), rBulk("entries-read"), rInt(2),
			rBulk("lag"), rNull, rBulk("pel-count"), rInt(2), rBulk("pending"), rArr(pending...), rBulk("consumers"),
			consumers())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"XINFO", "STREAM", "s", "FULL"},
			"*18\r\n" + head(e1, e2, e4) + rBulk("groups") + rArr(g1, group2(pel("1-0", "2-0")))},
		{[]string{"XINFO", "STREAM", "s", "FULL", "COUNT", "1"},
			"*18\r\n" + head(e1) + rBulk("groups") + rArr(g1, group2(pel("1-0")))},
		{[]string{"XINFO", "STREAM", "s", "FULL", "COUNT", "0"},
			"*18\r\n" + head(e1, e2, e4) + rBulk("groups") + rArr(g1, group2(pel("1-0", "2-0")))},
	} {
		if got := streamRun(e, tc.args...); got != tc.want {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.args, got, tc.want)
		}
	}
}

// raxModelNodes counts a rax's nodes from their definition rather than by
// recursion: the head; each whole key (a leaf); each prefix where keys
// part (a node with a byte per child); each child of such a prefix, which
// starts a node of its own (a chain of bytes, or one of the others).
func raxModelNodes(keys [][16]byte) int64 {
	if len(keys) == 0 {
		return 1
	}
	next := map[string]map[byte]bool{} // prefix -> the bytes after it
	for _, k := range keys {
		for d := range 16 {
			p := string(k[:d])
			if next[p] == nil {
				next[p] = map[byte]bool{}
			}
			next[p][k[d]] = true
		}
	}
	nodes := map[string]bool{"": true}
	for _, k := range keys {
		nodes[string(k[:])] = true
		for d := range 16 {
			if p := string(k[:d]); len(next[p]) > 1 {
				nodes[p] = true
				nodes[string(k[:d+1])] = true
			}
		}
	}
	return int64(len(nodes))
}

// TestRaxNodesModel: raxTrieNodes agrees with the model on key sets that
// share prefixes of every length, and on the counts redis-server gives
// for simple cases.
func TestRaxNodesModel(t *testing.T) {
	key := func(ms, seq uint64) [16]byte {
		var k [16]byte
		for i := range 8 {
			k[i] = byte(ms >> (56 - 8*i))
			k[8+i] = byte(seq >> (56 - 8*i))
		}
		return k
	}
	// redis-server's counts: one key is a chain and a leaf; 1-0 and 2-0
	// part at byte 7 (a chain, a branch, then a chain and a leaf each);
	// 0-1 and 2^56-1 at byte 0 (the head branches).
	for _, tc := range []struct {
		keys [][16]byte
		want int64
	}{
		{nil, 1},
		{[][16]byte{key(1, 1)}, 2},
		{[][16]byte{key(1, 0), key(2, 0)}, 6},
		{[][16]byte{key(0, 1), key(1<<56, 1)}, 5},
	} {
		if got := raxTrieNodes2(tc.keys); got != tc.want {
			t.Errorf("%d keys: %d nodes, want %d", len(tc.keys), got, tc.want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "n")
		set := map[[16]byte]bool{}
		for range n {
			ms := rapid.OneOf(rapid.Uint64Range(0, 300), rapid.Uint64(), rapid.SampledFrom([]uint64{1 << 8, 1 << 16, 1<<32 + 1, 1 << 63})).Draw(t, "ms")
			seq := rapid.OneOf(rapid.Uint64Range(0, 3), rapid.Uint64()).Draw(t, "seq")
			set[key(ms, seq)] = true
		}
		keys := make([][16]byte, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [16]byte) int { return strings.Compare(string(a[:]), string(b[:])) })
		if got, want := raxTrieNodes2(keys), raxModelNodes(keys); got != want {
			t.Fatalf("%d keys: %d nodes, model %d", len(keys), got, want)
		}
	})
}

// raxTrieNodes2 is raxTrieNodes with the empty set.
func raxTrieNodes2(keys [][16]byte) int64 {
	if len(keys) == 0 {
		return 1
	}
	return raxTrieNodes(keys, 0)
}
