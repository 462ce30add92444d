package engine

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// ksEnv runs engine commands as the dispatcher does: the shard of the
// command's key is locked, keyless commands get none, FLUSHALL/FLUSHDB run
// with the keyspace held exclusively. The clock is fixed until a test
// moves it.
type ksEnv struct {
	t   testing.TB
	ks  *Keyspace
	w   resp.Writer
	now int64
	h   map[string]Handler
}

const ksEnvNow int64 = 1704067200000 // 2024-01-01T00:00:00Z

func newKsEnv(t testing.TB) *ksEnv {
	return &ksEnv{t: t, ks: New(), w: resp.Writer{Proto: 2}, now: ksEnvNow, h: Handlers()}
}

// ksKeyless are the commands of this family without keys.
var ksKeyless = map[string]bool{
	"keys": true, "scan": true, "randomkey": true, "dbsize": true, "flushall": true, "flushdb": true,
	"object|help": true, "memory|help": true,
}

func (e *ksEnv) do(args ...string) string {
	e.t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return e.doBytes(b)
}

func (e *ksEnv) doBytes(args [][]byte) string {
	e.t.Helper()
	name := strings.ToLower(string(args[0]))
	keyAt := 1
	if name == "object" || name == "memory" {
		name += "|" + strings.ToLower(string(args[1]))
		keyAt = 2
	}
	if name == "bitop" {
		keyAt = 2
	}
	h := e.h[name]
	if h == nil {
		e.t.Fatalf("no handler for %q", name)
	}
	e.w.B = e.w.B[:0]
	c := Ctx{KS: e.ks, Args: args, W: &e.w, Now: e.now}
	switch {
	case name == "flushall" || name == "flushdb":
		e.ks.Lock()
		defer e.ks.Unlock()
		c.Exclusive = true
	case ksKeyless[name]:
		e.ks.RLock()
		defer e.ks.RUnlock()
	default:
		e.ks.RLock()
		defer e.ks.RUnlock()
		c.Shard = e.ks.ShardOf(args[keyAt])
		c.Shard.Lock()
		defer c.Shard.Unlock()
	}
	h(&c)
	return string(e.w.B)
}

// set stores a string key with an absolute expiry (0: none), looking it
// up first as commands do.
func (e *ksEnv) set(key, val string, expire int64) {
	s := e.ks.ShardOf([]byte(key))
	s.Lock()
	e.ks.Lookup(s, []byte(key), e.now)
	e.ks.Set(s, []byte(key), &Entry{Kind: KindString, Enc: EncEmbstr, Str: []byte(val), Expire: expire})
	s.Unlock()
}

