package redisinfo

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// BytesToHuman formats a byte count as Redis's bytesToHuman does for
// INFO's *_human fields.
func BytesToHuman(n int64) string {
	const k = 1024.0
	f := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case f < k*k:
		return fmt.Sprintf("%.2fK", f/k)
	case f < k*k*k:
		return fmt.Sprintf("%.2fM", f/(k*k))
	case f < k*k*k*k:
		return fmt.Sprintf("%.2fG", f/(k*k*k))
	case f < k*k*k*k*k:
		return fmt.Sprintf("%.2fT", f/(k*k*k*k))
	case f < k*k*k*k*k*k:
		return fmt.Sprintf("%.2fP", f/(k*k*k*k*k))
	}
	return strconv.FormatInt(n, 10) + "B"
}

// Memory is what INFO memory reports. The Go runtime stands in for
// Redis's allocator: heap objects for what is allocated, the heap's spans
// in use for what is active, the heap held from the OS for what is
// resident.
type Memory struct {
	Used      int64 // used_memory and allocator_allocated: heap objects
	Startup   int64 // used_memory_startup: Used once the server had started
	Active    int64 // allocator_active: heap spans in use
	Resident  int64 // allocator_resident: heap memory held from the OS
	RSS       int64 // used_memory_rss: all memory held from the OS
	Peak      int64 // used_memory_peak
	MaxMemory uint64
	System    int64 // total_system_memory
}

// ReadMemory fills Used, Active, Resident and RSS from the Go runtime, and
// System from the machine.
func ReadMemory() Memory {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{
		Used:     int64(ms.HeapAlloc),
		Active:   int64(ms.HeapInuse),
		Resident: int64(ms.HeapSys - ms.HeapReleased),
		RSS:      int64(ms.Sys - ms.HeapReleased),
		System:   SystemMemory(),
	}
}

// MemoryFields gives INFO memory's used_memory, used_memory_rss and
// used_memory_peak fields with their _human forms, in Redis's order.
func MemoryFields(used, rss, peak int64, field func(k, v string)) {
	for _, f := range []struct {
		name string
		n    int64
	}{{"used_memory", used}, {"used_memory_rss", rss}, {"used_memory_peak", peak}} {
		field(f.name, strconv.FormatInt(f.n, 10))
		field(f.name+"_human", BytesToHuman(f.n))
	}
}

// MemorySection gives INFO memory with Redis 7.0's fields in its order.
// What shardgate lacks the mechanism for reads 0: Lua and functions,
// replication buffers, the cluster bus, lazy freeing (frees are
// immediate), defragmentation. The policy is always noeviction. The
// overhead is what the server held once started; the rest is the
// dataset. Client buffers are not measured (mem_clients_normal is 0, as
// CLIENT LIST's buffer fields), nor is the append-only log's buffer.
func MemorySection(m Memory, field func(k, v string)) {
	num := func(k string, n int64) { field(k, strconv.FormatInt(n, 10)) }
	ratio := func(k string, a, b int64) { field(k, fmt.Sprintf("%.2f", float64(a)/float64(max(b, 1)))) }
	MemoryFields(m.Used, m.RSS, m.Peak, field)
	field("used_memory_peak_perc", fmt.Sprintf("%.2f%%", float64(m.Used)*100/float64(max(m.Peak, 1))))
	overhead := min(m.Startup, m.Used)
	num("used_memory_overhead", overhead)
	num("used_memory_startup", m.Startup)
	dataset := m.Used - overhead
	num("used_memory_dataset", dataset)
	// Redis divides by what the server grew since it started (1 if it
	// did not grow).
	field("used_memory_dataset_perc", fmt.Sprintf("%.2f%%", float64(dataset)*100/float64(max(m.Used-m.Startup, 1))))
	num("allocator_allocated", m.Used)
	num("allocator_active", m.Active)
	num("allocator_resident", m.Resident)
	num("total_system_memory", m.System)
	field("total_system_memory_human", BytesToHuman(m.System))
	for _, k := range [...]string{"used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human",
		"used_memory_scripts_eval", "number_of_cached_scripts", "number_of_functions", "number_of_libraries",
		"used_memory_vm_functions", "used_memory_vm_total", "used_memory_vm_total_human",
		"used_memory_functions", "used_memory_scripts", "used_memory_scripts_human"} {
		if strings.HasSuffix(k, "_human") {
			field(k, "0B")
		} else {
			field(k, "0")
		}
	}
	// Redis prints maxmemory signed (%lld) and its human form unsigned.
	field("maxmemory", strconv.FormatInt(int64(m.MaxMemory), 10))
	if m.MaxMemory > math.MaxInt64 {
		field("maxmemory_human", strconv.FormatUint(m.MaxMemory, 10)+"B")
	} else {
		field("maxmemory_human", BytesToHuman(int64(m.MaxMemory)))
	}
	field("maxmemory_policy", "noeviction")
	for i, f := range m.fragmentation() {
		names := [...][2]string{{"allocator_frag_ratio", "allocator_frag_bytes"},
			{"allocator_rss_ratio", "allocator_rss_bytes"}, {"rss_overhead_ratio", "rss_overhead_bytes"},
			{"mem_fragmentation_ratio", "mem_fragmentation_bytes"}}[i]
		ratio(names[0], f[0], f[1])
		num(names[1], f[0]-f[1])
	}
	for _, k := range [...]string{"mem_not_counted_for_evict", "mem_replication_backlog",
		"mem_total_replication_buffers", "mem_clients_slaves", "mem_clients_normal",
		"mem_cluster_links", "mem_aof_buffer"} {
		field(k, "0")
	}
	field("mem_allocator", "go-"+runtime.Version())
	field("active_defrag_running", "0")
	field("lazyfree_pending_objects", "0")
	field("lazyfreed_objects", "0")
}

