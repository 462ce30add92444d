package servercmd

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestParseShutdown: the options Redis 7.0.15 accepts, any case, and the
// combinations it refuses with a syntax error (node/diff_conn_test.go and
// proxy's TestShutdownArgumentsMatchRedis compare the errors with a real
// redis-server).
func TestParseShutdown(t *testing.T) {
	for _, tc := range []struct {
		args string
		want Shutdown
		err  string
	}{
		{"SHUTDOWN", Shutdown{}, ""},
		{"SHUTDOWN nosave NOW", Shutdown{NoSave: true, Now: true}, ""},
		{"SHUTDOWN SAVE force", Shutdown{Save: true, Force: true}, ""},
		{"SHUTDOWN now now", Shutdown{Now: true}, ""},
		{"SHUTDOWN ABORT", Shutdown{Abort: true}, ""},
		{"SHUTDOWN abort abort", Shutdown{Abort: true}, ""},
		{"SHUTDOWN ABORT NOW", Shutdown{}, resp.ErrSyntax},
		{"SHUTDOWN FORCE ABORT", Shutdown{}, resp.ErrSyntax},
		{"SHUTDOWN NOSAVE SAVE", Shutdown{}, resp.ErrSyntax},
		{"SHUTDOWN NOW FOO", Shutdown{}, resp.ErrSyntax},
		{"SHUTDOWN SAVEX", Shutdown{}, resp.ErrSyntax},
	} {
		var args [][]byte
		for _, w := range strings.Fields(tc.args) {
			args = append(args, []byte(w))
		}
		got, err := ParseShutdown(args)
		if got != tc.want || err != tc.err {
			t.Errorf("%s: %+v %q, want %+v %q", tc.args, got, err, tc.want, tc.err)
		}
	}
}

// TestParseWait: numreplicas is checked before the timeout, which is whole
// milliseconds and not negative (node/diff_blocking_test.go and the
// proxy's TestDiffServerRepliesProxy compare with a real redis-server).
func TestParseWait(t *testing.T) {
	for _, tc := range []struct {
		args  string
		n, ms int64
		err   string
	}{
		{"WAIT 0 0", 0, 0, ""},
		{"WAIT 2 150", 2, 150, ""},
		{"WAIT -1 9223372036854775807", -1, 9223372036854775807, ""},
		{"WAIT x -1", 0, 0, resp.ErrNotInteger},
		{"WAIT 01 0", 0, 0, resp.ErrNotInteger},
		{"WAIT 1 1.5", 0, 0, resp.ErrTimeoutNotInt},
		{"WAIT 1 9223372036854775808", 0, 0, resp.ErrTimeoutNotInt},
		{"WAIT 1 -1", 0, 0, resp.ErrTimeoutNegative},
	} {
		var args [][]byte
		for _, w := range strings.Fields(tc.args) {
			args = append(args, []byte(w))
		}
		n, ms, err := ParseWait(args)
		if n != tc.n || ms != tc.ms || err != tc.err {
			t.Errorf("%s: %d %d %q, want %d %d %q", tc.args, n, ms, err, tc.n, tc.ms, tc.err)
		}
	}
}

// TestWaitAtOnce: without replicas WAIT blocks only for counts that stay
// positive in Redis's 32-bit copy (node/diff_blocking_test.go compares the
// replies and the blocking with a real redis-server).
func TestWaitAtOnce(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want bool
	}{
		{0, true}, {-1, true}, {1, false}, {2147483647, false}, {2147483648, true},
		{4294967295, true}, {4294967296, true}, {4294967297, false}, {9223372036854775807, true},
		{-9223372036854775808, true}, {-4294967295, true},
	} {
		if got := WaitAtOnce(tc.n); got != tc.want {
			t.Errorf("WaitAtOnce(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}
