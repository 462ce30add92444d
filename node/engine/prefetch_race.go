//go:build race

package engine

// racyTableSlot prefetches nothing under the race detector, which would
// rightly report its unlocked read (see prefetch_norace.go).
func racyTableSlot(*keyTable, uint64) uintptr { return 0 }
