package redisconf

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

func TestSetAllOrNothing(t *testing.T) {
	e, _ := NewEndpoint("", 100, 1)
	tab := Table{{Name: "port", Get: func() string { return "7000" }}, e.RequirePassParam(), e.MaxClientsParam()}
	cases := []struct {
		args       []string
		reply      string
		pass       string
		maxClients int
	}{
		{[]string{"maxclients", "5", "requirepass", "pw"}, "+OK\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients", "0"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n", "pw", 5},
		{[]string{"requirepass", "x", "MAXCLIENTS", "z"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients", "+3"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients", "03"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients", "-0"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients", "00"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n", "pw", 5},
		{[]string{"requirepass", "x", "port", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxmemory", "1"}, "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config\r\n", "pw", 5},
		// Redis sets them in order and fails at the first value it
		// refuses: a later bad value is named before an earlier change
		// this server cannot make.
		{[]string{"port", "1", "maxmemory", "abc"}, "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value\r\n", "pw", 5},
		{[]string{"maxmemory", "1", "maxclients", "0"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n", "pw", 5},
		{[]string{"requirepass", "x", "nosuch", "1"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n", "pw", 5},
		{[]string{"requirepass", "x", "requirepass", "y"}, "-ERR CONFIG SET failed (possibly related to argument 'requirepass') - duplicate parameter\r\n", "pw", 5},
		{[]string{"requirepass", "x", "maxclients"}, "-ERR syntax error\r\n", "pw", 5},
		{[]string{"requirepass", ""}, "+OK\r\n", "", 5},
	}
	for _, tc := range cases {
		var w resp.Writer
		tab.Set(&w, byteArgs(tc.args))
		if string(w.B) != tc.reply {
			t.Errorf("CONFIG SET %q = %q, want %q", tc.args, w.B, tc.reply)
		}
		if e.RequirePass() != tc.pass || e.MaxClients() != tc.maxClients {
			t.Errorf("after CONFIG SET %q: requirepass %q maxclients %d, want %q %d", tc.args, e.RequirePass(), e.MaxClients(), tc.pass, tc.maxClients)
		}
	}
}

func TestGetPatterns(t *testing.T) {
	e, _ := NewEndpoint("pw", 7, 1)
	tab := Table{{Name: "port", Get: func() string { return "7000" }}, e.RequirePassParam(), e.MaxClientsParam()}
	cases := []struct {
		patterns []string
		reply    string
	}{
		{[]string{"MaxClients"}, "*2\r\n$10\r\nMaxClients\r\n$1\r\n7\r\n"},
		{[]string{"*pass", "requirepass"}, "*2\r\n$11\r\nrequirepass\r\n$2\r\npw\r\n"},
		{[]string{"P*"}, "*2\r\n$4\r\nport\r\n$4\r\n7000\r\n"},
		{[]string{"nosuch"}, "*0\r\n"},
	}
	for _, tc := range cases {
		var w resp.Writer
		tab.Get(&w, byteArgs(tc.patterns))
		if string(w.B) != tc.reply {
			t.Errorf("CONFIG GET %q = %q, want %q", tc.patterns, w.B, tc.reply)
		}
	}
}

func byteArgs(args []string) [][]byte {
	var b [][]byte
	for _, a := range args {
		b = append(b, []byte(a))
	}
	return b
}

// TestWithRedisDefaults: a server's own parameters win, skipped names stay
// unknown to GET, and the defaults are immutable to SET.
func TestWithRedisDefaults(t *testing.T) {
	own := Table{{Name: "hz", Get: func() string { return "42" }}}
	tab := own.WithRedisDefaults("dbfilename")
	cases := []struct {
		get   []string
		reply string
	}{
		{[]string{"hz"}, "*2\r\n$2\r\nhz\r\n$2\r\n42\r\n"},
		{[]string{"Stream-Node-Max-Entries"}, "*2\r\n$23\r\nStream-Node-Max-Entries\r\n$3\r\n100\r\n"},
		{[]string{"dbfilename"}, "*0\r\n"},
		{[]string{"db*"}, "*0\r\n"},
		{[]string{"slave-read-*"}, "*2\r\n$15\r\nslave-read-only\r\n$3\r\nyes\r\n"},
		// Hidden: the exact name only.
		{[]string{"Key-Load-Delay"}, "*2\r\n$14\r\nKey-Load-Delay\r\n$1\r\n0\r\n"},
		{[]string{"key-load-*"}, "*0\r\n"},
	}
	for _, tc := range cases {
		var w resp.Writer
		tab.Get(&w, byteArgs(tc.get))
		if string(w.B) != tc.reply {
			t.Errorf("CONFIG GET %q = %q, want %q", tc.get, w.B, tc.reply)
		}
	}
	if n := len(tab); n != len(redisDefaults)-1+len(redisHidden) {
		t.Errorf("%d parameters, want Redis's %d and %d hidden, less the skipped one", n, len(redisDefaults), len(redisHidden))
	}
	var w resp.Writer
	tab.Set(&w, byteArgs([]string{"stream-node-max-entries", "5"}))
	if want := "-ERR CONFIG SET failed (possibly related to argument 'stream-node-max-entries') - can't set immutable config\r\n"; string(w.B) != want {
		t.Errorf("CONFIG SET stream-node-max-entries = %q, want %q", w.B, want)
	}
}

// TestMaxClientsOpenFiles: as Redis, maxclients is lowered at start to
// what the open-files limit allows beyond ReservedFDs, and CONFIG SET
// refuses more with Redis's reason.
func TestMaxClientsOpenFiles(t *testing.T) {
	lim := openFilesLimit()
	if lim == 0 || lim >= 1<<40 {
		// No finite limit to fit: nothing is lowered or refused.
		e, lowered := NewEndpoint("", 1<<30, 1)
		if e.MaxClients() != 1<<30 || lowered != 0 || e.Capacity() != 0 {
			t.Errorf("open-files limit %d: maxclients %d, lowered %d, capacity %d", lim, e.MaxClients(), lowered, e.Capacity())
		}
		return
	}
	capacity := int(lim) - ReservedFDs
	e, lowered := NewEndpoint("", capacity+100, 1)
	if e.MaxClients() != capacity || lowered != capacity+100 || e.Capacity() != capacity {
		t.Errorf("maxclients %d (lowered from %d), capacity %d; want %d", e.MaxClients(), lowered, e.Capacity(), capacity)
	}
	if e2, lowered := NewEndpoint("", 10, 2); e2.MaxClients() != 10 || lowered != 0 || e2.Capacity() != capacity/2 {
		t.Errorf("2 fds per client: maxclients %d, lowered %d, capacity %d", e2.MaxClients(), lowered, e2.Capacity())
	}
	tab := Table{e.MaxClientsParam()}
	w := &resp.Writer{}
	tab.Set(w, [][]byte{[]byte("maxclients"), []byte(strconv.Itoa(capacity + 1))})
	want := "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is not able to handle the specified number of clients, try with " + strconv.Itoa(capacity) + "\r\n"
	if string(w.B) != want {
		t.Errorf("CONFIG SET maxclients past the limit: %q, want %q", w.B, want)
	}
	// From 2^32-32 Redis's 32-bit sum with its reserved descriptors wraps
	// and the value is taken; just below, it is refused.
	for _, tc := range []struct {
		n     int64
		reply string
	}{{1<<32 - 32, "+OK\r\n"}, {1<<32 - 1, "+OK\r\n"}, {1<<32 - 33, want}} {
		w.B = w.B[:0]
		tab.Set(w, [][]byte{[]byte("maxclients"), []byte(strconv.FormatInt(tc.n, 10))})
		if string(w.B) != tc.reply {
			t.Errorf("CONFIG SET maxclients %d: %q, want %q", tc.n, w.B, tc.reply)
		}
	}
}

// TestParseMemory: memory amounts for the command line: Redis's units,
// and nothing that does not say an amount of bytes up to 2^64-1.
func TestParseMemory(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"0mb", 0, true}, {"100", 100, true}, {"5b", 5, true}, {"1k", 1000, true}, {"1KB", 1024, true},
		{"2m", 2000000, true}, {"2Mb", 2 << 20, true}, {"1g", 1000000000, true}, {"1gb", 1 << 30, true},
		{"", 0, false}, {"mb", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {"1 mb", 0, false}, {"1tb", 0, false},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551615kb", 0, false}, {"18446744073709551616", 0, false},
	} {
		got, ok := ParseMemory(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestMemToULL: memory values as Redis 7.0's memtoull reads them, quirks
// included (node/diff_maxmemory_test.go checks them against redis-server).
func TestMemToULL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"1k", 1000, true}, {"1KB", 1024, true}, {"01mb", 1 << 20, true},
		{"", 0, true}, {"mb", 0, true}, {"B", 0, true},
		{"18446744073709551616", 1<<64 - 1, true}, {"18446744073709551615kb", 1<<64 - 1024, true},
		{"17179869184gb", 0, true}, {strings.Repeat("9", 127), 1<<64 - 1, true},
		{strings.Repeat("1", 128), 0, false}, {"-1", 0, false}, {"+1", 0, false}, {" 1", 0, false},
		{"1 ", 0, false}, {"1.5", 0, false}, {"1tb", 0, false},
	} {
		got, ok := MemToULL(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("MemToULL(%.20q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestStrtoll: whole-string strtoll as the multi-word parameters read
// their numbers (TestDiffConfigSetValues checks the reasons built on it
// against redis-server).
func TestStrtoll(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"0", 0, true}, {"+5", 5, true}, {"-05", -5, true}, {" \t7", 7, true},
		{"7 ", 0, false}, {" ", 0, false}, {"-", 0, false}, {"+", 0, false}, {"1.5", 0, false},
		{"0x10", 0, false}, {"99999999999999999999", math.MaxInt64, true},
		{"-99999999999999999999", -math.MaxInt64, true},
	} {
		got, ok := strtoll(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("strtoll(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSameValue: a value written differently from the current one but
// meaning the same is the same (CONFIG SET takes it on a parameter kept
// fixed).
func TestSameValue(t *testing.T) {
	const limits = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
	for _, tc := range []struct {
		name, v, current string
		same             bool
	}{
		{"maxmemory-policy", "NoEviction", "noeviction", true},
		{"maxmemory", "1gb", "1073741824", true},
		{"maxmemory", "1gb", "1000000000", false},
		{"maxmemory-clients", "0%", "0", true},
		{"maxmemory-clients", "5%", "5%", true},
		{"maxmemory-clients", "5%", "5", false},
		{"maxmemory-clients", "-5%", "5%", false},
		{"client-output-buffer-limit", "normal 0 0 0", limits, true},
		{"client-output-buffer-limit", "pubsub 32mb 8mb 60", limits, true},
		{"client-output-buffer-limit", "replica 256mb 64mb 60 normal 0 0 0", limits, true},
		{"client-output-buffer-limit", "NORMAL 0 0 0 Slave 256mb 64mb 60", limits, true},
		{"client-output-buffer-limit", "normal 0 0 1", limits, false},
		{"client-output-buffer-limit", "pubsub 32mb 8mb 61", limits, false},
		{"client-output-buffer-limit", "normal 0 0", limits, false},
		{"client-output-buffer-limit", "", limits, true}, // no class: Redis changes nothing
	} {
		if got := sameValue(tc.name, tc.v, tc.current); got != tc.same {
			t.Errorf("sameValue(%q, %q, %q) = %v, want %v", tc.name, tc.v, tc.current, got, tc.same)
		}
	}
}
