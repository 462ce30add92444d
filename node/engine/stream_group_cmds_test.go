package engine

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// lagStream builds a stream with entries 1-0..n-0, then deletes dels.
func lagStream(n int, dels ...uint64) *Stream {
	s := &Stream{}
	for i := 1; i <= n; i++ {
		s.Append(StreamID{uint64(i), 0}, [][]byte{[]byte("a"), []byte("1")})
	}
	for _, d := range dels {
		s.Delete(StreamID{d, 0})
	}
	return s
}

// TestGroupLag pins XINFO GROUPS' entries-read and lag as redis-server
// 7.0.15 answers them (each case was run against it).
func TestGroupLag(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           *Stream
		last        StreamID
		entriesRead int64
		reads       []uint64 // ids delivered by XREADGROUP, in order
		wantRead    int64
		wantLag     int64
		lagNull     bool
	}{
		// XADD 1; XDEL 1; XGROUP CREATE s g 0: the empty stream clause.
		{name: "empty after xdel", s: lagStream(1, 1), entriesRead: -1, wantRead: -1, wantLag: 0},
		// XADD 1 2 3; XDEL 1; XGROUP CREATE s g 0-5: the tombstone is
		// before the first entry (7.0 estimates; later versions say null).
		{name: "tombstone before first", s: lagStream(3, 1), last: StreamID{0, 5}, entriesRead: -1, wantRead: -1, wantLag: 2},
		// XADD 1..5; XDEL 4; XGROUP CREATE s g 0 ENTRIESREAD 0.
		{name: "tombstone ahead", s: lagStream(5, 4), entriesRead: 0, wantRead: 0, lagNull: true},
		// ... then XREADGROUP COUNT 1: the counter becomes unknown.
		{name: "read before tombstone", s: lagStream(5, 4), entriesRead: 0, reads: []uint64{1}, wantRead: -1, lagNull: true},
		// ... then the rest: the last entry's counter is exact.
		{name: "read to the end", s: lagStream(5, 4), entriesRead: 0, reads: []uint64{1, 2, 3, 5}, wantRead: 5, wantLag: 0},
		// No deletion: counting up from ENTRIESREAD.
		{name: "counting", s: lagStream(5), entriesRead: 0, reads: []uint64{1, 2}, wantRead: 2, wantLag: 3},
		{name: "never added", s: &Stream{}, entriesRead: -1, wantRead: -1, wantLag: 0},
		{name: "from the first", s: lagStream(5), entriesRead: -1, reads: []uint64{1}, wantRead: 1, wantLag: 4},
		{name: "middle unknown", s: lagStream(5), last: StreamID{1, 0}, entriesRead: -1, reads: []uint64{2}, wantRead: -1, lagNull: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.s.NewGroup("g", tc.last, tc.entriesRead)
			for _, ms := range tc.reads {
				tc.s.GroupDelivered(g, StreamID{ms, 0})
			}
			if g.EntriesRead != tc.wantRead {
				t.Errorf("entries-read %d, want %d", g.EntriesRead, tc.wantRead)
			}
			lag, ok := tc.s.GroupLag(g)
			if ok == tc.lagNull || (ok && lag != tc.wantLag) {
				t.Errorf("lag %d (valid %v), want %d (null %v)", lag, ok, tc.wantLag, tc.lagNull)
			}
		})
	}
}

// groupEnv runs stream commands with a clock the test moves.
type groupEnv struct {
	t   *testing.T
	ks  *Keyspace
	h   map[string]Handler
	now int64
	w   resp.Writer
}

func newGroupEnv(t *testing.T) *groupEnv {
	return &groupEnv{t: t, ks: New(), h: Handlers(), now: strEnvNow, w: resp.Writer{Proto: 2}}
}

// run executes one command (a container's subcommand when args[0|1]
// names one) and returns its reply in a compact form: numbers, strings,
// "nil", "[...]" for arrays, "(error text)" for errors.
func (e *groupEnv) run(args ...string) string {
	e.t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	name := strings.ToLower(args[0])
	keyAt := 1
	if len(args) > 1 {
		if _, ok := e.h[name+"|"+strings.ToLower(args[1])]; ok {
			name += "|" + strings.ToLower(args[1])
			keyAt = 2
		}
	}
	h := e.h[name]
	if h == nil {
		e.t.Fatalf("no handler for %q", args)
	}
	e.w.B = e.w.B[:0]
	c := Ctx{KS: e.ks, Args: b, W: &e.w, Now: e.now}
	if keyAt < len(b) {
		c.Shard = e.ks.ShardOf(b[keyAt])
	}
	h(&c)
	v, n, err := resp.ParseValue(e.w.B)
	if err != nil || n != len(e.w.B) {
		e.t.Fatalf("%q: bad reply %q (%v)", args, e.w.B, err)
	}
	return compactReply(v)
}

