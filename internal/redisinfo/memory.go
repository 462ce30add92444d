package redisinfo

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
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

// MemorySection gives the INFO memory fields shardgate reports, in Redis's
// order: MemoryFields, the peak percentage, maxmemory (0: none; the policy
// is always noeviction),
// the fragmentation ratio (rss over used), the allocator (Go's runtime,
// not jemalloc) and lazy-free counts (none: frees are immediate).
func MemorySection(used, rss, peak int64, maxmemory uint64, field func(k, v string)) {
	MemoryFields(used, rss, peak, field)
	field("used_memory_peak_perc", fmt.Sprintf("%.2f%%", float64(used)*100/float64(max(peak, 1))))
	// Redis prints maxmemory signed (%lld) and its human form unsigned.
	field("maxmemory", strconv.FormatInt(int64(maxmemory), 10))
	if maxmemory > math.MaxInt64 {
		field("maxmemory_human", strconv.FormatUint(maxmemory, 10)+"B")
	} else {
		field("maxmemory_human", BytesToHuman(int64(maxmemory)))
	}
	field("maxmemory_policy", "noeviction")
	field("mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rss)/float64(max(used, 1))))
	field("mem_allocator", "go-"+runtime.Version())
	field("lazyfree_pending_objects", "0")
	field("lazyfreed_objects", "0")
}
