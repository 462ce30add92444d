package node_test

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// ksStep is one command of a keyspace script; unordered compares the
// reply as a multiset (KEYS), sleep waits first (expiry).
type ksStep struct {
	args      []string
	unordered bool
	sleep     time.Duration
}

func ks(args ...string) ksStep          { return ksStep{args: args} }
func ksUnordered(args ...string) ksStep { return ksStep{args: args, unordered: true} }
func ksAfter(d time.Duration, args ...string) ksStep {
	return ksStep{args: args, sleep: d}
}

// TestDiffKeyspace runs hand-written scripts of keyspace commands, errors
// included, on a cluster-mode redis-server and on the node, over RESP2 and
// RESP3, and demands identical replies.
func TestDiffKeyspace(t *testing.T) {
	scripts := []struct {
		name  string
		steps []ksStep
	}{
		{"del exists unlink", []ksStep{
			ks("SET", "a", "1"), ks("SET", "{a}b", "2"),
			ks("EXISTS", "a", "a", "{a}b", "{a}c"), ks("EXISTS", "nokey"),
			ks("DEL", "a", "{a}b", "{a}c", "a"), ks("EXISTS", "a"), ks("DEL", "a"),
			ks("SET", "a", "1"), ks("UNLINK", "a", "a"), ks("UNLINK", "a"),
			ks("DEL"), ks("EXISTS"), ks("UNLINK"), ks("DEL", "a", "b"), ks("EXISTS", "a", "b"),
		}},
		{"type touch", []ksStep{
			ks("TYPE", "a"), ks("SET", "a", "1"), ks("TYPE", "a"), ks("TYPE"), ks("TYPE", "a", "b"),
			ks("TOUCH", "a", "a", "{a}x"), ks("TOUCH", "nokey"), ks("TOUCH"), ks("TOUCH", "a", "b"),
		}},
		{"rename", []ksStep{
			ks("RENAME", "a", "{a}b"), ks("RENAMENX", "a", "{a}b"), ks("RENAME", "a", "a"), ks("RENAMENX", "a", "a"),
			ks("SET", "a", "v", "EX", "100"), ks("RENAME", "a", "a"), ks("RENAMENX", "a", "a"), ks("TTL", "a"),
			ks("RENAME", "a", "{a}b"), ks("EXISTS", "a"), ks("GET", "{a}b"), ks("TTL", "{a}b"),
			ks("SET", "a", "w"), ks("RENAMENX", "a", "{a}b"), ks("GET", "{a}b"), ks("GET", "a"),
			ks("RENAME", "a", "{a}b"), ks("GET", "{a}b"), ks("TTL", "{a}b"), ks("EXISTS", "a"),
			ks("RENAMENX", "{a}b", "{a}c"), ks("GET", "{a}c"), ks("RENAME", "x", "y"), ks("RENAME", "a"),
			ks("RENAME", "a", "b", "c"),
		}},
		{"copy", []ksStep{
			ks("SET", "k", "v"),
			ks("COPY", "k", "{k}2", "DB", "1"), ks("COPY", "k", "{k}2", "db", "16"), ks("COPY", "k", "{k}2", "DB", "x"),
			ks("COPY", "k", "{k}2", "DB", "-1"), ks("COPY", "k", "{k}2", "DB", "99999999999"),
			ks("COPY", "k", "{k}2", "DB", "0", "DB", "1"), ks("COPY", "k", "{k}2", "DB", "1", "DB", "0"),
			ks("COPY", "k", "{k}2", "DB"), ks("COPY", "k", "{k}2", "foo"), ks("COPY", "k", "k", "DB", "1"),
			ks("COPY", "k", "k"), ks("COPY", "k", "k", "DB", "0"), ks("COPY", "nokey", "{nokey}2"),
			ks("COPY", "k", "{k}2"), ks("GET", "{k}2"), ks("COPY", "k", "{k}2"), ks("SET", "k", "v2", "EX", "100"),
			ks("COPY", "k", "{k}2", "REPLACE", "replace"), ks("GET", "{k}2"), ks("TTL", "{k}2"),
			ks("APPEND", "k", "x"), ks("GET", "{k}2"), ks("COPY", "k", "x"), ks("COPY", "k"),
		}},
		{"expire options", []ksStep{
			ks("EXPIRE", "k", "10"), ks("SET", "k", "v"),
			ks("EXPIRE", "k", "10", "nx", "xx"), ks("EXPIRE", "k", "10", "gt", "lt"), ks("EXPIRE", "k", "10", "NX", "GT"),
			ks("EXPIRE", "k", "10", "lt", "nx"), ks("EXPIRE", "k", "10", "foo"), ks("PEXPIRE", "k", "10", "foo", "nx", "xx"),
			ks("EXPIRE", "k", "10", "nx", "xx", "bar"), ks("EXPIRE", "k", "abc"), ks("EXPIRE", "k", "01"),
			ks("EXPIRE", "k", "100", "xx"), ks("EXPIRE", "k", "100", "gt"), ks("EXPIRE", "k", "100", "lt"), ks("TTL", "k"),
			ks("EXPIRE", "k", "100", "nx"), ks("EXPIRE", "k", "100", "NX"), ks("TTL", "k"),
			ks("EXPIRE", "k", "50", "gt"), ks("EXPIRE", "k", "200", "GT"), ks("TTL", "k"),
			ks("EXPIRE", "k", "300", "lt"), ks("EXPIRE", "k", "50", "lt"), ks("TTL", "k"),
			ks("EXPIRE", "k", "60", "xx", "gt"), ks("TTL", "k"), ks("PERSIST", "k"), ks("PERSIST", "k"),
			ks("EXPIRE", "k", "60", "xx"), ks("EXPIRE", "k", "60", "gt"), ks("TTL", "k"),
			ks("PERSIST", "nokey"), ks("EXPIRE", "nokey", "10", "nx"), ks("EXPIRE", "k"), ks("EXPIRE", "k", "1", "2"),
		}},
		{"expire overflow and past", []ksStep{
			ks("SET", "k", "v"),
			ks("EXPIRE", "k", "9223372036854775807"), ks("PEXPIRE", "k", "9223372036854775807"),
			ks("EXPIREAT", "k", "9223372036854775807"), ks("EXPIRE", "k", "-9223372036854775808"),
			ks("EXPIRE", "k", "92233720368547758"), ks("EXPIREAT", "k", "9223372036854776"),
			ks("PEXPIRE", "k", "9223372036854775806"), ks("EXPIRE", "k", "9223372036854775808"),
			ks("EXPIREAT", "k", "9223372036854775"), ks("EXPIRETIME", "k"), ks("PEXPIRETIME", "k"),
			ks("PEXPIREAT", "k", "9223372036854775807"), ks("EXPIRETIME", "k"), ks("PEXPIRETIME", "k"),
			ks("PEXPIREAT", "k", "9223372036854775306"), ks("EXPIRETIME", "k"),
			ks("PEXPIREAT", "k", "4000000000499"), ks("EXPIRETIME", "k"), ks("PEXPIRETIME", "k"),
			ks("PEXPIREAT", "k", "4000000000500"), ks("EXPIRETIME", "k"),
			ks("EXPIREAT", "k", "4000000000"), ks("EXPIRETIME", "k"), ks("PEXPIRETIME", "k"),
			ks("PEXPIREAT", "k", "-9223372036854775808"), ks("EXISTS", "k"),
			ks("SET", "k", "v"), ks("EXPIRE", "k", "0"), ks("EXISTS", "k"),
			ks("SET", "k", "v"), ks("EXPIRE", "k", "-1"), ks("GET", "k"),
			ks("SET", "k", "v"), ks("PEXPIREAT", "k", "1"), ks("GET", "k"),
			ks("SET", "k", "v"), ks("EXPIREAT", "k", "100", "gt"), ks("EXPIREAT", "k", "100", "lt"), ks("EXISTS", "k"),
			ks("SET", "k", "v"), ks("PEXPIRE", "k", "-9223372036854775808"), ks("EXISTS", "k"),
		}},
		{"ttl", []ksStep{
			ks("TTL", "k"), ks("PTTL", "k"), ks("EXPIRETIME", "k"), ks("PEXPIRETIME", "k"),
			ks("SET", "k", "v"), ks("TTL", "k"), ks("PTTL", "k"), ks("EXPIRETIME", "k"), ks("PEXPIRETIME", "k"),
			ks("PEXPIRE", "k", "1499"), ks("TTL", "k"), ks("PEXPIRE", "k", "400"), ks("TTL", "k"),
			ks("PEXPIRE", "k", "100200"), ks("TTL", "k"),
			ks("TTL"), ks("TTL", "k", "x"), ks("PTTL"), ks("EXPIRETIME", "a", "b"),
		}},
		{"lazy expiry", []ksStep{
			ks("SET", "k", "v", "PX", "30"), ks("SET", "{k}2", "v", "PX", "30"), ks("SET", "{k}3", "v"),
			ks("EXISTS", "k", "{k}2", "{k}3"),
			ksAfter(80*time.Millisecond, "EXISTS", "k"), ks("TYPE", "{k}2"), ks("TTL", "k"), ks("PTTL", "{k}2"),
			ksUnordered("KEYS", "*"), ks("RANDOMKEY"), ks("RENAME", "k", "{k}4"), ks("COPY", "{k}2", "{k}5"),
			ks("PERSIST", "k"), ks("EXPIRE", "k", "10"), ks("DEL", "k", "{k}2"), ks("DBSIZE"),
		}},
		{"scan type none", []ksStep{
			// An expired key SCAN meets: TYPE's lookup deletes it and
			// calls it "none", which TYPE none lets through.
			ks("SET", "g", "v", "PXAT", "1"), ks("SCAN", "0", "TYPE", "none"), ks("DBSIZE"),
			ks("SET", "g", "v", "PXAT", "1"), ks("SCAN", "0", "TYPE", "NoNe"), ks("DBSIZE"),
			ks("SET", "g", "v", "PXAT", "1"), ks("SCAN", "0", "TYPE", "string"), ks("DBSIZE"),
			ks("SET", "g", "v", "PXAT", "1"), ks("SCAN", "0"), ks("DBSIZE"),
			// MATCH leaves it alone (and either server's active expiry
			// may take it any time): EXISTS expires it on both.
			ks("SET", "g", "v", "PXAT", "1"), ks("SCAN", "0", "MATCH", "x*", "TYPE", "none"), ks("EXISTS", "g"),
		}},
		{"keys patterns", []ksStep{
			ks("MSET", "{t}", "1", "{t}a", "1", "{t}ab", "1", "{t}abc", "1", "{t}a*c", "1", "{t}[x]", "1", "{t}\\", "1",
				"{t}h\xffllo", "1", "{t}hello", "1", "{t}hallo", "1", "{t}h]llo", "1", "{t}h^llo", "1", "{t}hbllo", "1"),
			ks("SET", "", "empty"),
			ksUnordered("KEYS", "*"), ksUnordered("KEYS", "**"), ksUnordered("KEYS", ""), ksUnordered("KEYS", "{t}*"),
			ksUnordered("KEYS", "{t}a?"), ksUnordered("KEYS", "{t}a*"), ksUnordered("KEYS", "{t}a\\*c"),
			ksUnordered("KEYS", "{t}[[]x]"), ksUnordered("KEYS", "{t}\\[x\\]"), ksUnordered("KEYS", "{t}\\"),
			ksUnordered("KEYS", "{t}\\\\"), ksUnordered("KEYS", "{t}h[a-e]llo"), ksUnordered("KEYS", "{t}h[e-a]llo"),
			ksUnordered("KEYS", "{t}h[^e]llo"), ksUnordered("KEYS", "{t}h[a-]llo"), ksUnordered("KEYS", "{t}h[a-\xff]llo"),
			ksUnordered("KEYS", "{t}h[]llo"), ksUnordered("KEYS", "{t}h[^]llo"), ksUnordered("KEYS", "{t}h[\\]]llo"),
			ksUnordered("KEYS", "{t}h[a"), ksUnordered("KEYS", "{t}h["), ksUnordered("KEYS", "{t}*[^"),
			ksUnordered("KEYS", "*l*o"), ksUnordered("KEYS", "?"), ksUnordered("KEYS", "{t}?*?"),
			ks("KEYS"), ks("KEYS", "a", "b"),
		}},
		{"scan errors", []ksStep{
			ks("SET", "a", "1"),
			ks("SCAN", "x"), ks("SCAN", " 1"), ks("SCAN", "1 "), ks("SCAN", "18446744073709551616"), ks("SCAN", "+"),
			ks("SCAN", "-"), ks("SCAN", "0x1"),
			ks("SCAN", "0", "COUNT", "0"), ks("SCAN", "0", "COUNT", "-1"), ks("SCAN", "0", "COUNT", "x"),
			ks("SCAN", "0", "COUNT", "01"), ks("SCAN", "0", "foo"), ks("SCAN", "0", "MATCH"), ks("SCAN", "0", "TYPE"),
			ks("SCAN", "0", "COUNT", "1", "MATCH"), ks("SCAN", "0", "TYPE", "strin"), ks("SCAN", "0", "TYPE", "STRING"),
			ks("SCAN", "0", "type", "list"), ks("SCAN", "0", "MATCH", "a", "COUNT", "5", "TYPE", "string"),
			ks("SCAN", ""), ks("SCAN", "-0"), ks("SCAN", "0", "COUNT", "9223372036854775807"), ks("SCAN"),
		}},
		{"randomkey dbsize", []ksStep{
			ks("RANDOMKEY"), ks("DBSIZE"), ks("SET", "only", "1"), ks("RANDOMKEY"), ks("DBSIZE"),
			ks("RANDOMKEY", "x"), ks("DBSIZE", "x"),
		}},
		{"flush", []ksStep{
			ks("MSET", "{f}a", "1", "{f}b", "2"), ks("SET", "c", "3"), ks("FLUSHDB", "foo"), ks("FLUSHALL", "async", "sync"),
			ks("FLUSHALL", "sync", "x"), ks("DBSIZE"), ks("FLUSHDB", "SYNC"), ks("DBSIZE"), ks("SET", "c", "3"),
			ks("FLUSHALL", "ASYNC"), ks("DBSIZE"), ks("SET", "c", "3"), ks("FLUSHALL"), ks("FLUSHDB"), ks("FLUSHDB", "async"),
			ks("EXISTS", "c"),
		}},
		{"object", []ksStep{
			ks("SET", "n", "100"), ks("SET", "big", "123456"), ks("SET", "s", "v"),
			ks("SET", "r", "a-string-longer-than-forty-four-bytes-is-raw-encoded-in-redis"),
			ks("OBJECT", "ENCODING", "n"), ks("OBJECT", "encoding", "big"), ks("OBJECT", "ENCODING", "s"),
			ks("OBJECT", "ENCODING", "r"), ks("OBJECT", "ENCODING", "nokey"),
			ks("OBJECT", "REFCOUNT", "n"), ks("OBJECT", "REFCOUNT", "big"), ks("OBJECT", "REFCOUNT", "s"),
			ks("OBJECT", "REFCOUNT", "nokey"), ks("OBJECT", "IDLETIME", "s"), ks("OBJECT", "IDLETIME", "nokey"),
			ks("OBJECT", "FREQ", "n"), ks("OBJECT", "FREQ", "nokey"), ks("OBJECT", "HELP"), ks("OBJECT", "help", "x"),
			ks("OBJECT", "foo"), ks("OBJECT"), ks("OBJECT", "FREQ"), ks("OBJECT", "ENCODING", "n", "x"),
		}},
		{"memory", []ksStep{
			ks("SET", "k", "v"), ks("MEMORY", "USAGE", "nokey"), ks("MEMORY", "USAGE", "k", "SAMPLES", "-1"),
			ks("MEMORY", "USAGE", "k", "SAMPLES", "x"), ks("MEMORY", "USAGE", "k", "foo"),
			ks("MEMORY", "USAGE", "k", "SAMPLES"), ks("MEMORY", "USAGE", "nokey", "SAMPLES", "0"),
			ks("MEMORY", "USAGE"), ks("MEMORY", "HELP"), ks("MEMORY", "help", "x"),
		}},
		{"cross slot", []ksStep{
			ks("DEL", "a", "b"), ks("RENAME", "a", "b"), ks("RENAMENX", "a", "b"), ks("COPY", "a", "b"),
			ks("TOUCH", "a", "b"), ks("UNLINK", "a", "b"), ks("EXISTS", "a", "b"),
		}},
	}
	p := difftest.Start(t)
	for _, proto := range []int{2, 3} {
		for _, sc := range scripts {
			t.Run(sc.name+"/resp"+strconv.Itoa(proto), func(t *testing.T) {
				p.Flush(t)
				cp := p.ConnPair
				if proto == 3 {
					cp = p.NewConnProto(t, 3)
				}
				for _, st := range sc.steps {
					time.Sleep(st.sleep)
					if st.unordered {
						cp.DoUnordered(t, st.args...)
					} else {
						cp.Do(t, st.args...)
					}
				}
			})
		}
	}
}

