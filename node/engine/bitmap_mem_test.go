//go:build !race

package engine

import (
	"math/rand"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
)

// heapBytes is the live heap after a full collection.
func heapBytes() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestBitmapMemory measures the heap a bitmap key costs for the issue's
// three shapes, through the SETBIT handler (the last one through the
// Entry API the handler calls, to keep 10^8 calls quick). It is not built
// with -race, whose bookkeeping would distort nothing in the heap but
// makes 10^8 calls take minutes.
func TestBitmapMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sets 10^8 bits")
	}
	const mb = 1 << 20
	setbit := func(s *strEnv, key string, off int64) {
		s.args = append(s.args[:0], []byte("SETBIT"), []byte(key), strconv.AppendInt(nil, off, 10), []byte("1"))
		s.runBytes(s.args)
	}

	t.Run("one bit at 2^32-1", func(t *testing.T) {
		s := newStrEnv(t)
		setbit(s, "warm", 1) // the shard map and writer exist before measuring
		before := heapBytes()
		setbit(s, "k", 1<<32-1)
		grew := heapBytes() - before
		runtime.KeepAlive(s)
		t.Logf("SETBIT k 4294967295 1: heap +%d bytes (Redis: 512 MB)", grew)
		if s.run("STRLEN", "k") != rInt(512*mb) {
			t.Fatal("length is not 512 MB")
		}
		if grew >= mb {
			t.Fatalf("heap grew %d bytes, limit 1 MB", grew)
		}
	})

	t.Run("10^6 random bits", func(t *testing.T) {
		s := newStrEnv(t)
		setbit(s, "warm", 1)
		rng := rand.New(rand.NewSource(1))
		before := heapBytes()
		for range 1_000_000 {
			setbit(s, "k", rng.Int63n(1<<32))
		}
		grew := heapBytes() - before
		runtime.KeepAlive(s) // the keyspace must be live when measured
		t.Logf("10^6 random bits over 0..2^32-1: heap +%.2f MB (Redis: 512 MB)", float64(grew)/mb)
		if grew >= 8*mb {
			t.Fatalf("heap grew %d bytes, limit 8 MB", grew)
		}
	})

	// The proxy's segmented bitmaps (1 MB segment keys) with thinly
	// spread ids hold one bit per key: the key's cost is then the
	// bitmap's index, which was a 256-page group (10 KB) before groups
	// shrank to 32 pages.
	t.Run("one bit in each of 10^4 keys of up to 1 MB", func(t *testing.T) {
		s := newStrEnv(t)
		setbit(s, "warm", 1)
		rng := rand.New(rand.NewSource(1))
		const keys = 10_000
		before := heapBytes()
		for i := range keys {
			setbit(s, "{sg:"+strconv.Itoa(i)+"}dau", rng.Int63n(1<<23))
		}
		perKey := (heapBytes() - before) / keys
		runtime.KeepAlive(s)
		t.Logf("one bit below 2^23 per key: heap +%d bytes per key (Redis: up to 1 MB)", perKey)
		if perKey >= 3<<10 {
			t.Fatalf("heap grew %d bytes per key, limit 3 KB", perKey)
		}
	})

	t.Run("10^8 consecutive bits", func(t *testing.T) {
		s := newStrEnv(t)
		setbit(s, "k", 0)
		e := s.entry("k")
		before := heapBytes()
		for off := int64(1); off < 100_000_000; off++ {
			e.SetStrBit(off, true)
		}
		grew := heapBytes() - before
		runtime.KeepAlive(s)
		const raw = 100_000_000 / 8
		t.Logf("10^8 consecutive bits: heap +%.3f MB = %.4fx the 12.5 MB of raw bits", float64(grew)/mb, float64(grew)/raw)
		if s.run("BITCOUNT", "k") != rInt(100_000_000) {
			t.Fatal("count differs")
		}
		if float64(grew) > 1.05*raw {
			t.Fatalf("heap grew %d bytes, limit %d", grew, int64(1.05*raw))
		}
	})
}
