package engine

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// readEnv runs commands on keys that all live in the slot of "s" (s,
// {s}2, {s}str, ...), so XREAD's keys need no lookup of their position.
type readEnv struct {
	*groupEnv
	sh *Shard
}

func newReadEnv(t *testing.T) *readEnv {
	e := newGroupEnv(t)
	return &readEnv{groupEnv: e, sh: e.ks.ShardOf([]byte("s"))}
}

// do runs one command on the shard of "s" and returns its compact reply.
func (e *readEnv) do(args ...string) string {
	e.t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	name := strings.ToLower(args[0])
	if h := e.h[name+"|"+strings.ToLower(args[min(1, len(args)-1)])]; h != nil {
		name += "|" + strings.ToLower(args[1])
	}
	h := e.h[name]
	if h == nil {
		e.t.Fatalf("no handler for %q", args)
	}
	e.w.B = e.w.B[:0]
	h(&Ctx{KS: e.ks, Args: b, W: &e.w, Now: e.now, Shard: e.sh})
	v, n, err := resp.ParseValue(e.w.B)
	if err != nil || n != len(e.w.B) {
		e.t.Fatalf("%q: bad reply %q (%v)", args, e.w.B, err)
	}
	return compactReply(v)
}

func (e *readEnv) want(want string, args ...string) {
	e.t.Helper()
	if got := e.do(args...); got != want {
		e.t.Errorf("%q:\n got  %s\n want %s", args, got, want)
	}
}

// TestParseXRead checks the option parser: every error in Redis's order
// (each case's text as redis-server 7.0.15 answers it) and the options
// it keeps.
func TestParseXRead(t *testing.T) {
	for _, tc := range []struct {
		group bool
		args  string
		err   string
		want  string // "count block timeout noack group consumer keys ids"
	}{
		{args: "XREAD STREAMS s 0", want: "0 false 0 false   [s] [0]"},
		{args: "XREAD COUNT 5 BLOCK 100 STREAMS a b 1 2", want: "5 true 100 false   [a b] [1 2]"},
		{args: "XREAD count -5 block 0 streams a 0", want: "0 true 0 false   [a] [0]"},
		{args: "XREAD COUNT 1 COUNT 2 BLOCK 1 BLOCK 2 STREAMS a 0", want: "2 true 2 false   [a] [0]"},
		{args: "XREAD STREAMS STREAMS STREAMS STREAMS 0", want: "0 false 0 false   [STREAMS STREAMS] [STREAMS 0]"},
		{args: "XREAD STREAMS\x00x s 0", want: "0 false 0 false   [s] [0]"}, // a C string comparison
		{args: "XREAD BLOCK 9223372036854775807 STREAMS a 0", want: "0 true 9223372036854775807 false   [a] [0]"},
		{args: "XREAD STREAMS a b c", err: resp.ErrXreadUnbalanced},
		{args: "XREAD COUNT 1 STREAMS a b c", err: resp.ErrXreadUnbalanced},
		{args: "XREAD COUNT x STREAMS a 0", err: resp.ErrNotInteger},
		{args: "XREAD COUNT 1.5 STREAMS a 0", err: resp.ErrNotInteger},
		{args: "XREAD COUNT STREAMS a 0", err: resp.ErrNotInteger},
		{args: "XREAD BLOCK -1 STREAMS a 0", err: resp.ErrTimeoutNegative},
		{args: "XREAD BLOCK x STREAMS a 0", err: resp.ErrTimeoutNotInt},
		{args: "XREAD BLOCK 1.5 STREAMS a 0", err: resp.ErrTimeoutNotInt},
		{args: "XREAD BLOCK 99999999999999999999 STREAMS a 0", err: resp.ErrTimeoutNotInt},
		{args: "XREAD BLOCK STREAMS a 0", err: resp.ErrTimeoutNotInt},
		{args: "XREAD FOO STREAMS a 0", err: resp.ErrSyntax},
		{args: "XREAD COUNT 1 BLOCK 1", err: resp.ErrSyntax},
		{args: "XREAD COUNT 1 STREAMS", err: resp.ErrSyntax},
		{args: "XREAD GROUP g c STREAMS a 0", err: resp.ErrXreadGroupOption},
		{args: "XREAD NOACK STREAMS a 0", err: resp.ErrXreadNoackOption},
		{args: "XREAD GROUP g STREAMS a", err: resp.ErrXreadGroupOption},
		{args: "XREAD BLOCK -1 GROUP g c STREAMS a b c", err: resp.ErrTimeoutNegative},
		{group: true, args: "XREADGROUP GROUP g c STREAMS s >", want: "0 false 0 false g c [s] [>]"},
		{group: true, args: "XREADGROUP noack COUNT 3 GROUP g c BLOCK 7 GROUP h d STREAMS s t > 0", want: "3 true 7 true h d [s t] [> 0]"},
		{group: true, args: "XREADGROUP GROUP g c STREAMS a b c", err: resp.ErrXreadUnbalanced},
		{group: true, args: "XREADGROUP COUNT 1 NOACK STREAMS a 0", err: resp.ErrXreadgroupNoGroupOpt},
		{group: true, args: "XREADGROUP GROUP g c FOO STREAMS a 0", err: resp.ErrSyntax},
		{group: true, args: "XREADGROUP STREAMS a b c d e", err: resp.ErrXreadUnbalanced},
	} {
		args := bytesArgs(strings.Fields(tc.args))
		r, errText := ParseXRead(args, tc.group)
		if errText != tc.err {
			t.Errorf("%s: error %q, want %q", tc.args, errText, tc.err)
			continue
		}
		if errText != "" {
			continue
		}
		got := strconv.FormatInt(r.Count, 10) + " " + strconv.FormatBool(r.Block) + " " +
			strconv.FormatInt(r.TimeoutMs, 10) + " " + strconv.FormatBool(r.NoAck) + " " +
			string(r.Group) + " " + string(r.Consumer) + " " + joinArgs(r.Keys) + " " + joinArgs(r.idArgs)
		if got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.args, got, tc.want)
		}
	}
}