// TestDiffKeyspaceReplyShapes checks replies whose values legitimately
// differ (estimates, cursors) by kind and length only.
func TestDiffKeyspaceReplyShapes(t *testing.T) {
	p := difftest.Start(t)
	p.Do(t, "SET", "k", "some value")
	for _, args := range [][]string{
		{"MEMORY", "USAGE", "k"}, {"MEMORY", "USAGE", "k", "SAMPLES", "0"}, {"SCAN", "0", "COUNT", "1"},
		// Redis maps any cursor onto its table; shardgate's cursors have
		// their own layout, so only the shape is comparable.
		{"SCAN", "-1"}, {"SCAN", "18446744073709551615"}, {"SCAN", "12345"},
	} {
		for _, proto := range []int{2, 3} {
			cp := p.NewConnProto(t, proto)
			a, b := cp.Both(t, args...)
			if a.Kind != b.Kind || len(a.Elems) != len(b.Elems) {
				t.Errorf("RESP%d %v: redis %s, node %s", proto, args, a, b)
			}
		}
	}
}

// TestDiffScanComplete scans both servers to the end with several COUNT,
// MATCH and TYPE options and compares the sets of keys returned.
func TestDiffScanComplete(t *testing.T) {
	p := difftest.Start(t)
	args := []string{"MSET"}
	for i := range 300 {
		args = append(args, "{s}key:"+strconv.Itoa(i), "v")
	}
	p.Do(t, args...)
	for i := range 300 {
		p.Do(t, "SET", "other:"+strconv.Itoa(i), "v")
	}
	p.Do(t, "SET", "gone", "v", "PX", "1")
	time.Sleep(20 * time.Millisecond)
	for _, opts := range [][]string{
		nil, {"COUNT", "1"}, {"COUNT", "7"}, {"COUNT", "1000"}, {"MATCH", "{s}key:1*"}, {"MATCH", "other:?"},
		{"TYPE", "string"}, {"TYPE", "list"}, {"MATCH", "*", "COUNT", "3"},
	} {
		a := scanAll(t, p.Redis, opts)
		b := scanAll(t, p.Node, opts)
		if len(a) != len(b) {
			t.Errorf("SCAN %v: redis %d keys, node %d keys", opts, len(a), len(b))
			continue
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("SCAN %v: redis key %q, node key %q", opts, a[i], b[i])
				break
			}
		}
	}
}

