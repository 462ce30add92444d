//go:build !race

package engine

import "unsafe"

// racyTableSlot returns the address of the slot where a probe for hash h
// starts in t, read without t's shard lock: only a prefetch may use it. A
// concurrent resize can make it stale (or mix the old table's address
// with the new one's length); a prefetch of such an address is merely
// wasted, and nothing dereferences it.
func racyTableSlot(t *keyTable, h uint64) uintptr {
	hdr := (*struct {
		data     uintptr
		len, cap int
	})(unsafe.Pointer(&t.slots))
	n := hdr.len
	if n == 0 || hdr.data == 0 {
		return 0
	}
	return hdr.data + uintptr(h&uint64(n-1))*unsafe.Sizeof(keySlot{})
}
