package redisinfo

import "testing"

// TestMemorySectionMaxmemory: maxmemory as Redis 7.0.15 prints it after
// CONFIG SET maxmemory <n>: the number signed (%lld), its human form
// unsigned, so values past 2^63-1 read negative beside their bytes.
func TestMemorySectionMaxmemory(t *testing.T) {
	for _, tc := range []struct {
		n          uint64
		raw, human string
	}{
		{0, "0", "0B"},
		{10 << 20, "10485760", "10.00M"},
		{1 << 30, "1073741824", "1.00G"},
		{1<<63 - 1, "9223372036854775807", "9223372036854775807B"},
		{1 << 63, "-9223372036854775808", "9223372036854775808B"},
		{1<<64 - 1, "-1", "18446744073709551615B"},
	} {
		got := map[string]string{}
		MemorySection(1, 1, 1, tc.n, func(k, v string) { got[k] = v })
		if got["maxmemory"] != tc.raw || got["maxmemory_human"] != tc.human {
			t.Errorf("maxmemory %d: maxmemory:%s maxmemory_human:%s, want %s and %s",
				tc.n, got["maxmemory"], got["maxmemory_human"], tc.raw, tc.human)
		}
	}
}
