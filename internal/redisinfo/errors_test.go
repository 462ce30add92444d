package redisinfo

import (
	"fmt"
	"strings"
	"testing"
)

// TestErrorStats: counts by code in byte order, a cap on distinct codes
// (later new codes count only in the total, as Redis's), and Reset.
func TestErrorStats(t *testing.T) {
	var e ErrorStats
	for _, msg := range []string{"WRONGTYPE Operation against a key", "ERR syntax error", "ERR x", "CROSSSLOT Keys", "NOAUTH"} {
		e.Record(msg)
	}
	var b strings.Builder
	e.Fields(func(k, v string) { fmt.Fprintf(&b, "%s:%s\n", k, v) })
	want := "errorstat_CROSSSLOT:count=1\nerrorstat_ERR:count=2\nerrorstat_NOAUTH:count=1\nerrorstat_WRONGTYPE:count=1\n"
	if b.String() != want {
		t.Errorf("Fields:\n%s\nwant:\n%s", b.String(), want)
	}
	if e.Total() != 5 {
		t.Errorf("Total = %d, want 5", e.Total())
	}
	for i := range MaxErrorCodes + 10 {
		e.Record(fmt.Sprintf("E%03d boom", i))
	}
	if n := len(e.Snapshot()); n != MaxErrorCodes {
		t.Errorf("distinct codes = %d, want the cap %d", n, MaxErrorCodes)
	}
	if e.Total() != 5+MaxErrorCodes+10 {
		t.Errorf("Total = %d, want %d", e.Total(), 5+MaxErrorCodes+10)
	}
	e.Reset()
	if e.Total() != 0 || len(e.Snapshot()) != 0 {
		t.Errorf("after Reset: total %d, %d codes", e.Total(), len(e.Snapshot()))
	}
}
