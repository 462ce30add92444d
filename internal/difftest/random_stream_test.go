package difftest

import (
	"os"
	"strings"
	"testing"
)

// TestSameStream checks CheckStream: times within the tolerance pass,
// times beyond it and any other difference fail, in both protocols.
func TestSameStream(t *testing.T) {
	const tol = StreamTimeTolerance
	pending := func(idle int64, consumer string) Value {
		return ArrayOf(ArrayOf(BulkOf("5-1"), BulkOf(consumer), Int(idle), Int(1)))
	}
	consumers := func(idle, pend int64) Value {
		return ArrayOf(ArrayOf(BulkOf("name"), BulkOf("c1"), BulkOf("pending"), Int(pend), BulkOf("idle"), Int(idle)))
	}
	consumersMap := func(idle int64) Value {
		return ArrayOf(Value{Kind: Map, Elems: []Value{BulkOf("name"), BulkOf("c1"), BulkOf("pending"), Int(0), BulkOf("idle"), Int(idle)}})
	}
	// full is XINFO STREAM FULL's reply (RESP2 when kv is Array, RESP3 when Map).
	full := func(kv Kind, pelTime, seen, pendTime, count int64) Value {
		m := func(e ...Value) Value { return Value{Kind: kv, Elems: e} }
		consumer := m(BulkOf("name"), BulkOf("c1"), BulkOf("seen-time"), Int(seen), BulkOf("pel-count"), Int(1),
			BulkOf("pending"), ArrayOf(ArrayOf(BulkOf("5-1"), Int(pendTime), Int(count))))
		group := m(BulkOf("name"), BulkOf("g1"), BulkOf("last-delivered-id"), BulkOf("5-1"),
			BulkOf("pel-count"), Int(1), BulkOf("pending"), ArrayOf(ArrayOf(BulkOf("5-1"), BulkOf("c1"), Int(pelTime), Int(count))),
			BulkOf("consumers"), ArrayOf(consumer))
		return m(BulkOf("length"), Int(1), BulkOf("entries"), ArrayOf(), BulkOf("groups"), ArrayOf(group))
	}
	xpending := []string{"XPENDING", "{a}1", "g1", "-", "+", "10"}
	xinfoC := []string{"XINFO", "CONSUMERS", "{a}1", "g1"}
	xinfoF := []string{"XINFO", "STREAM", "{a}1", "FULL"}
	const now = 1796008427284
	tests := []struct {
		name string
		args []string
		a, b Value
		want bool
	}{
		{"pending idle within", xpending, pending(10, "c1"), pending(10+tol, "c1"), true},
		{"pending idle beyond", xpending, pending(10, "c1"), pending(11+tol, "c1"), false},
		{"pending consumer", xpending, pending(10, "c1"), pending(10, "c2"), false},
		{"pending count exact", xpending, pending(10, "c1"), ArrayOf(ArrayOf(BulkOf("5-1"), BulkOf("c1"), Int(10), Int(2))), false},
		{"pending idle kind", xpending, pending(10, "c1"), ArrayOf(ArrayOf(BulkOf("5-1"), BulkOf("c1"), BulkOf("10"), Int(1))), false},
		{"pending more entries", xpending, pending(10, "c1"), ArrayOf(pending(10, "c1").Elems[0], pending(10, "c1").Elems[0]), false},
		{"pending summary exact", []string{"XPENDING", "{a}1", "g1"}, ArrayOf(Int(1)), ArrayOf(Int(2)), false},
		{"pending error", xpending, Err("NOGROUP x"), Err("NOGROUP y"), false},
		{"consumers idle within", xinfoC, consumers(3, 1), consumers(3+tol, 1), true},
		{"consumers idle beyond", xinfoC, consumers(3, 1), consumers(200_000_003, 1), false},
		{"consumers pending exact", xinfoC, consumers(3, 1), consumers(3, 2), false},
		{"consumers resp3", xinfoC, consumersMap(7), consumersMap(8), true},
		{"consumers resp3 beyond", xinfoC, consumersMap(7), consumersMap(7000), false},
		{"full within", xinfoF, full(Array, now, now, now, 1), full(Array, now+1, now+2, now+3, 1), true},
		{"full pel beyond", xinfoF, full(Array, now, now, now, 1), full(Array, now+tol+1, now, now, 1), false},
		{"full seen beyond", xinfoF, full(Array, now, now, now, 1), full(Array, now, now-tol-1, now, 1), false},
		{"full pending beyond", xinfoF, full(Array, now, now, now, 1), full(Array, now, now, 0, 1), false},
		{"full count exact", xinfoF, full(Array, now, now, now, 1), full(Array, now, now, now, 2), false},
		{"full resp3 within", xinfoF, full(Map, now, now, now, 1), full(Map, now, now+tol, now-tol, 1), true},
		{"full resp3 beyond", xinfoF, full(Map, now, now, now, 1), full(Map, now, now, now+tol+1, 1), false},
		{"full kinds", xinfoF, full(Map, now, now, now, 1), full(Array, now, now, now, 1), false},
		// Not FULL: the same integers are compared exactly.
		{"stream not full", []string{"XINFO", "STREAM", "{a}1"}, full(Array, now, now, now, 1), full(Array, now+1, now, now, 1), false},
		{"other command", []string{"XLEN", "{a}1"}, Int(5), Int(6), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Step{Args: tt.args, Check: CheckStream, Tolerance: tol}
			if got := Same(st, tt.a, tt.b); got != tt.want {
				t.Fatalf("Same(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestStreamGenPrimesAutoIDs checks the family's promise: every
// "XADD ... *" comes right after the primer of its key on its connection.
func TestStreamGenPrimesAutoIDs(t *testing.T) {
	steps := genSteps(t, 3, []string{"streams"}, 20000)
	var auto, timed int
	for i, st := range steps {
		if st.Check == CheckStream {
			timed++
		}
		if !strings.EqualFold(st.Args[0], "XADD") || !isAutoAdd(st.Args) {
			continue
		}
		auto++
		if i == 0 {
			t.Fatalf("step 0 is an unprimed %v", st.Args)
		}
		p := steps[i-1]
		if p.Conn != st.Conn || len(p.Args) != 5 || !strings.EqualFold(p.Args[0], "XADD") || p.Args[1] != st.Args[1] ||
			!strings.HasSuffix(p.Args[2], "-1") || p.Args[2] < "5000000000000" {
			t.Fatalf("step %d %v follows %v, not its primer", i, st.Args, p.Args)
		}
	}
	if auto < 500 || timed < 500 {
		t.Fatalf("too few auto-id XADDs (%d) or timed replies (%d) in 20000 steps", auto, timed)
	}
	// Excluding XADD excludes the auto ids as well, primer and all.
	for _, st := range genSteps(t, 3, []string{"streams", "-XADD"}, 5000) {
		if strings.EqualFold(st.Args[0], "XADD") {
			t.Fatalf("XADD generated though excluded: %v", st.Args)
		}
	}
}

// isAutoAdd reports whether an XADD's id argument is "*".
func isAutoAdd(args []string) bool {
	for i := 2; i < len(args); i++ {
		switch strings.ToUpper(args[i]) {
		case "NOMKSTREAM", "~", "=":
		case "MAXLEN", "MINID", "LIMIT":
			i++
		default:
			return args[i] == "*"
		}
	}
	return false
}

// TestStreamFamilyRedisVsRedis runs the streams family against two
// redis-servers: any difference is the generator's fault (an outcome that
// depends on the clock), not a server's.
func TestStreamFamilyRedisVsRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second redis-server")
	}
	cfg, err := RandomConfigFromEnv(RandomConfig{N: 3000, Families: []string{"streams"}, OutDir: os.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{2, 3} {
		t.Run("resp"+string(rune('0'+proto)), func(t *testing.T) {
			one := cfg
			one.Proto = proto
			p := StartTarget(t, func(t testing.TB) (string, func()) {
				r, err := StartRedis()
				if err != nil {
					t.Fatal(err)
				}
				return r.Addr, r.Stop
			})
			RunRandom(t, p, one)
		})
	}
}
