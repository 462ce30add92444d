package difftest

import (
	"fmt"
	"testing"
)

// MemoryScenario compares MEMORY STATS, DOCTOR, PURGE and MALLOC-STATS
// with Redis 7.0 in RESP2 and RESP3: MEMORY STATS's fields, their order
// and reply types, with db.0's hash table overheads exactly (they follow
// from the number of keys and of keys with a TTL alone); the sizes, which
// are each server's own, are checked for sense. DOCTOR must be one of
// Redis's two reports for the memory it sees; MALLOC-STATS is Redis's
// reply without jemalloc. Arity errors are compared as they are.
func MemoryScenario(t *testing.T, p *Pair) {
	t.Helper()
	for i := range 101 {
		args := []string{"SET", fmt.Sprint("{m}k", i), "v"}
		if i%40 == 0 {
			args = append(args, "EX", "1000") // 3 keys with a TTL
		}
		p.Do(t, args...)
	}
	for _, proto := range []int{2, 3} {
		c := p.NewConnProto(t, proto)
		a, b := c.Both(t, "MEMORY", "STATS")
		c.Compare(t, []string{"MEMORY", "STATS"}, memoryStatsShape(t, a), memoryStatsShape(t, b))

		a, b = c.Both(t, "MEMORY", "DOCTOR")
		want := Bulk
		if proto == 3 {
			want = Verbatim
		}
		for _, v := range []Value{a, b} {
			if v.Kind != want {
				t.Errorf("RESP%d MEMORY DOCTOR: %s, want a %s", proto, v, want)
			}
		}
		if s := string(b.Str); s != "txt:"+doctorEmpty && s != doctorEmpty && s != "txt:"+doctorNoIssue && s != doctorNoIssue {
			t.Errorf("RESP%d MEMORY DOCTOR: %q, not one of Redis's reports", proto, s)
		}
		c.Do(t, "MEMORY", "PURGE")
		if _, b := c.Both(t, "MEMORY", "MALLOC-STATS"); !Equal(b, BulkOf("Stats not supported for the current allocator")) {
			t.Errorf("RESP%d MEMORY MALLOC-STATS: %s", proto, b)
		}
		for _, args := range [][]string{
			{"MEMORY", "STATS", "x"}, {"MEMORY", "DOCTOR", "x"},
			{"MEMORY", "PURGE", "x"}, {"MEMORY", "MALLOC-STATS", "x"},
		} {
			c.Do(t, args...)
		}
	}
}

const (
	doctorEmpty   = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	doctorNoIssue = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
)

// memoryStatsShape keeps MEMORY STATS's field names and db.0 as they are
// and replaces every other value by an empty one of its kind, after
// checking the figures that must hold whatever the allocator.
func memoryStatsShape(t *testing.T, v Value) Value {
	t.Helper()
	if v.Kind != Map && v.Kind != Array {
		return v
	}
	out := Value{Kind: v.Kind}
	fields := map[string]Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		k, val := v.Elems[i], v.Elems[i+1]
		fields[string(k.Str)] = val
		if string(k.Str) != "db.0" {
			val = Value{Kind: val.Kind}
		}
		out.Elems = append(out.Elems, k, val)
	}
	if n := fields["keys.count"]; n.Int != 101 {
		t.Errorf("MEMORY STATS keys.count %s, want 101", n)
	}
	// (Redis updates its peak in its cron: the peak may trail the total.)
	if total, peak := fields["total.allocated"], fields["peak.allocated"]; total.Int <= 0 || peak.Int <= 0 {
		t.Errorf("MEMORY STATS total.allocated %s, peak.allocated %s", total, peak)
	}
	return out
}
