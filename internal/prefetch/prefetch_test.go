package prefetch

import (
	"testing"
	"unsafe"
)

// Prefetching any address, valid or not, must neither fault nor change
// memory.
func TestLineNeverFaults(t *testing.T) {
	buf := []byte("unchanged")
	for _, p := range []uintptr{0, 1, ^uintptr(0), uintptr(unsafe.Pointer(&buf[0])), 0xdead0000} {
		Line(p)
	}
	if string(buf) != "unchanged" {
		t.Fatalf("buffer changed: %q", buf)
	}
}

func BenchmarkLine(b *testing.B) {
	buf := make([]byte, 1<<20)
	base := uintptr(unsafe.Pointer(&buf[0]))
	for i := 0; i < b.N; i++ {
		Line(base + uintptr(i*64)&(1<<20-1))
	}
}
