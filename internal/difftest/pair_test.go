package difftest

import (
	"fmt"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// recorder is a testing.TB that records failures instead of failing, to
// check that the harness reports what it must.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCompareReportsDifference(t *testing.T) {
	rec := &recorder{TB: t}
	c := &ConnPair{Proto: 2}
	if c.Compare(rec, []string{"GET", "k"}, BulkOf("v"), Value{Kind: NullBulk}) {
		t.Fatal("Compare returned true for different replies")
	}
	if len(rec.errs) != 1 {
		t.Fatalf("Compare reported %d errors, want 1", len(rec.errs))
	}
	for _, want := range []string{"GET k", `bulk:"v"`, "null-bulk", "RESP2"} {
		if !strings.Contains(rec.errs[0], want) {
			t.Errorf("report %q lacks %q", rec.errs[0], want)
		}
	}
	rec.errs = nil
	if !c.Compare(rec, []string{"PING"}, Simple("PONG"), Simple("PONG")) || len(rec.errs) != 0 {
		t.Fatalf("Compare reported equal replies: %v", rec.errs)
	}
}

// TestPairAgainstServers needs redis-server: it checks that the harness
// talks to both servers and catches a real divergence, made here by
// writing to redis alone.
func TestPairAgainstServers(t *testing.T) {
	p := Start(t)
	if !strings.HasPrefix(p.Oracle.Version, "7.0.") {
		t.Logf("oracle is redis %s, not 7.0.x: expect spurious differences", p.Oracle.Version)
	}
	p.Do(t, "PING")

	// Diverge on purpose.
	if v, err := p.Redis.DoStrings("SET", "only-in-redis", "v"); err != nil || v.Kind != SimpleString {
		t.Fatalf("SET on redis: %s %v", v, err)
	}
	rec := &recorder{TB: t}
	got := p.Do(rec, "EXISTS", "only-in-redis")
	if !Equal(got, Int(1)) {
		t.Fatalf("Do returned %s, want redis's reply int:1", got)
	}
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "EXISTS only-in-redis") {
		t.Fatalf("divergence not reported as expected: %q", rec.errs)
	}

	// Equal replies pass silently.
	rec.errs = nil
	p.Do(rec, "PING", "hello")
	if len(rec.errs) != 0 {
		t.Fatalf("PING hello reported: %q", rec.errs)
	}

	// A second connection pair and a RESP3 pair reach the same servers.
	c := p.NewConn(t)
	if v, _ := c.Both(t, "PING", "x"); !Equal(v, BulkOf("x")) {
		t.Fatalf("second pair PING x: %s", v)
	}
	r3, err := DialProto(p.Oracle.Addr, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if v, err := r3.DoStrings("GET", "missing"); err != nil || v.Kind != Null {
		t.Fatalf("RESP3 GET missing on redis: %s %v, want null", v, err)
	}
}

// TestStartIsFresh checks that a new Pair does not see the previous test's
// data on the shared server.
func TestStartIsFresh(t *testing.T) {
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := Start(t)
			if v, err := p.Redis.DoStrings("DBSIZE"); err != nil || !Equal(v, Int(0)) {
				t.Fatalf("DBSIZE at start: %s %v", v, err)
			}
			if _, err := p.Redis.DoStrings("SET", "leftover", "1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
