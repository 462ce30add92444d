package engine

import (
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestParseTimeout pins the conversions checked by hand against
// redis-server 7.0.15 (those that block forever cannot be diff-tested
// cheaply): ceill rounds sub-millisecond timeouts up and slightly
// negative ones to 0, and 2^63 ms turns negative.
func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in  string
		ms  int64
		err string
	}{
		{"0", 0, ""},
		{"-0", 0, ""},
		{"1", 1000, ""},
		{"0.1", 100, ""},
		{"0.0004", 1, ""},
		{"-0.0006", 0, ""},
		{"-0.001", 0, ""}, // strtold's -0.001 times 1000 is just above -1
		{"-1.5", 0, resp.ErrTimeoutNegative},
		{"-1", 0, resp.ErrTimeoutNegative},
		{"0x1", 1000, ""},
		{"1e10", 1e13, ""},
		{"9223372036854775.8071", 9223372036854775807, ""},
		{"9223372036854775.8075", 0, resp.ErrTimeoutNegative},
		{"9223372036854776", 0, resp.ErrTimeoutNegative},
		{"1e400", 0, resp.ErrTimeoutNegative},
		{"inf", 0, resp.ErrTimeoutNegative},
		{"-inf", 0, resp.ErrTimeoutNegative},
		{"nan", 0, resp.ErrTimeoutNotFloat},
		{"1e5000", 0, resp.ErrTimeoutNotFloat},
		{"1e-5000", 0, resp.ErrTimeoutNotFloat},
		{"", 0, resp.ErrTimeoutNotFloat},
		{" 1", 0, resp.ErrTimeoutNotFloat},
		{"0x", 0, resp.ErrTimeoutNotFloat},
		{"abc", 0, resp.ErrTimeoutNotFloat},
	}
	for _, tc := range tests {
		ms, err := ParseTimeout([]byte(tc.in))
		if ms != tc.ms || err != tc.err {
			t.Errorf("ParseTimeout(%q) = %d, %q; want %d, %q", tc.in, ms, err, tc.ms, tc.err)
		}
	}
}