func ksInt(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func ksBulk(s string) string {
	return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
}
func ksErr(s string) string { return "-" + s + "\r\n" }

const (
	ksOK   = "+OK\r\n"
	ksNull = "$-1\r\n"
)

func TestKeyspaceCommands(t *testing.T) {
	type step struct {
		args []string
		want string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"del exists", []step{
			{[]string{"EXISTS", "a", "a", "b"}, ksInt(2)},
			{[]string{"DEL", "a", "a", "nokey"}, ksInt(1)},
			{[]string{"EXISTS", "a"}, ksInt(0)},
			{[]string{"UNLINK", "b"}, ksInt(1)},
			{[]string{"TYPE", "b"}, "+none\r\n"},
		}},
		{"rename keeps ttl", []step{
			{[]string{"RENAME", "ttl", "{ttl}x"}, ksOK},
			{[]string{"TTL", "{ttl}x"}, ksInt(100)},
			{[]string{"EXISTS", "ttl"}, ksInt(0)},
			{[]string{"RENAMENX", "{ttl}x", "{ttl}x"}, ksInt(0)},
			{[]string{"RENAME", "nokey", "{nokey}x"}, ksErr(resp.ErrNoSuchKey)},
		}},
		{"copy", []step{
			{[]string{"COPY", "ttl", "{ttl}c"}, ksInt(1)},
			{[]string{"PTTL", "{ttl}c"}, ksInt(100000)},
			{[]string{"COPY", "ttl", "{ttl}c"}, ksInt(0)},
			{[]string{"COPY", "ttl", "{ttl}c", "REPLACE"}, ksInt(1)},
			{[]string{"COPY", "ttl", "{ttl}c", "DB", "1"}, ksErr(resp.ErrCopyCrossDB)},
			{[]string{"COPY", "ttl", "{ttl}c", "DB", "16"}, ksErr(resp.ErrDBIndexRange)},
			{[]string{"COPY", "ttl", "ttl"}, ksErr(resp.ErrSameObject)},
		}},
		{"expire", []step{
			{[]string{"EXPIRE", "a", "10", "NX", "XX"}, ksErr(resp.ErrExpireNXCombo)},
			{[]string{"EXPIRE", "a", "10", "GT", "LT"}, ksErr(resp.ErrExpireGTLT)},
			{[]string{"EXPIRE", "a", "10", "bad\r\nopt"}, ksErr("ERR Unsupported option bad  opt")},
			{[]string{"EXPIRE", "a", "9223372036854775807"}, ksErr("ERR invalid expire time in 'expire' command")},
			{[]string{"PEXPIRE", "a", "9223372036854775807"}, ksErr("ERR invalid expire time in 'pexpire' command")},
			{[]string{"EXPIRE", "a", "10", "GT"}, ksInt(0)},
			{[]string{"EXPIRE", "a", "10", "LT"}, ksInt(1)},
			{[]string{"TTL", "a"}, ksInt(10)},
			{[]string{"PEXPIRE", "a", "1499"}, ksInt(1)},
			{[]string{"TTL", "a"}, ksInt(1)},
			{[]string{"PEXPIRE", "a", "1500"}, ksInt(1)},
			{[]string{"TTL", "a"}, ksInt(2)},
			{[]string{"PEXPIRETIME", "a"}, ksInt(ksEnvNow + 1500)},
			{[]string{"PERSIST", "a"}, ksInt(1)},
			{[]string{"TTL", "a"}, ksInt(-1)},
			{[]string{"EXPIRE", "a", "0"}, ksInt(1)},
			{[]string{"TTL", "a"}, ksInt(-2)},
		}},
		{"object", []step{
			{[]string{"OBJECT", "ENCODING", "a"}, ksBulk("embstr")},
			{[]string{"OBJECT", "REFCOUNT", "a"}, ksInt(1)},
			{[]string{"OBJECT", "IDLETIME", "a"}, ksInt(0)},
			{[]string{"OBJECT", "IDLETIME", "stale"}, ksInt(7)},
			{[]string{"TYPE", "stale"}, "+string\r\n"}, // no touch
			{[]string{"OBJECT", "IDLETIME", "stale"}, ksInt(7)},
			{[]string{"TOUCH", "stale"}, ksInt(1)},
			{[]string{"OBJECT", "IDLETIME", "stale"}, ksInt(0)},
			{[]string{"OBJECT", "FREQ", "a"}, ksErr(resp.ErrLFUNotSelected)},
			{[]string{"OBJECT", "FREQ", "nokey"}, ksNull},
			{[]string{"MEMORY", "USAGE", "nokey"}, ksNull},
			{[]string{"MEMORY", "USAGE", "a", "SAMPLES", "-1"}, ksErr(resp.ErrSyntax)},
		}},
		{"flush", []step{
			{[]string{"DBSIZE"}, ksInt(4)},
			{[]string{"FLUSHALL", "x"}, ksErr(resp.ErrSyntax)},
			{[]string{"FLUSHDB", "ASYNC"}, ksOK},
			{[]string{"DBSIZE"}, ksInt(0)},
			{[]string{"RANDOMKEY"}, ksNull},
			{[]string{"KEYS", "*"}, "*0\r\n"},
			{[]string{"SCAN", "0"}, "*2\r\n$1\r\n0\r\n*0\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newKsEnv(t)
			e.now -= 7000
			e.set("stale", "v", 0)
			e.now += 7000
			e.set("a", "1", 0)
			e.set("b", "2", 0)
			e.set("ttl", "v", ksEnvNow+100000)
			for _, st := range tt.steps {
				if got := e.do(st.args...); got != st.want {
					t.Fatalf("%v = %q, want %q", st.args, got, st.want)
				}
			}
		})
	}
}

// TestExpiredKeysInvisible checks that once its time has come a key is
// gone for every command, while DBSIZE counts it until it is reclaimed, as
// Redis's does.
func TestExpiredKeysInvisible(t *testing.T) {
	e := newKsEnv(t)
	e.set("k", "v", ksEnvNow+10)
	e.set("live", "v", 0)
	// As Redis's keyIsExpired (now > when): the key lives through its
	// expire millisecond, with PTTL 0, and is gone the next one.
	e.now += 10
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"PTTL", "k"}, ksInt(0)}, {[]string{"TTL", "k"}, ksInt(0)}, {[]string{"EXISTS", "k"}, ksInt(1)},
		{[]string{"GET", "k"}, ksBulk("v")}, {[]string{"KEYS", "k"}, "*1\r\n" + ksBulk("k")},
	} {
		if got := e.do(c.args...); got != c.want {
			t.Errorf("%v at the key's expire millisecond = %q, want %q", c.args, got, c.want)
		}
	}
	e.now++
	if got := e.do("KEYS", "*"); got != "*1\r\n"+ksBulk("live") {
		t.Errorf("KEYS = %q", got)
	}
	if got := e.do("DBSIZE"); got != ksInt(2) {
		t.Errorf("DBSIZE before reclaim = %q, want 2", got)
	}
	for _, args := range [][]string{
		{"EXISTS", "k"}, {"TTL", "k"}, {"TYPE", "k"}, {"PERSIST", "k"}, {"TOUCH", "k"}, {"OBJECT", "ENCODING", "k"},
	} {
		if got := e.do(args...); got == ksInt(1) || got == "+string\r\n" || got == ksBulk("embstr") {
			t.Errorf("%v sees the expired key: %q", args, got)
		}
	}
	if got := e.do("DBSIZE"); got != ksInt(1) {
		t.Errorf("DBSIZE after lazy expiry = %q, want 1", got)
	}
	for range 20 {
		if got := e.do("RANDOMKEY"); got != ksBulk("live") {
			t.Fatalf("RANDOMKEY = %q", got)
		}
	}
	if n := e.ks.Stats.ExpiredKeys.Load(); n != 1 {
		t.Errorf("expired_keys = %d, want 1", n)
	}
}