// expect runs args and fails unless the reply is want.
func (e *groupEnv) expect(want string, args ...string) {
	e.t.Helper()
	if got := e.run(args...); got != want {
		e.t.Errorf("%q at +%d ms:\n got  %s\n want %s", args, e.now-strEnvNow, got, want)
	}
}

func compactReply(v resp.Value) string {
	switch {
	case v.Null:
		return "nil"
	case v.IsError():
		return "(" + string(v.Str) + ")"
	case v.Type == ':':
		return strconv.FormatInt(v.Int, 10)
	case v.Type == '*' || v.Type == '%':
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = compactReply(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return string(v.Str)
}

// TestGroupIdleTimes pins the time-dependent answers with a fixed clock:
// XPENDING's idle times and IDLE filter, XCLAIM's min-idle-time, IDLE and
// TIME, XAUTOCLAIM's min-idle-time, and consumers' seen times, which only
// a claim (not XPENDING, not a claim that takes nothing) refreshes.
func TestGroupIdleTimes(t *testing.T) {
	e := newGroupEnv(t)
	t0 := e.now
	for i := 1; i <= 5; i++ {
		e.expect(strconv.Itoa(i)+"-0", "XADD", "s", strconv.Itoa(i)+"-0", "f", "v")
	}
	e.expect("OK", "XGROUP", "CREATE", "s", "g", "0")
	e.expect("[1-0]", "XCLAIM", "s", "g", "alice", "0", "1-0", "FORCE", "JUSTID") // delivered at t0
	e.now = t0 + 100
	e.expect("[2-0]", "XCLAIM", "s", "g", "bob", "0", "2-0", "FORCE", "JUSTID")
	e.now = t0 + 200
	e.expect("[3-0]", "XCLAIM", "s", "g", "bob", "0", "3-0", "FORCE", "JUSTID")
	e.now = t0 + 250
	e.expect("[[1-0 alice 250 1] [2-0 bob 150 1] [3-0 bob 50 1]]", "XPENDING", "s", "g", "-", "+", "10")
	e.expect("[[1-0 alice 250 1] [2-0 bob 150 1]]", "XPENDING", "s", "g", "IDLE", "150", "-", "+", "10")
	e.expect("[[2-0 bob 150 1]]", "XPENDING", "s", "g", "IDLE", "100", "-", "+", "10", "bob")
	e.expect("[]", "XPENDING", "s", "g", "IDLE", "251", "-", "+", "10")
	e.expect("[[1-0 alice 250 1]]", "XPENDING", "s", "g", "IDLE", "250", "-", "+", "10")
	e.expect("[[name alice pending 1 idle 250] [name bob pending 2 idle 50]]", "XINFO", "CONSUMERS", "s", "g")

	// XCLAIM min-idle-time 200 takes only 1-0; carol is created at once.
	e.expect("[1-0]", "XCLAIM", "s", "g", "carol", "200", "1-0", "2-0", "3-0", "JUSTID")
	e.expect("[[1-0 carol 0 1] [2-0 bob 150 1] [3-0 bob 50 1]]", "XPENDING", "s", "g", "-", "+", "10")
	// IDLE sets the delivery in the past, TIME at an instant; both
	// count a delivery unless JUSTID.
	e.expect("[[2-0 [f v]]]", "XCLAIM", "s", "g", "carol", "0", "2-0", "IDLE", "1000")
	e.expect("[[3-0 [f v]]]", "XCLAIM", "s", "g", "carol", "0", "3-0", "TIME", strconv.FormatInt(t0-5000, 10))
	e.expect("[[1-0 carol 0 1] [2-0 carol 1000 2] [3-0 carol 5250 2]]", "XPENDING", "s", "g", "-", "+", "10")
	// A TIME in the future or an IDLE below zero means now.
	e.expect("(ERR Unrecognized XCLAIM option '3-0')", "XCLAIM", "s", "g", "carol", "0", "2-0", "IDLE", "-50", "3-0")
	e.expect("[2-0 3-0]", "XCLAIM", "s", "g", "carol", "0", "2-0", "3-0", "IDLE", "-50", "JUSTID")
	e.expect("(ERR Invalid IDLE option argument for XCLAIM)", "XCLAIM", "s", "g", "carol", "0", "2-0", "IDLE", "x")
	e.expect("[1-0]", "XCLAIM", "s", "g", "carol", "0", "1-0", "TIME", strconv.FormatInt(t0+999999, 10), "JUSTID")
	e.expect("[[1-0 carol 0 1] [2-0 carol 0 2] [3-0 carol 0 2]]", "XPENDING", "s", "g", "-", "+", "10")

	// Seen times: bob's stays at his last claim (t0+200); alice's at t0.
	e.now = t0 + 1000
	e.expect("[[name alice pending 0 idle 1000] [name bob pending 0 idle 800] [name carol pending 3 idle 750]]",
		"XINFO", "CONSUMERS", "s", "g")
	// A claim that takes nothing leaves alice's seen time alone.
	e.expect("[]", "XCLAIM", "s", "g", "alice", "5000", "1-0")
	e.expect("[0-0 [] []]", "XAUTOCLAIM", "s", "g", "alice", "5000", "0")
	e.expect("[[1-0 carol 750 1] [2-0 carol 750 2] [3-0 carol 750 2]]", "XPENDING", "s", "g", "-", "+", "10")
	e.expect("[[name alice pending 0 idle 1000] [name bob pending 0 idle 800] [name carol pending 3 idle 750]]",
		"XINFO", "CONSUMERS", "s", "g")
	// XAUTOCLAIM min-idle-time 750 takes all three; bob is seen now.
	e.expect("[2-0 [1-0] []]", "XAUTOCLAIM", "s", "g", "bob", "750", "0", "COUNT", "1", "JUSTID")
	e.expect("[0-0 [[2-0 [f v]] [3-0 [f v]]] []]", "XAUTOCLAIM", "s", "g", "bob", "750", "2-0")
	// A COUNT whose buffer Redis cannot allocate fails and claims nothing
	// (NOGROUP still comes first); the greatest one that it can works.
	e.expect("(ERR Insufficient memory, failed allocating transient memory, COUNT too high.)",
		"XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "5497558138881")
	e.expect("(NOGROUP No such key 's' or consumer group 'nog')",
		"XAUTOCLAIM", "s", "nog", "carol", "0", "0", "COUNT", "5497558138881")
	e.expect("[0-0 [] []]", "XAUTOCLAIM", "s", "g", "bob", "5000", "0", "COUNT", "5497558138880")
	e.expect("[[1-0 bob 0 1] [2-0 bob 0 3] [3-0 bob 0 3]]", "XPENDING", "s", "g", "-", "+", "10")
	e.expect("[[name alice pending 0 idle 1000] [name bob pending 3 idle 0] [name carol pending 0 idle 750]]",
		"XINFO", "CONSUMERS", "s", "g")
	// XGROUP CREATECONSUMER sees a consumer now; XPENDING never does.
	e.now = t0 + 1500
	e.expect("1", "XGROUP", "CREATECONSUMER", "s", "g", "dave")
	e.expect("[[1-0 bob 500 1]]", "XPENDING", "s", "g", "-", "+", "1", "bob")
	e.expect("[[name alice pending 0 idle 1500] [name bob pending 3 idle 500] [name carol pending 0 idle 1250] [name dave pending 0 idle 0]]",
		"XINFO", "CONSUMERS", "s", "g")
}

// pelModel is the reference for TestXautoclaimModel: a group's PEL as a
// slice in id order, and the stream's live ids.
type pelModel struct {
	pel  []modelPending
	live map[StreamID]bool
}

type modelPending struct {
	id    StreamID
	at    int64
	cons  string
	count int64
}

// autoclaim is Redis 7.0.15's XAUTOCLAIM loop over the slice.
func (m *pelModel) autoclaim(cons string, minIdle int64, start StreamID, count int64, justID bool, now int64) string {
	attempts := count * 10
	i := 0
	for i < len(m.pel) && m.pel[i].id.Less(start) {
		i++
	}
	var claimed, deleted []string
	for attempts > 0 && count > 0 && i < len(m.pel) {
		attempts--
		p := &m.pel[i]
		if !m.live[p.id] {
			deleted = append(deleted, p.id.String())
			m.pel = append(m.pel[:i], m.pel[i+1:]...)
			count--
			continue
		}
		if minIdle > 0 && now-p.at < minIdle {
			i++
			continue
		}
		p.cons, p.at = cons, now
		if justID {
			claimed = append(claimed, p.id.String())
		} else {
			p.count++
			claimed = append(claimed, "["+p.id.String()+" [f v]]")
		}
		count--
		i++
	}
	cursor := "0-0"
	if i < len(m.pel) {
		cursor = m.pel[i].id.String()
	}
	return "[" + cursor + " [" + strings.Join(claimed, " ") + "] [" + strings.Join(deleted, " ") + "]]"
}

// pending is XPENDING key g IDLE minIdle - + 1000 on the model.
func (m *pelModel) pending(minIdle, now int64) string {
	var out []string
	for _, p := range m.pel {
		if minIdle != 0 && now-p.at < minIdle {
			continue
		}
		out = append(out, "["+p.id.String()+" "+p.cons+" "+strconv.FormatInt(now-p.at, 10)+" "+strconv.FormatInt(p.count, 10)+"]")
	}
	return "[" + strings.Join(out, " ") + "]"
}

// TestXautoclaimModel runs random XAUTOCLAIMs (min-idle-times that take
// all, some or none of the PEL, ranges, COUNT, JUSTID) over random PELs
// whose entries are partly deleted from the stream, against pelModel:
// replies (cursor, claims, dropped ids) and the PEL after each, through
// XPENDING with and without IDLE.
func TestXautoclaimModel(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		e := newGroupEnv(t)
		t0 := e.now
		m := &pelModel{live: map[StreamID]bool{}}
		n := 1 + rng.IntN(60)
		var ids []StreamID
		for i := 1; i <= n; i++ {
			id := StreamID{uint64(i), uint64(rng.IntN(2))}
			ids = append(ids, id)
			e.run("XADD", "s", id.String(), "f", "v")
			m.live[id] = true
		}
		e.run("XGROUP", "CREATE", "s", "g", "0")
		for _, id := range ids {
			if rng.IntN(3) == 0 {
				continue
			}
			at := t0 - int64(rng.IntN(3000))
			cons := "c" + strconv.Itoa(rng.IntN(3))
			e.run("XCLAIM", "s", "g", cons, "0", id.String(), "FORCE", "TIME", strconv.FormatInt(at, 10), "RETRYCOUNT", "1", "JUSTID")
			m.pel = append(m.pel, modelPending{id, at, cons, 1})
		}
		for _, id := range ids {
			if rng.IntN(4) == 0 {
				e.run("XDEL", "s", id.String())
				m.live[id] = false
			}
		}
		for step := range 30 {
			e.now += int64(rng.IntN(200))
			minIdle := []int64{0, 500, 1500, 2500, 100000}[rng.IntN(5)]
			start, startArg := StreamID{}, "0"
			if rng.IntN(2) == 0 {
				start = ids[rng.IntN(len(ids))]
				startArg = start.String()
				if rng.IntN(3) == 0 {
					startArg = "(" + startArg
					start, _ = start.Incr()
				}
			}
			count := int64(1 + rng.IntN(4))
			justID := rng.IntN(2) == 0
			args := []string{"XAUTOCLAIM", "s", "g", "c" + strconv.Itoa(rng.IntN(4)), strconv.FormatInt(minIdle, 10), startArg, "COUNT", strconv.FormatInt(count, 10)}
			if justID {
				args = append(args, "JUSTID")
			}
			want := m.autoclaim(args[3], minIdle, start, count, justID, e.now)
			if got := e.run(args...); got != want {
				t.Fatalf("seed %d step %d: %q:\n got  %s\n want %s", seed, step, args, got, want)
			}
			for _, idle := range []int64{0, minIdle} {
				want := m.pending(idle, e.now)
				if got := e.run("XPENDING", "s", "g", "IDLE", strconv.FormatInt(idle, 10), "-", "+", "1000"); got != want {
					t.Fatalf("seed %d step %d: XPENDING IDLE %d after %q:\n got  %s\n want %s", seed, step, idle, args, got, want)
				}
			}
		}
	}
}