// scanAll runs SCAN to the end and returns the keys, sorted, deduplicated.
func scanAll(t *testing.T, c *difftest.Conn, opts []string) []string {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > 100000 {
			t.Fatal("SCAN does not end")
		}
		v, err := c.DoStrings(append([]string{"SCAN", cursor}, opts...)...)
		if err != nil || v.Kind != difftest.Array || len(v.Elems) != 2 || v.Elems[0].Kind != difftest.Bulk {
			t.Fatalf("SCAN: %s %v", v, err)
		}
		for _, k := range v.Elems[1].Elems {
			seen[string(k.Str)] = true
		}
		cursor = string(v.Elems[0].Str)
		if cursor == "0" {
			break
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDiffKeyspaceWatch checks that keyspace commands touch WATCHed keys
// (the destination included) exactly when Redis's do.
func TestDiffKeyspaceWatch(t *testing.T) {
	tests := []struct {
		name  string
		setup [][]string
		watch string
		write []string
	}{
		{"del", [][]string{{"SET", "k", "v"}}, "k", []string{"DEL", "k"}},
		{"del missing", nil, "k", []string{"DEL", "k"}},
		{"rename src", [][]string{{"SET", "k", "v"}}, "k", []string{"RENAME", "k", "{k}2"}},
		{"rename dst", [][]string{{"SET", "k", "v"}}, "{k}2", []string{"RENAME", "k", "{k}2"}},
		{"renamenx refused", [][]string{{"SET", "k", "v"}, {"SET", "{k}2", "v"}}, "{k}2", []string{"RENAMENX", "k", "{k}2"}},
		{"copy dst", [][]string{{"SET", "k", "v"}}, "{k}2", []string{"COPY", "k", "{k}2"}},
		{"copy src", [][]string{{"SET", "k", "v"}}, "k", []string{"COPY", "k", "{k}2"}},
		{"expire", [][]string{{"SET", "k", "v"}}, "k", []string{"EXPIRE", "k", "100"}},
		{"expire refused", [][]string{{"SET", "k", "v"}}, "k", []string{"EXPIRE", "k", "100", "xx"}},
		{"expire past", [][]string{{"SET", "k", "v"}}, "k", []string{"EXPIRE", "k", "-1"}},
		{"persist", [][]string{{"SET", "k", "v", "EX", "100"}}, "k", []string{"PERSIST", "k"}},
		{"persist none", [][]string{{"SET", "k", "v"}}, "k", []string{"PERSIST", "k"}},
		{"touch", [][]string{{"SET", "k", "v"}}, "k", []string{"TOUCH", "k"}},
		{"flushall", [][]string{{"SET", "k", "v"}}, "k", []string{"FLUSHALL"}},
		{"flushall missing", nil, "k", []string{"FLUSHALL"}},
		{"flushdb", [][]string{{"SET", "k", "v"}}, "k", []string{"FLUSHDB"}},
	}
	p := difftest.Start(t)
	other := p.NewConn(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.Flush(t)
			for _, s := range tt.setup {
				p.Do(t, s...)
			}
			p.Do(t, "WATCH", tt.watch)
			other.Do(t, tt.write...)
			p.Do(t, "MULTI")
			p.Do(t, "PING")
			p.Do(t, "EXEC")
		})
	}
}