// TestWatchTouched checks that every change marks the watchers of the
// changed keys, destinations included, and that refusals do not.
func TestWatchTouched(t *testing.T) {
	tests := []struct {
		args    []string
		watch   string
		touched bool
	}{
		{[]string{"DEL", "k"}, "k", true},
		{[]string{"DEL", "nokey"}, "nokey", false},
		{[]string{"RENAME", "k", "{k}d"}, "k", true},
		{[]string{"RENAME", "k", "{k}d"}, "{k}d", true},
		{[]string{"RENAMENX", "k", "{k}o"}, "{k}o", false},
		{[]string{"COPY", "k", "{k}d"}, "{k}d", true},
		{[]string{"COPY", "k", "{k}d"}, "k", false},
		{[]string{"EXPIRE", "k", "100"}, "k", true},
		{[]string{"EXPIRE", "k", "100", "XX"}, "k", false},
		{[]string{"EXPIRE", "k", "-1"}, "k", true},
		{[]string{"PERSIST", "k"}, "k", false},
		{[]string{"FLUSHALL"}, "k", true},
		{[]string{"FLUSHDB"}, "nokey", false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " ")+"/"+tt.watch, func(t *testing.T) {
			e := newKsEnv(t)
			e.set("k", "v", 0)
			e.set("{k}o", "v", 0)
			w := &Watch{}
			s := e.ks.ShardOf([]byte(tt.watch))
			s.Lock()
			s.AddWatch([]byte(tt.watch), w)
			s.Unlock()
			e.do(tt.args...)
			if got := w.Dirty.Load(); got != tt.touched {
				t.Errorf("touched = %v, want %v", got, tt.touched)
			}
		})
	}
}

func TestKsParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-1", -1, true}, {"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true}, {"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false}, {"01", 0, false}, {"-0", 0, false}, {"+1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"", 0, false}, {"-", 0, false}, {"99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := ksParseInt([]byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("ksParseInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestExpireCycle checks the active cycle: it reclaims a slot full of
// expired keys in one cycle, does little work when nothing has expired,
// and visits only shards that hold expiring keys.
func TestExpireCycle(t *testing.T) {
	e := newKsEnv(t)
	for i := range 5000 {
		e.set("{dead}"+strconv.Itoa(i), "v", ksEnvNow+1)
	}
	for i := range 3000 {
		e.set("live"+strconv.Itoa(i), "v", 0) // spread over many slots
	}
	e.set("{soon}", "v", ksEnvNow+1_000_000)
	if got := e.ks.expiring.count(); got != 2 {
		t.Fatalf("expiring shards = %d, want 2", got)
	}
	polls := 0
	stop := func() bool { polls++; return false }

	// Nothing expired yet: a cycle checks a sample of each expiring shard
	// and stops.
	if n := e.ks.ExpireCycleWithin(ksEnvNow, 20, stop); n != 0 {
		t.Fatalf("removed %d live keys", n)
	}
	if polls > 2 {
		t.Errorf("cycle with nothing expired polled %d times, want at most one per expiring shard", polls)
	}

	// At their expire millisecond the keys still live (Redis's now > when).
	if n := e.ks.ExpireCycleWithin(ksEnvNow+1, 20, func() bool { return false }); n != 0 {
		t.Fatalf("removed %d keys at their expire millisecond", n)
	}

	// All of {dead} expired: the cycle keeps sampling that shard.
	n := e.ks.ExpireCycleWithin(ksEnvNow+2, 20, func() bool { return false })
	if n != 5000 {
		t.Errorf("removed %d, want 5000", n)
	}
	if got := e.ks.expiring.count(); got != 1 {
		t.Errorf("expiring shards after the cycle = %d, want 1", got)
	}
	if got := e.do("DBSIZE"); got != ksInt(3001) {
		t.Errorf("DBSIZE = %q", got)
	}

	// A budget stops the cycle early.
	for i := range 5000 {
		e.set("{dead}"+strconv.Itoa(i), "v", ksEnvNow+1)
	}
	polls = 0
	n = e.ks.ExpireCycleWithin(ksEnvNow+2, 20, func() bool { polls++; return polls > 3 })
	if n == 0 || n >= 5000 {
		t.Errorf("budgeted cycle removed %d, want some but not all", n)
	}
	if got := e.ks.Stats.ExpireTimeCap.Load(); got != 1 {
		t.Errorf("expired_time_cap_reached_count = %d after one cycle stopped by its budget, want 1", got)
	}
	if n := e.ks.ExpireCycle(ksEnvNow+2, 20); n == 0 {
		t.Error("ExpireCycle removed nothing")
	}
}

// TestExpireCycleSparse: keys with a TTL among very many without, in one
// slot, are all removed by one cycle once they have expired, as Redis's
// sampling of its expires dictionary removes them: a sample looks only at
// keys that have a TTL.
func TestExpireCycleSparse(t *testing.T) {
	e := newKsEnv(t)
	for i := range 300_000 {
		e.set("{x}k"+strconv.Itoa(i), "v", 0)
	}
	for i := range 2000 {
		e.set("{x}t"+strconv.Itoa(i), "v", ksEnvNow+1)
	}
	if n := e.ks.ExpireCycleWithin(ksEnvNow+2, 20, func() bool { return false }); n != 2000 {
		t.Fatalf("one cycle removed %d of the 2000 expired keys", n)
	}
	if got := e.do("DBSIZE"); got != ksInt(300_000) {
		t.Errorf("DBSIZE = %q, want 300000", got)
	}
	if got := e.ks.expiring.count(); got != 0 {
		t.Errorf("expiring shards = %d, want 0", got)
	}
}

// TestTTLIndex: the shard's index of keys with a TTL follows every way a
// key gains or loses one (SET EX, EXPIRE, PERSIST, SET without KEEPTTL,
// SET KEEPTTL, overwrite by another type, DEL, RENAME, COPY, GETEX,
// FLUSHALL), so the active cycle finds exactly the keys that have one.
func TestTTLIndex(t *testing.T) {
	e := newKsEnv(t)
	const later = ksEnvNow + 1_000_000
	steps := [][]string{
		{"SET", "{s}a", "v", "PX", "1000000"},
		{"SET", "{s}b", "v"},
		{"PEXPIRE", "{s}b", "1000000"},
		{"SET", "{s}c", "v", "PX", "1000000"},
		{"PERSIST", "{s}c"},
		{"SET", "{s}d", "v", "PX", "1000000"},
		{"SET", "{s}d", "w"},
		{"SET", "{s}e", "v", "PX", "1000000"},
		{"SET", "{s}e", "w", "KEEPTTL"},
		{"SET", "{s}f", "v", "PX", "1000000"},
		{"DEL", "{s}f"},
		{"SET", "{s}g", "v", "PX", "1000000"},
		{"RENAME", "{s}g", "{s}h"},
		{"COPY", "{s}h", "{s}i"},
		{"SET", "{s}j", "v"},
		{"GETEX", "{s}j", "PX", "1000000"},
		{"GETEX", "{s}a", "PERSIST"},
		{"SET", "{s}k", "v", "PX", "1000000"},
		{"RPUSH", "{s}l", "x"},
		{"PEXPIRE", "{s}l", "1000000"},
		{"SET", "{s}m", "v", "PX", "1000000"},
		{"RENAME", "{s}b", "{s}m"},
	}
	for _, st := range steps {
		e.do(st...)
	}
	want := []string{"{s}e", "{s}h", "{s}i", "{s}j", "{s}k", "{s}l", "{s}m"}
	sh := e.ks.ShardOf([]byte("{s}"))
	var got []string
	for k := range sh.ttl {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) || sh.Expires() != len(want) {
		t.Fatalf("keys with a TTL %q (count %d), want %q", got, sh.Expires(), want)
	}
	if n := e.ks.ExpireCycleWithin(later+1, 20, func() bool { return false }); n != len(want) {
		t.Errorf("cycle after every TTL removed %d, want %d", n, len(want))
	}
	if got := e.do("DBSIZE"); got != ksInt(3) { // a, c and d
		t.Errorf("DBSIZE = %q, want 3", got)
	}
	e.do("SET", "{s}n", "v", "PX", "1000000")
	e.do("FLUSHALL")
	if sh.ttl != nil || sh.Expires() != 0 {
		t.Errorf("after FLUSHALL: ttl %v, expires %d", sh.ttl, sh.Expires())
	}
}

// TestEmptyResultOntoExpiredDestination: BITOP and SORT ... STORE with an
// empty result delete their destination as Redis's dbDelete does, expired
// or not: an expired one counts as a change, not as an expired key. A
// non-empty result looks the destination up first (setKey), so there it
// expires.
func TestEmptyResultOntoExpiredDestination(t *testing.T) {
	tests := []struct {
		cmd             []string
		reply           string
		expired, change int64
	}{
		{[]string{"BITOP", "OR", "{t}dst", "{t}none"}, ksInt(0), 0, 1},
		{[]string{"BITOP", "NOT", "{t}dst", "{t}none"}, ksInt(0), 0, 1},
		{[]string{"SORT", "{t}none", "STORE", "{t}dst"}, ksInt(0), 0, 1},
		{[]string{"BITOP", "OR", "{t}dst", "{t}src"}, ksInt(1), 1, 1},
	}
	for _, tt := range tests {
		e := newKsEnv(t)
		e.set("{t}src", "v", 0)
		e.set("{t}dst", "v", ksEnvNow+1)
		e.now = ksEnvNow + 10
		expired0, changes0 := e.ks.Stats.ExpiredKeys.Load(), e.ks.Changes()
		if got := e.do(tt.cmd...); got != tt.reply {
			t.Errorf("%q: %q, want %q", tt.cmd, got, tt.reply)
		}
		if x, c := e.ks.Stats.ExpiredKeys.Load()-expired0, e.ks.Changes()-changes0; x != tt.expired || c != tt.change {
			t.Errorf("%q: expired_keys +%d, changes +%d; want +%d, +%d", tt.cmd, x, c, tt.expired, tt.change)
		}
		if got, want := e.do("EXISTS", "{t}dst"), ksInt(int64(tt.reply[1]-'0')); got != want {
			t.Errorf("%q: EXISTS dst %q, want %q", tt.cmd, got, want)
		}
	}
}

func TestShardSet(t *testing.T) {
	var b shardSet
	if b.next(0) != -1 || b.nextWrap(5) != -1 {
		t.Fatal("empty set has members")
	}
	for _, s := range []uint16{0, 63, 64, 9000, slots.Count - 1} {
		b.add(s)
	}
	b.remove(63)
	tests := []struct{ from, next, wrap int }{
		{0, 0, 0}, {1, 64, 64}, {65, 9000, 9000}, {9001, slots.Count - 1, slots.Count - 1}, {slots.Count, -1, 0},
	}
	for _, tt := range tests {
		if got := b.next(tt.from); got != tt.next {
			t.Errorf("next(%d) = %d, want %d", tt.from, got, tt.next)
		}
		if got := b.nextWrap(tt.from); got != tt.wrap {
			t.Errorf("nextWrap(%d) = %d, want %d", tt.from, got, tt.wrap)
		}
	}
	if b.count() != 4 || !b.has(64) || b.has(63) {
		t.Errorf("count %d, has(64) %v, has(63) %v", b.count(), b.has(64), b.has(63))
	}
}

// ksBenchCtx prepares a Ctx on the shard of key for benchmarks.
func ksBenchCtx(ks *Keyspace, w *resp.Writer, args ...string) *Ctx {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return &Ctx{KS: ks, Args: b, W: w, Now: ksEnvNow, Shard: ks.ShardOf(b[1])}
}

func BenchmarkExists(b *testing.B) {
	ks := New()
	w := &resp.Writer{Proto: 2}
	c := ksBenchCtx(ks, w, "EXISTS", "key")
	ks.Set(c.Shard, []byte("key"), &Entry{Kind: KindString, Str: []byte("v")})
	b.ReportAllocs()
	for b.Loop() {
		w.B = w.B[:0]
		cmdExists(c)
	}
}

func BenchmarkTTL(b *testing.B) {
	ks := New()
	w := &resp.Writer{Proto: 2}
	c := ksBenchCtx(ks, w, "TTL", "key")
	ks.Set(c.Shard, []byte("key"), &Entry{Kind: KindString, Str: []byte("v"), Expire: ksEnvNow + 100000})
	h := Handlers()["ttl"]
	b.ReportAllocs()
	for b.Loop() {
		w.B = w.B[:0]
		h(c)
	}
}

// BenchmarkDel deletes and re-creates the key each round; the allocations
// are those of storing the key again.
func BenchmarkDel(b *testing.B) {
	ks := New()
	w := &resp.Writer{Proto: 2}
	c := ksBenchCtx(ks, w, "DEL", "key")
	e := &Entry{Kind: KindString, Str: []byte("v")}
	b.ReportAllocs()
	for b.Loop() {
		ks.Set(c.Shard, c.Args[1], e)
		w.B = w.B[:0]
		cmdDel(c)
	}
}

func TestExistsTTLDoNotAllocate(t *testing.T) {
	ks := New()
	w := &resp.Writer{Proto: 2, B: make([]byte, 0, 64)}
	c := ksBenchCtx(ks, w, "EXISTS", "key")
	ks.Set(c.Shard, []byte("key"), &Entry{Kind: KindString, Str: []byte("v"), Expire: ksEnvNow + 100000})
	ttl := Handlers()["ttl"]
	if n := testing.AllocsPerRun(100, func() { w.B = w.B[:0]; cmdExists(c); ttl(c) }); n != 0 {
		t.Errorf("EXISTS+TTL allocate %.1f times per run", n)
	}
}

// TestSharedIntegerIdleTime checks OBJECT IDLETIME on integers 0..9999,
// which Redis stores as one shared object per value: every key holding 5
// has the idle time of the last access to any of them, a new key gets the
// object's age, and a value outside the range, or COPY's private copy,
// keeps its own.
func TestSharedIntegerIdleTime(t *testing.T) {
	e := newKsEnv(t)
	e.ks.born = uint32(ksEnvNow / 1000)
	steps := []struct {
		advance int64 // ms before the command
		args    []string
		want    string
	}{
		{3000, []string{"SET", "a", "5"}, ksOK},
		{0, []string{"OBJECT", "IDLETIME", "a"}, ksInt(3)}, // the object's age since birth
		{0, []string{"OBJECT", "REFCOUNT", "a"}, ksInt(sharedRefcount)},
		{0, []string{"SET", "b", "5"}, ksOK},
		{0, []string{"SET", "big", "10000"}, ksOK},
		{0, []string{"COPY", "a", "{a}copy"}, ksInt(1)},
		{4000, []string{"GET", "a"}, ksBulk("5")},
		{0, []string{"OBJECT", "IDLETIME", "b"}, ksInt(0)}, // reading a touched the shared 5
		{0, []string{"OBJECT", "IDLETIME", "big"}, ksInt(4)},
		{0, []string{"OBJECT", "IDLETIME", "{a}copy"}, ksInt(4)},
		{2000, []string{"OBJECT", "IDLETIME", "a"}, ksInt(2)}, // OBJECT itself does not touch
		{0, []string{"SET", "c", "5"}, ksOK},
		{0, []string{"OBJECT", "IDLETIME", "c"}, ksInt(2)},
		{0, []string{"INCR", "c"}, ksInt(6)}, // 6 was never used: born 9 s ago
		{0, []string{"OBJECT", "IDLETIME", "c"}, ksInt(9)},
		{0, []string{"APPEND", "c", "x"}, ksInt(2)}, // now its own raw string
		{1000, []string{"OBJECT", "IDLETIME", "c"}, ksInt(1)},
	}
	for _, st := range steps {
		e.now += st.advance
		if got := e.do(st.args...); got != st.want {
			t.Fatalf("%v = %q, want %q", st.args, got, st.want)
		}
	}
}

// TestExpiryPaused: while ExpiryPaused holds, expired keys read as gone
// but nothing removes them (reads, SCAN, RANDOMKEY, the active cycle);
// RANDOMKEY over expired keys only answers null instead of looping.
func TestExpiryPaused(t *testing.T) {
	e := newKsEnv(t)
	paused := true
	e.ks.ExpiryPaused = func() bool { return paused }
	for i := range 50 {
		e.set("gone"+strconv.Itoa(i), "v", ksEnvNow+1) // spread over slots
	}
	e.now = ksEnvNow + 2
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "gone1"}, ksNull},
		{[]string{"EXISTS", "gone1"}, ksInt(0)},
		{[]string{"RANDOMKEY"}, ksNull},
		{[]string{"KEYS", "*"}, "*0\r\n"},
		{[]string{"DBSIZE"}, ksInt(50)},
	} {
		if got := e.do(step.args...); got != step.want {
			t.Errorf("paused: %q = %q, want %q", step.args, got, step.want)
		}
	}
	if got := e.do("MEMORY", "USAGE", "gone1"); !strings.HasPrefix(got, ":") {
		t.Errorf("paused: MEMORY USAGE of a stored expired key = %q, want its size", got)
	}
	if n := e.ks.ExpireCycleWithin(e.now, 20, func() bool { return false }); n != 0 {
		t.Errorf("paused: the active cycle removed %d keys", n)
	}
	e.set("live", "v", 0)
	if got := e.do("RANDOMKEY"); got != ksBulk("live") {
		t.Errorf("paused: RANDOMKEY with one live key = %q", got)
	}
	if got := e.do("DBSIZE"); got != ksInt(51) || e.ks.Stats.ExpiredKeys.Load() != 0 {
		t.Errorf("paused: DBSIZE %q, expired_keys %d: want 51 stored, none expired", got, e.ks.Stats.ExpiredKeys.Load())
	}

	paused = false
	if got := e.do("GET", "gone1"); got != ksNull {
		t.Errorf("after the pause: GET = %q", got)
	}
	if n := e.ks.ExpireCycleWithin(e.now, 20, func() bool { return false }); n != 49 {
		t.Errorf("after the pause: the cycle removed %d, want the other 49", n)
	}
	if got := e.do("DBSIZE"); got != ksInt(1) {
		t.Errorf("after the pause: DBSIZE = %q, want 1", got)
	}
}

// TestKeysAndDbsizeOwnedOnly: with Keyspace.Owns set, DBSIZE and KEYS
// count only the keys of owned slots (a slot migrated away keeps its keys
// here until they are dropped, and the new owner has them too).
func TestKeysAndDbsizeOwnedOnly(t *testing.T) {
	e := newKsEnv(t)
	e.set("{a}1", "x", 0)
	e.set("{a}2", "x", 0)
	e.set("{b}1", "x", 0)
	if got := e.do("DBSIZE"); got != ksInt(3) {
		t.Fatalf("DBSIZE owning every slot: %q", got)
	}
	gone := slots.SlotString("{b}")
	e.ks.Owns = func(slot uint16) bool { return slot != gone }
	if got := e.do("DBSIZE"); got != ksInt(2) {
		t.Errorf("DBSIZE without {b}'s slot: %q", got)
	}
	if got := e.do("KEYS", "*"); got != "*2\r\n"+ksBulk("{a}1")+ksBulk("{a}2") && got != "*2\r\n"+ksBulk("{a}2")+ksBulk("{a}1") {
		t.Errorf("KEYS * without {b}'s slot: %q", got)
	}
}
