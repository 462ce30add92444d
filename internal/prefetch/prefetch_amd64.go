package prefetch

// Line starts loading the cache line holding address p into every cache
// level (PREFETCHT0). p need not be valid.
//
//go:noescape
func Line(p uintptr)