// TestDiffActiveExpiry checks that keys nobody reads are reclaimed in the
// background on both servers (DBSIZE counts expired keys until then).
func TestDiffActiveExpiry(t *testing.T) {
	p := difftest.Start(t)
	args := []string{"MSET"}
	for i := range 200 {
		args = append(args, "{e}"+strconv.Itoa(i), "v")
	}
	p.Do(t, args...)
	for i := range 200 {
		p.Do(t, "PEXPIRE", "{e}"+strconv.Itoa(i), "50")
		p.Do(t, "SET", "x"+strconv.Itoa(i), "v", "PX", "50")
	}
	p.Do(t, "SET", "stays", "v")
	for name, c := range map[string]*difftest.Conn{"redis": p.Redis, "node": p.Node} {
		deadline := time.Now().Add(3 * time.Second)
		for {
			v, err := c.DoStrings("DBSIZE")
			if err != nil {
				t.Fatal(err)
			}
			if v.Int == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: DBSIZE still %d after 3s", name, v.Int)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestDiffCopySharedInteger: COPY duplicates a shared small integer into
// an object of its own (REFCOUNT 1), and a later write that stores a
// small integer makes it shared again (found by the random run).
func TestDiffCopySharedInteger(t *testing.T) {
	p := difftest.Start(t)
	for _, args := range [][]string{
		{"DECRBY", "{b}2", "-82"}, {"COPY", "{b}2", "{b}1", "REPLACE"},
		{"OBJECT", "REFCOUNT", "{b}1"}, {"OBJECT", "ENCODING", "{b}1"}, {"OBJECT", "REFCOUNT", "{b}2"},
		{"COPY", "{b}1", "{b}3"}, {"OBJECT", "REFCOUNT", "{b}3"}, {"RENAME", "{b}3", "{b}4"},
		{"OBJECT", "REFCOUNT", "{b}4"}, {"PFADD", "{b}4", "x"}, {"INCR", "{b}1"},
		{"OBJECT", "REFCOUNT", "{b}1"}, {"SET", "{b}4", "7"}, {"OBJECT", "REFCOUNT", "{b}4"},
		{"SET", "{b}5", "12345"}, {"COPY", "{b}5", "{b}6"}, {"OBJECT", "REFCOUNT", "{b}6"},
	} {
		p.Do(t, args...)
	}
}

// TestDiffScanStats: SCAN with TYPE looks up every key that passes MATCH,
// which counts keyspace hits as any read does in Redis 7.0; SCAN without
// TYPE counts nothing.
func TestDiffScanStats(t *testing.T) {
	p := difftest.Start(t)
	for i := range 40 {
		p.Do(t, "SET", "str:"+strconv.Itoa(i), "v")
		p.Do(t, "RPUSH", "list:"+strconv.Itoa(i), "x")
	}
	for _, opts := range [][]string{
		nil, {"TYPE", "string"}, {"TYPE", "list"}, {"TYPE", "nosuch"}, {"MATCH", "str:1*", "TYPE", "string"},
		{"MATCH", "list:*", "TYPE", "string"}, {"MATCH", "str:*"},
	} {
		p.Do(t, "CONFIG", "RESETSTAT")
		a := scanAll(t, p.Redis, opts)
		b := scanAll(t, p.Node, opts)
		if len(a) != len(b) {
			t.Errorf("SCAN %v: redis %d keys, node %d keys", opts, len(a), len(b))
		}
		rh, nh := infoBoth(t, p, "stats", "keyspace_hits")
		rm, nm := infoBoth(t, p, "stats", "keyspace_misses")
		if rh != nh || rm != nm {
			t.Errorf("SCAN %v to the end: hits/misses redis %s/%s, node %s/%s", opts, rh, rm, nh, nm)
		}
	}
}
