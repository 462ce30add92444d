package engine

import (
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"pgregory.net/rapid"
)

// isSubsequence reports whether s is a subsequence of of.
func isSubsequence(s, of []byte) bool {
	i := 0
	for j := 0; i < len(s) && j < len(of); j++ {
		if s[i] == of[j] {
			i++
		}
	}
	return i == len(s)
}

// TestLCSProperties checks, on random strings, that the two-row LEN
// computation agrees with the full table's subsequence, and that the
// subsequence is one of both strings (the diff tests check it is Redis's
// one among equals).
func TestLCSProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.SliceOfN(rapid.ByteRange('a', 'd'), 0, 60)
		a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
		var w resp.Writer
		lcsReply(&w, a, b, lcsOpts{})
		v, n, err := resp.ParseValue(w.B)
		if err != nil || n != len(w.B) || v.Type != '$' {
			t.Fatalf("reply %q: %v", w.B, err)
		}
		s := v.Str
		if n := lcsLength(a, b); int(n) != len(s) {
			t.Fatalf("LEN %d, subsequence %q of length %d", n, s, len(s))
		}
		if !isSubsequence(s, a) || !isSubsequence(s, b) {
			t.Fatalf("%q is not a subsequence of both %q and %q", s, a, b)
		}
	})
}

func BenchmarkLCS(b *testing.B) {
	x := make([]byte, 2000)
	y := make([]byte, 2000)
	for i := range x {
		x[i] = byte('a' + i*7%13)
		y[i] = byte('a' + i*5%11)
	}
	var w resp.Writer
	b.Run("string", func(b *testing.B) {
		for b.Loop() {
			w.Reset()
			lcsReply(&w, x, y, lcsOpts{})
		}
	})
	b.Run("len", func(b *testing.B) {
		for b.Loop() {
			lcsLength(x, y)
		}
	})
}
