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
		MemorySection(Memory{Used: 1, RSS: 1, Peak: 1, MaxMemory: tc.n}, func(k, v string) { got[k] = v })
		if got["maxmemory"] != tc.raw || got["maxmemory_human"] != tc.human {
			t.Errorf("maxmemory %d: maxmemory:%s maxmemory_human:%s, want %s and %s",
				tc.n, got["maxmemory"], got["maxmemory_human"], tc.raw, tc.human)
		}
	}
}

// TestMemorySectionDerived: the fields INFO memory derives from the
// runtime's figures, as Redis derives them from its allocator's.
func TestMemorySectionDerived(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Memory
		want map[string]string
	}{
		{"grown", Memory{Used: 1000, Startup: 400, Active: 1200, Resident: 2000, RSS: 3000, Peak: 1000, System: 1 << 30}, map[string]string{
			"used_memory_overhead": "400", "used_memory_startup": "400", "used_memory_dataset": "600",
			"used_memory_dataset_perc": "100.00%", "allocator_allocated": "1000", "allocator_active": "1200",
			"allocator_resident": "2000", "total_system_memory": "1073741824", "total_system_memory_human": "1.00G",
			"allocator_frag_ratio": "1.20", "allocator_frag_bytes": "200", "allocator_rss_ratio": "1.67",
			"allocator_rss_bytes": "800", "rss_overhead_ratio": "1.50", "rss_overhead_bytes": "1000",
			"mem_fragmentation_ratio": "3.00", "mem_fragmentation_bytes": "2000",
			"used_memory_lua": "0", "used_memory_lua_human": "0B", "mem_clients_normal": "0",
		}},
		{"shrunk below the start", Memory{Used: 300, Startup: 400, Active: 300, Resident: 300, RSS: 300, Peak: 900}, map[string]string{
			"used_memory_overhead": "300", "used_memory_dataset": "0", "used_memory_dataset_perc": "0.00%",
			"used_memory_peak_perc": "33.33%",
		}},
	} {
		got := map[string]string{}
		var order []string
		MemorySection(tc.m, func(k, v string) {
			if _, dup := got[k]; dup {
				t.Errorf("%s: field %s twice", tc.name, k)
			}
			got[k] = v
			order = append(order, k)
		})
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s:%s, want %s", tc.name, k, got[k], v)
			}
		}
		if len(order) != 51 {
			t.Errorf("%s: %d fields, Redis 7.0.15 has 51", tc.name, len(order))
		}
	}
}
