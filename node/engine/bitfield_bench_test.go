package engine

import "testing"

// Benchmarks of BITFIELD through engine.Ctx (locks excluded). Run with
// go test ./node/engine -run '^$' -bench Bitfield -benchmem.

// BenchmarkBitfieldIncrby is the streak counter.
func BenchmarkBitfieldIncrby(b *testing.B) {
	s := newStrEnv(b)
	c := benchCtx(b, s, "BITFIELD", "streaks", "INCRBY", "u8", "#40", "1")
	benchRun(b, s, c, cmdBitfield)
}

// BenchmarkBitfieldIncrbyBitmap increments a field of a paged Bitmap.
func BenchmarkBitfieldIncrbyBitmap(b *testing.B) {
	s := newStrEnv(b)
	s.run("SETBIT", "big", "100000000", "1")
	c := benchCtx(b, s, "BITFIELD", "big", "OVERFLOW", "WRAP", "INCRBY", "i12", "99999990", "3")
	benchRun(b, s, c, cmdBitfield)
}

// BenchmarkBitfieldGetPacked reads flags and rank packed in one byte.
func BenchmarkBitfieldGetPacked(b *testing.B) {
	s := newStrEnv(b)
	s.run("BITFIELD", "users", "SET", "u8", "#1000", "173")
	c := benchCtx(b, s, "BITFIELD_RO", "users", "GET", "u4", "8000", "GET", "u4", "8004")
	benchRun(b, s, c, cmdBitfieldRO)
}