// "XREADGROUP GROUP g STREAMS a 0" takes STREAMS as the consumer, then
// "a" is no option: a syntax error.
func TestParseXReadGroupEatsStreams(t *testing.T) {
	_, errText := ParseXRead(bytesArgs([]string{"XREADGROUP", "GROUP", "g", "STREAMS", "a", "0"}), true)
	if errText != resp.ErrSyntax {
		t.Fatalf("error %q, want %q", errText, resp.ErrSyntax)
	}
}

func bytesArgs(ss []string) [][]byte {
	b := make([][]byte, len(ss))
	for i, s := range ss {
		b[i] = []byte(s)
	}
	return b
}

func joinArgs(b [][]byte) string {
	ss := make([]string, len(b))
	for i, x := range b {
		ss[i] = string(x)
	}
	return "[" + strings.Join(ss, " ") + "]"
}

// TestXReadServe runs XREAD and XREADGROUP without blocking, each reply
// as redis-server 7.0.15 gives it (node/diff_stream_block_test.go runs
// the same and more against it).
func TestXReadServe(t *testing.T) {
	e := newReadEnv(t)
	for i := 1; i <= 4; i++ {
		e.want(strconv.Itoa(i)+"-1", "XADD", "s", strconv.Itoa(i)+"-1", "f", "v"+strconv.Itoa(i))
	}
	e.want("OK", "SET", "{s}str", "x")

	// XREAD: entries after the id, at most COUNT per stream.
	e.want("[[s [[1-1 [f v1]] [2-1 [f v2]] [3-1 [f v3]] [4-1 [f v4]]]]]", "XREAD", "STREAMS", "s", "0")
	e.want("[[s [[3-1 [f v3]] [4-1 [f v4]]]]]", "XREAD", "STREAMS", "s", "2-1")
	e.want("[[s [[2-1 [f v2]]]]]", "XREAD", "COUNT", "1", "STREAMS", "s", "2")
	e.want("nil", "XREAD", "STREAMS", "s", "4-1")
	e.want("nil", "XREAD", "STREAMS", "s", "$")
	e.want("nil", "XREAD", "BLOCK", "10", "STREAMS", "s", "$") // no blocking here
	e.want("nil", "XREAD", "STREAMS", "{s}none", "0")
	e.want("[[s [[4-1 [f v4]]]] [s [[3-1 [f v3]] [4-1 [f v4]]]]]", "XREAD", "STREAMS", "s", "{s}none", "s", "3-1", "0", "3")
	// Errors come per key in argument order: the type, then the id.
	e.want("(WRONGTYPE Operation against a key holding the wrong kind of value)", "XREAD", "STREAMS", "{s}str", "s", "0", "x")
	e.want("("+resp.ErrStreamInvalidID+")", "XREAD", "STREAMS", "s", "{s}str", "x", "0")
	e.want("("+resp.ErrStreamInvalidID+")", "XREAD", "STREAMS", "s", "-")
	e.want("("+resp.ErrXreadGreaterID+")", "XREAD", "STREAMS", "s", ">")
	e.want("nil", "XREAD", "STREAMS", "s", "18446744073709551615-18446744073709551615")

	// XREADGROUP.
	e.want("("+strings.Replace(strings.Replace(resp.ErrXreadgroupNoGroup, "%s", "s", 1), "%s", "g", 1)+")",
		"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
	e.want("OK", "XGROUP", "CREATE", "s", "g", "0")
	e.want("("+resp.ErrXreadgroupDollar+")", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$")
	e.want("(WRONGTYPE Operation against a key holding the wrong kind of value)", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "{s}str", "$")
	e.want("[[s []]]", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0") // history of a new consumer
	e.want("[[s [[1-1 [f v1]] [2-1 [f v2]]]]]", "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">")
	e.want("[[s [[3-1 [f v3]]]]]", "XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">")
	e.want("[[s [[4-1 [f v4]]]]]", "XREADGROUP", "GROUP", "g", "carol", "NOACK", "STREAMS", "s", ">")
	e.want("nil", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
	e.want("nil", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "18446744073709551615-18446744073709551615")
	e.want("[[s []]]", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "18446744073709551615")
	e.want("[3 1-1 3-1 [[alice 2] [bob 1]]]", "XPENDING", "s", "g")
	e.want("[[name g consumers 3 pending 3 last-delivered-id 4-1 entries-read 4 lag 0]]", "XINFO", "GROUPS", "s")

	// History: the consumer's own pending entries after the id, each a
	// delivery more; a deleted one is [id, nil] and keeps its count.
	e.now += 1000
	e.want("1", "XDEL", "s", "1-1")
	e.want("[[s [[1-1 nil] [2-1 [f v2]]]]]", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
	e.want("[[s [[2-1 [f v2]]]]]", "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "1-1")
	e.want("[[s [[1-1 nil]]]]", "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", "0")
	e.want("[[1-1 alice 1000 1] [2-1 alice 0 3] [3-1 bob 1000 1]]", "XPENDING", "s", "g", "-", "+", "10")

	// XGROUP SETID back: entries already pending move to the reader with
	// a fresh count of one.
	e.want("OK", "XGROUP", "SETID", "s", "g", "0")
	e.now += 500
	e.want("[[s [[2-1 [f v2]] [3-1 [f v3]]]]]", "XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">")
	e.want("[[1-1 alice 1500 1] [2-1 bob 0 1] [3-1 bob 0 1]]", "XPENDING", "s", "g", "-", "+", "10")
	e.want("[[name alice pending 1 idle 500] [name bob pending 2 idle 0] [name carol pending 0 idle 1500]]",
		"XINFO", "CONSUMERS", "s", "g")

	// Two streams, one without anything new: only the other answers.
	e.want("2-1", "XADD", "{s}2", "2-1", "a", "b")
	e.want("OK", "XGROUP", "CREATE", "{s}2", "g", "$")
	e.want("[[s [[4-1 [f v4]]]]]", "XREADGROUP", "GROUP", "g", "dave", "STREAMS", "{s}2", "s", ">", ">")
	e.want("[[{s}2 []] [s [[4-1 [f v4]]]]]", "XREADGROUP", "GROUP", "g", "dave", "STREAMS", "{s}2", "s", "0", "0-1")
}

// TestXReadDirty pins the change counter: one per consumer created and one
// per stream an XREADGROUP answers (redis-server 7.0.15's numbers); XREAD
// changes nothing.
func TestXReadDirty(t *testing.T) {
	e := newReadEnv(t)
	e.do("XADD", "s", "1-1", "a", "b")
	e.do("XADD", "s", "2-1", "a", "b")
	e.do("XGROUP", "CREATE", "s", "g", "0")
	for _, tc := range []struct {
		args  []string
		dirty int64
	}{
		{[]string{"XREAD", "STREAMS", "s", "0"}, 0},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">"}, 2},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, 1},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, 0},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"}, 1},
		{[]string{"XREADGROUP", "GROUP", "g", "d", "NOACK", "STREAMS", "s", "0"}, 2},
		{[]string{"XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", "s", "0", "0"}, 2},
	} {
		before := e.ks.Changes()
		e.do(tc.args...)
		if got := e.ks.Changes() - before; got != tc.dirty {
			t.Errorf("%q: dirty +%d, want +%d", tc.args, got, tc.dirty)
		}
	}
}

// TestXReadHitsMisses: Redis looks each key up twice (to resolve the
// ids, then to serve), both counted; an error stops at its key.
func TestXReadHitsMisses(t *testing.T) {
	e := newReadEnv(t)
	e.do("XADD", "s", "1-1", "a", "b")
	for _, tc := range []struct {
		args         []string
		hits, misses int64
	}{
		{[]string{"XREAD", "STREAMS", "{s}none", "0"}, 0, 2},
		{[]string{"XREAD", "STREAMS", "s", "0"}, 2, 0},
		{[]string{"XREAD", "STREAMS", "s", "s", "0", "5"}, 4, 0},
		{[]string{"XREAD", "STREAMS", "s", "{s}none", "0", "x"}, 1, 1},
	} {
		h0, m0 := e.ks.Stats.KeyspaceHits.Load(), e.ks.Stats.KeyspaceMiss.Load()
		e.do(tc.args...)
		h, m := e.ks.Stats.KeyspaceHits.Load()-h0, e.ks.Stats.KeyspaceMiss.Load()-m0
		if h != tc.hits || m != tc.misses {
			t.Errorf("%q: hits +%d misses +%d, want +%d +%d", tc.args, h, m, tc.hits, tc.misses)
		}
	}
}

// TestXReadResp3 checks the raw shapes: a map of key to entries in
// RESP3, an array of [key, entries] in RESP2, null as _ or *-1.
func TestXReadResp3(t *testing.T) {
	e := newReadEnv(t)
	e.do("XADD", "s", "1-1", "f", "v")
	e.do("XGROUP", "CREATE", "s", "g", "0")
	e.do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
	e.do("XDEL", "s", "1-1")
	e.do("XADD", "s", "2-1", "f", "v")
	for _, tc := range []struct {
		proto int
		args  []string
		raw   string
	}{
		{2, []string{"XREAD", "STREAMS", "s", "1"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{3, []string{"XREAD", "STREAMS", "s", "1"}, "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"},
		{2, []string{"XREAD", "STREAMS", "s", "5"}, "*-1\r\n"},
		{3, []string{"XREAD", "STREAMS", "s", "5"}, "_\r\n"},
		{2, []string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"}, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*-1\r\n"},
		{3, []string{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"}, "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n_\r\n"},
	} {
		e.w.Proto = tc.proto
		e.do(tc.args...)
		if got := string(e.w.B); got != tc.raw {
			t.Errorf("RESP%d %q:\n got  %q\n want %q", tc.proto, tc.args, got, tc.raw)
		}
	}
}

// xreadBlocked parses and resolves args as the node does before it
// blocks: XRead must find nothing.
func (e *readEnv) xreadBlocked(args ...string) *XReadRequest {
	e.t.Helper()
	b := bytesArgs(args)
	r, errText := ParseXRead(b, strings.EqualFold(args[0], "xreadgroup"))
	if errText != "" {
		e.t.Fatalf("%q: %s", args, errText)
	}
	e.w.B = e.w.B[:0]
	if e.ks.XRead(&e.w, e.sh, &r, e.now) {
		e.t.Fatalf("%q served at once: %q", args, e.w.B)
	}
	return r.Clone()
}

// wake runs XReadWake for key with a claim that answers win, returning
// the compact reply ("" when nothing was written) and whether the claim
// was asked.
func (e *readEnv) wake(r *XReadRequest, key string, win bool) (reply string, asked bool) {
	e.t.Helper()
	var w resp.Writer
	w.Proto = 2
	served := e.ks.XReadWake(&w, e.sh, r, []byte(key), e.now, func() bool { asked = true; return win })
	if served != (asked && win) {
		e.t.Fatalf("XReadWake returned %v with the claim asked %v and won %v", served, asked, win)
	}
	if !served {
		if len(w.B) != 0 {
			e.t.Fatalf("XReadWake wrote %q without serving", w.B)
		}
		return "", asked
	}
	v, n, err := resp.ParseValue(w.B)
	if err != nil || n != len(w.B) {
		e.t.Fatalf("bad reply %q (%v)", w.B, err)
	}
	return compactReply(v), asked
}

// TestXReadWake drives the blocked path without a node: which waiters a
// change answers, with what, and that a lost claim changes nothing.
func TestXReadWake(t *testing.T) {
	t.Run("xread", func(t *testing.T) {
		e := newReadEnv(t)
		e.do("XADD", "s", "1-1", "f", "v")
		r := e.xreadBlocked("XREAD", "BLOCK", "0", "STREAMS", "{s}none", "s", "$", "$")
		if !slices.Equal(r.IDs, []StreamID{{}, {1, 1}}) {
			t.Fatalf("resolved ids %v", r.IDs)
		}
		if got, asked := e.wake(r, "s", true); asked || got != "" {
			t.Fatalf("woken with nothing new: %q (claim asked %v)", got, asked)
		}
		e.do("XADD", "s", "2-1", "f", "v")
		e.do("XADD", "s", "3-1", "f", "v")
		if got, _ := e.wake(r, "s", true); got != "[[s [[2-1 [f v]] [3-1 [f v]]]]]" {
			t.Fatalf("wake: %s", got)
		}
		// The missing key, then of another type: XREAD keeps waiting.
		if got, asked := e.wake(r, "{s}none", true); asked || got != "" {
			t.Fatalf("woken on a missing key: %q", got)
		}
		e.do("SET", "{s}none", "x")
		if got, asked := e.wake(r, "{s}none", true); asked || got != "" {
			t.Fatalf("woken on a string: %q", got)
		}
		e.do("DEL", "{s}none")
		e.do("XADD", "{s}none", "0-1", "f", "v")
		if got, _ := e.wake(r, "{s}none", true); got != "[[{s}none [[0-1 [f v]]]]]" {
			t.Fatalf("wake on the new stream: %s", got)
		}
	})
	t.Run("blocked default count", func(t *testing.T) {
		e := newReadEnv(t)
		r := e.xreadBlocked("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
		for i := 1; i <= XReadBlockedCount+5; i++ {
			e.do("XADD", "s", "1-"+strconv.Itoa(i), "f", "v")
		}
		got, _ := e.wake(r, "s", true)
		if n := strings.Count(got, "[f v]"); n != XReadBlockedCount {
			t.Fatalf("%d entries, want %d", n, XReadBlockedCount)
		}
		r = e.xreadBlocked("XREAD", "COUNT", "2000", "BLOCK", "0", "STREAMS", "s", "$")
		e.do("XADD", "s", "2-1", "f", "v")
		if got, _ := e.wake(r, "s", true); got != "[[s [[2-1 [f v]]]]]" {
			t.Fatalf("wake: %s", got)
		}
	})
	t.Run("xreadgroup", func(t *testing.T) {
		e := newReadEnv(t)
		e.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		r1 := e.xreadBlocked("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">")
		r2 := e.xreadBlocked("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">")
		e.want("[]", "XINFO", "CONSUMERS", "s", "g") // blocking creates no consumer
		e.do("XADD", "s", "1-1", "f", "v")
		// A lost claim (the waiter timed out) takes nothing.
		if got, asked := e.wake(r1, "s", false); !asked || got != "" {
			t.Fatalf("lost claim: %q asked %v", got, asked)
		}
		e.want("[0 nil nil nil]", "XPENDING", "s", "g")
		e.want("[[name g consumers 0 pending 0 last-delivered-id 0-0 entries-read nil lag 1]]", "XINFO", "GROUPS", "s")
		if got, _ := e.wake(r2, "s", true); got != "[[s [[1-1 [f v]]]]]" {
			t.Fatalf("c2: %s", got)
		}
		// The group's cursor moved: c1 has nothing now.
		if got, asked := e.wake(r1, "s", true); asked || got != "" {
			t.Fatalf("c1 woken with nothing new: %q", got)
		}
		e.want("[1 1-1 1-1 [[c2 1]]]", "XPENDING", "s", "g")
		// XADD then XDEL: the last id moved, nothing to read: an empty reply.
		e.do("XADD", "s", "2-1", "f", "v")
		e.do("XDEL", "s", "2-1")
		if got, _ := e.wake(r1, "s", true); got != "[[s []]]" {
			t.Fatalf("c1 after xdel: %s", got)
		}
		e.want("[[name c1 pending 0 idle 0] [name c2 pending 1 idle 0]]", "XINFO", "CONSUMERS", "s", "g")
	})
	t.Run("noack", func(t *testing.T) {
		e := newReadEnv(t)
		e.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
		r := e.xreadBlocked("XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")
		e.do("XADD", "s", "1-1", "f", "v")
		if got, _ := e.wake(r, "s", true); got != "[[s [[1-1 [f v]]]]]" {
			t.Fatalf("wake: %s", got)
		}
		e.want("[0 nil nil nil]", "XPENDING", "s", "g")
		e.want("[[name g consumers 1 pending 0 last-delivered-id 1-1 entries-read 1 lag 0]]", "XINFO", "GROUPS", "s")
	})
	for _, tc := range []struct {
		name   string
		change []string
		err    string
	}{
		{"group destroyed", []string{"XGROUP", "DESTROY", "s", "g"}, resp.ErrXreadgroupGroupGone},
		{"key deleted", []string{"DEL", "s"}, resp.ErrXreadgroupKeyGone},
		{"key replaced", []string{"SET", "s", "x"}, resp.ErrXreadgroupKeyGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newReadEnv(t)
			e.do("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
			r := e.xreadBlocked("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
			e.do(tc.change...)
			if got, asked := e.wake(r, "s", false); !asked || got != "" {
				t.Fatalf("lost claim: %q asked %v", got, asked)
			}
			if got, _ := e.wake(r, "s", true); got != "("+tc.err+")" {
				t.Fatalf("got %s, want (%s)", got, tc.err)
			}
		})
	}
}

// TestStreamReadyHooks: the keyspace reports stream keys that blocked
// readers must look at again when they are stored, replaced or removed,
// and a nil key for a flushed slot; expiry and FLUSHALL also ask for a
// later serving step.
func TestStreamReadyHooks(t *testing.T) {
	e := newReadEnv(t)
	var ready []string
	var later int
	e.ks.OnStreamReady = func(slot uint16, key []byte) {
		if key == nil {
			ready = append(ready, "<flush>")
			return
		}
		ready = append(ready, string(key))
	}
	e.ks.OnStreamLater = func(slot uint16) { later++ }
	for _, tc := range []struct {
		args  []string
		ready string
		later int
	}{
		{[]string{"XADD", "s", "1-1", "f", "v"}, "s", 0}, // XADD's own signal (the new stream was empty)
		{[]string{"SET", "{s}x", "1"}, "", 0},
		{[]string{"RENAME", "s", "{s}t"}, "s {s}t", 0},
		{[]string{"SET", "{s}t", "x"}, "{s}t", 0},
		{[]string{"XADD", "s", "1-1", "f", "v"}, "s", 0},
		{[]string{"XGROUP", "CREATE", "{s}m", "g", "$", "MKSTREAM"}, "", 0},
		{[]string{"RENAME", "{s}m", "{s}n"}, "{s}m", 0}, // the new key holds an empty stream
		{[]string{"COPY", "s", "{s}c"}, "{s}c", 0},
		{[]string{"DEL", "s", "{s}x"}, "s", 0},
		{[]string{"PEXPIRE", "{s}c", "10"}, "", 0},
		{[]string{"FLUSHALL"}, "<flush>", 1},
	} {
		ready, later = nil, 0
		e.do(tc.args...)
		if got := strings.Join(ready, " "); got != tc.ready || later != tc.later {
			t.Errorf("%q: ready %q later %d, want %q %d", tc.args, got, later, tc.ready, tc.later)
		}
	}
	// Expiry: the key goes on access with a later serving step.
	e.do("XADD", "s", "1-1", "f", "v")
	e.do("PEXPIRE", "s", "10")
	ready, later = nil, 0
	e.now += 20
	e.want("0", "EXISTS", "s")
	if got := strings.Join(ready, " "); got != "s" || later != 1 {
		t.Errorf("expiry: ready %q later %d", got, later)
	}
}
