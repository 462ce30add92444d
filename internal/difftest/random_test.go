package difftest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func genSteps(t *testing.T, seed uint64, fams []string, n int) []Step {
	t.Helper()
	g, err := NewGen(seed, fams, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Step, n)
	for i := range out {
		if out[i], err = g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestGenDeterministic(t *testing.T) {
	a := genSteps(t, 42, nil, 2000)
	b := genSteps(t, 42, nil, 2000)
	c := genSteps(t, 43, nil, 2000)
	if !slices.EqualFunc(a, b, stepEqual) {
		t.Fatal("same seed gave different sequences")
	}
	if slices.EqualFunc(a, c, stepEqual) {
		t.Fatal("different seeds gave the same sequence")
	}
}

func stepEqual(a, b Step) bool {
	return a.Conn == b.Conn && a.Check == b.Check && a.Tolerance == b.Tolerance && slices.Equal(a.Args, b.Args)
}

// TestGenCoversFamilies checks that every family yields commands, that a
// family restricts the output, and that key and transaction mixes happen.
func TestGenCoversFamilies(t *testing.T) {
	for _, fam := range Families() {
		steps := genSteps(t, 7, []string{fam}, 300)
		names := map[string]bool{}
		for _, st := range steps {
			if len(st.Args) == 0 {
				t.Fatalf("%s: empty command", fam)
			}
			names[strings.ToUpper(st.Args[0])] = true
		}
		if len(names) < 2 && fam != "scan" { // scan is SCAN only
			t.Errorf("family %s produced only %v", fam, names)
		}
		if fam == "strings" && (names["INCR"] || names["DEL"]) {
			t.Errorf("family strings produced commands of other families: %v", names)
		}
	}
	steps := genSteps(t, 1, nil, 20000)
	var conn1, exec, crossSlot, sameSlot int
	for _, st := range steps {
		if st.Conn == 1 {
			conn1++
		}
		if strings.EqualFold(st.Args[0], "EXEC") {
			exec++
		}
		if strings.EqualFold(st.Args[0], "MGET") && len(st.Args) >= 3 {
			if st.Args[1][:2] == st.Args[2][:2] && st.Args[1][0] == '{' {
				sameSlot++
			} else {
				crossSlot++
			}
		}
	}
	if conn1 == 0 || exec == 0 || crossSlot == 0 || sameSlot == 0 {
		t.Fatalf("poor mix: conn1=%d exec=%d crossSlot=%d sameSlot=%d", conn1, exec, crossSlot, sameSlot)
	}
}

func TestGenExcludes(t *testing.T) {
	steps := genSteps(t, 5, []string{"strings", "conn", "arity", "-GET", "-client|setname", "-COMMAND|"}, 5000)
	var client, command int
	for _, st := range steps {
		name := strings.ToUpper(st.Args[0])
		if name == "COMMAND" {
			if len(st.Args) == 1 {
				t.Fatal("bare COMMAND generated though excluded")
			}
			command++
		}
		if name == "GET" || name == "CLIENT" && len(st.Args) > 1 && strings.EqualFold(st.Args[1], "SETNAME") {
			t.Fatalf("excluded command generated: %v", st.Args)
		}
		if name == "CLIENT" {
			client++
		}
	}
	if client == 0 || command == 0 {
		t.Fatalf("exclusions removed too much: %d CLIENT, %d COMMAND", client, command)
	}
}

func TestGenAllExcluded(t *testing.T) {
	g, err := NewGen(1, []string{"tx", "-MULTI", "-WATCH", "-UNWATCH", "-EXEC", "-DISCARD"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Next(); err != ErrAllExcluded {
		t.Fatalf("Next with everything excluded: %v", err)
	}
}

func TestNewGenUnknownFamily(t *testing.T) {
	if _, err := NewGen(1, []string{"nosuch"}, time.Now()); err == nil {
		t.Fatal("unknown family accepted")
	}
}

func TestSame(t *testing.T) {
	page := func(cursor string, keys ...string) Value {
		ks := make([]Value, len(keys))
		for i, k := range keys {
			ks[i] = BulkOf(k)
		}
		return ArrayOf(BulkOf(cursor), ArrayOf(ks...))
	}
	hello := func(id int64, ver string) Value {
		return Value{Kind: Map, Elems: []Value{BulkOf("server"), BulkOf("redis"), BulkOf("version"), BulkOf(ver), BulkOf("id"), Int(id)}}
	}
	tests := []struct {
		name string
		st   Step
		a, b Value
		want bool
	}{
		{"exact equal", Step{}, Int(1), Int(1), true},
		{"exact differ", Step{}, Int(1), Int(2), false},
		{"unordered", Step{Check: CheckUnordered}, ArrayOf(BulkOf("a"), BulkOf("b")), ArrayOf(BulkOf("b"), BulkOf("a")), true},
		{"unordered differ", Step{Check: CheckUnordered}, ArrayOf(BulkOf("a")), ArrayOf(BulkOf("b")), false},
		{"approx within", Step{Check: CheckApprox, Tolerance: 2}, Int(1000), Int(998), true},
		{"approx beyond", Step{Check: CheckApprox, Tolerance: 2}, Int(1000), Int(997), false},
		{"approx codes exact", Step{Check: CheckApprox, Tolerance: 2}, Int(-1), Int(-2), false},
		{"approx code vs ttl", Step{Check: CheckApprox, Tolerance: 2}, Int(-1), Int(0), false},
		{"approx kinds", Step{Check: CheckApprox, Tolerance: 2}, Int(1), BulkOf("1"), false},
		{"shape same kind", Step{Check: CheckShape}, BulkOf("x"), BulkOf("y"), true},
		{"shape kinds", Step{Check: CheckShape}, BulkOf("x"), Simple("x"), false},
		{"shape errors exact", Step{Check: CheckShape}, Err("ERR a"), Err("ERR b"), false},
		{"hello ignores id", Step{Check: CheckHello}, hello(5, "7.0.15"), hello(9, "7.0.15"), true},
		{"hello other fields", Step{Check: CheckHello}, hello(5, "7.0.15"), hello(5, "6.2.0"), false},
		{"scan cursors differ", Step{Check: CheckScan}, page("17", "{a}1"), page("3", "k1", "k2"), true},
		{"scan foreign key", Step{Check: CheckScan}, page("0"), page("0", "zzz"), false},
		{"scan bad cursor", Step{Check: CheckScan}, page("0"), page("x"), false},
		{"scan error", Step{Check: CheckScan}, Err("ERR invalid cursor"), page("0"), false},
		{"memory null vs size", Step{Check: CheckMemory}, Int(80), Value{Kind: Null}, true},
		{"memory sizes", Step{Check: CheckMemory}, Int(80), Int(56), true},
		{"memory kinds", Step{Check: CheckMemory}, Int(80), BulkOf("80"), false},
		{"memory errors", Step{Check: CheckMemory}, Err("ERR syntax error"), Int(1), false},
		{"randomkey", Step{Check: CheckRandomKey}, BulkOf("k1"), BulkOf("{a}2"), true},
		{"randomkey null", Step{Check: CheckRandomKey}, Value{Kind: NullBulk}, BulkOf("k1"), false},
		{"randomkey foreign", Step{Check: CheckRandomKey}, BulkOf("k1"), BulkOf("nope"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Same(tt.st, tt.a, tt.b); got != tt.want {
				t.Fatalf("Same(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestSessionExec checks that EXEC's reply is compared element by element
// with the checks of the commands redis really queued.
func TestSessionExec(t *testing.T) {
	s := &session{}
	queued := Simple("QUEUED")
	steps := []struct {
		st   Step
		a, b Value
		want bool
	}{
		{Step{Args: []string{"MULTI"}}, Simple("OK"), Simple("OK"), true},
		{approx(2000, "PTTL", "k1"), queued, queued, true},
		{exact("GET", "k1"), queued, queued, true},
		{exact("GET"), Err("ERR wrong number"), Err("ERR wrong number"), true}, // not queued
		{exact("EXEC"), ArrayOf(Int(5000), BulkOf("v")), ArrayOf(Int(4990), BulkOf("v")), true},
		{Step{Args: []string{"multi"}}, Simple("OK"), Simple("OK"), true},
		{approx(2000, "PTTL", "k1"), queued, queued, true},
		{exact("EXEC"), ArrayOf(Int(-1)), ArrayOf(Int(5000)), false},
		{exact("EXEC"), Err("ERR EXEC without MULTI"), Err("ERR EXEC without MULTI"), true},
	}
	for i, s2 := range steps {
		if got := s.same(s2.st, s2.a, s2.b); got != s2.want {
			t.Fatalf("step %d %v: same = %v, want %v", i, s2.st.Args, got, s2.want)
		}
	}
}

func TestStepsFileRoundTrip(t *testing.T) {
	steps := genSteps(t, 99, nil, 500)
	steps = append(steps, Step{Conn: 1, Check: CheckApprox, Tolerance: 7, Args: []string{"SET", "a b", "", "\x00\xff\r\n\"'"}})
	cfg := RandomConfig{Seed: 99, OutDir: t.TempDir()}
	path, err := writeSteps(cfg, t.Name(), steps)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != cfg.OutDir {
		t.Fatalf("written to %s, not in %s", path, cfg.OutDir)
	}
	got, err := ReadSteps(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, steps, stepEqual) {
		t.Fatalf("round trip changed the steps (%d vs %d)", len(got), len(steps))
	}
}