// Memory doctor replies, as Redis 7.0 gives them for an instance using
// under 5 MB and for one where it finds nothing to report.
const (
	DoctorEmpty   = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	DoctorNoIssue = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	// MallocStatsNone is MEMORY MALLOC-STATS's reply from a Redis built
	// without jemalloc: shardgate's allocator is Go's.
	MallocStatsNone = "Stats not supported for the current allocator"
)

// MemoryDoctor is MEMORY DOCTOR's report. Redis's detector looks for
// allocator fragmentation, a past peak and big client buffers; the Go
// runtime's figures are not an allocator's, and client buffers are not
// measured, so past Redis's "too little to tell" it reports nothing.
func MemoryDoctor(m Memory) string {
	if m.Used < 5<<20 {
		return DoctorEmpty
	}
	return DoctorNoIssue
}

// MemoryStats writes MEMORY STATS's reply for m, with keys keys of which
// expires have a TTL (all in db 0). The figures are INFO memory's under
// Redis's names; db.0's are what Redis 7.0's hash tables (main, expires,
// and the slot index of cluster mode) take for that many keys.
func MemoryStats(w *resp.Writer, m Memory, keys, expires int64) {
	overhead := min(m.Startup, m.Used)
	net := m.Used - m.Startup
	dataset := m.Used - overhead
	n := 27
	if keys > 0 {
		n++
	}
	w.Map(n)
	num := func(k string, v int64) { w.BulkString(k); w.Int(v) }
	// Redis computes its percentages and ratios in single precision.
	ratio := func(k string, a, b int64) {
		w.BulkString(k)
		w.Double(float64(float32(float64(a) / float64(max(b, 1)))))
	}
	num("peak.allocated", m.Peak)
	num("total.allocated", m.Used)
	num("startup.allocated", m.Startup)
	for _, k := range [...]string{"replication.backlog", "clients.slaves", "clients.normal",
		"cluster.links", "aof.buffer", "lua.caches", "functions.caches"} {
		num(k, 0)
	}
	if keys > 0 {
		w.BulkString("db.0")
		w.Map(3)
		num("overhead.hashtable.main", dictOverhead(keys)+keys*robjSize)
		num("overhead.hashtable.expires", dictOverhead(expires))
		num("overhead.hashtable.slot-to-keys", keys*slotToKeysEntry)
	}
	num("overhead.total", overhead)
	num("keys.count", keys)
	perKey := int64(0)
	if keys > 0 && net > 0 {
		perKey = net / keys
	}
	num("keys.bytes-per-key", perKey)
	num("dataset.bytes", dataset)
	ratio("dataset.percentage", dataset*100, max(net, 1))
	ratio("peak.percentage", m.Used*100, m.Peak)
	num("allocator.allocated", m.Used)
	num("allocator.active", m.Active)
	num("allocator.resident", m.Resident)
	for i, f := range m.fragmentation() {
		names := [...][2]string{{"allocator-fragmentation.ratio", "allocator-fragmentation.bytes"},
			{"allocator-rss.ratio", "allocator-rss.bytes"}, {"rss-overhead.ratio", "rss-overhead.bytes"},
			{"fragmentation", "fragmentation.bytes"}}[i]
		ratio(names[0], f[0], f[1])
		num(names[1], f[0]-f[1])
	}
}

// fragmentation is what INFO memory and MEMORY STATS compare, in Redis's
// order, each as a ratio and a difference of a larger figure over a
// smaller one: the allocator's active pages over what it allocated, its
// resident memory over its active pages, the process's RSS over the
// allocator's resident memory, and RSS over what is allocated.
func (m Memory) fragmentation() [4][2]int64 {
	return [4][2]int64{{m.Active, m.Used}, {m.Resident, m.Active}, {m.RSS, m.Resident}, {m.RSS, m.Used}}
}

// Sizes in Redis 7.0 on 64 bits: a dict entry, a bucket pointer, the
// value object of a key, and a key's entry in cluster mode's per-slot
// key lists.
const (
	dictEntrySize   = 24
	bucketSize      = 8
	robjSize        = 16
	slotToKeysEntry = 16
)

// dictOverhead is what a Redis dict holding n entries takes: the entries
// and its buckets, a power of two from 4 that grows when full.
func dictOverhead(n int64) int64 {
	if n == 0 {
		return 0
	}
	buckets := int64(4)
	for buckets < n {
		buckets *= 2
	}
	return n*dictEntrySize + buckets*bucketSize
}
