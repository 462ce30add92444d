package node_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffStringsLCS covers LCS's options, their errors and order of
// checks, missing keys, WRONGTYPE, the proto-max-bulk-len refusal, and
// SUBSTR (GETRANGE under another name).
func TestDiffStringsLCS(t *testing.T) {
	big := strings.Repeat("a", 12000) // 12001² cells of 4 bytes: past 512 MB
	runStrScripts(t, []strScript{
		{"options", [][]string{
			sc("SET", "{t}a", "ohmytext"), sc("SET", "{t}b", "mynewtext"),
			sc("LCS", "{t}a", "{t}b"), sc("LCS", "{t}a", "{t}b", "LEN"), sc("LCS", "{t}a", "{t}b", "len"),
			sc("LCS", "{t}a", "{t}b", "IDX"), sc("LCS", "{t}a", "{t}b", "IDX", "MINMATCHLEN", "4"),
			sc("LCS", "{t}a", "{t}b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"),
			sc("LCS", "{t}a", "{t}b", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "-5"),
			sc("LCS", "{t}a", "{t}b", "WITHMATCHLEN"), sc("LCS", "{t}a", "{t}b", "MINMATCHLEN", "3"),
			sc("LCS", "{t}a", "{t}b", "IDX", "IDX", "MINMATCHLEN", "1", "MINMATCHLEN", "2"),
			sc("LCS", "{t}a", "{t}b", "IDX", "LEN"), sc("LCS", "{t}a", "{t}b", "LEN", "IDX"),
			sc("LCS", "{t}a", "{t}b", "MINMATCHLEN"), sc("LCS", "{t}a", "{t}b", "MINMATCHLEN", "x"),
			sc("LCS", "{t}a", "{t}b", "MINMATCHLEN", "9223372036854775808"), sc("LCS", "{t}a", "{t}b", "BAD"),
			sc("LCS", "{t}a", "{t}b", "LEN", "BAD"), sc("LCS", "{t}a"), sc("LCS"),
		}},
		{"keys", [][]string{
			sc("SET", "{t}a", "abc"), sc("LCS", "{t}a", "{t}missing"), sc("LCS", "{t}missing", "{t}a", "IDX"),
			sc("LCS", "{t}m1", "{t}m2", "LEN"), sc("LCS", "{t}a", "{t}a", "IDX", "WITHMATCHLEN"),
			sc("LCS", "{t}a", "{t}list"), sc("LCS", "{t}list", "{t}a", "BAD"), sc("LCS", "{t}list", "{t}missing", "LEN"),
			sc("SET", "{t}n", "12345"), sc("SET", "{t}n2", "2468"), sc("LCS", "{t}n", "{t}n2", "IDX", "WITHMATCHLEN"),
			sc("SET", "{t}bin", "a\x00b\xffc"), sc("SET", "{t}bin2", "\x00\xffab"), sc("LCS", "{t}bin", "{t}bin2"),
			sc("SETBIT", "{t}bm", "80000", "1"), sc("LCS", "{t}bm", "{t}a", "LEN"), sc("LCS", "{t}bm", "{t}n", "IDX"),
			sc("SET", "{t}big", big), sc("SET", "{t}big2", big), sc("LCS", "{t}big", "{t}big2", "LEN"),
			sc("LCS", "{t}big", "{t}missing"), sc("LCS", "{t}big", "{t}bm", "IDX", "LEN"),
			sc("LCS", "{t}big", "{t}missing", "LEN"), sc("LCS", "{t}missing", "{t}big", "IDX", "WITHMATCHLEN"),
			sc("SET", "{t}empty", ""), sc("LCS", "{t}empty", "{t}big", "LEN"), sc("LCS", "{t}big", "{t}empty", "IDX"),
			sc("LCS", "{t}big", "{t}a", "LEN"), sc("LCS", "{t}a", "{t}big", "LEN"), sc("LCS", "{t}a", "{t}big", "IDX"),
		}},
		{"substr", [][]string{
			sc("SET", "{t}s", "hello"), sc("SUBSTR", "{t}s", "1", "3"), sc("SUBSTR", "{t}s", "-3", "-1"),
			sc("SUBSTR", "{t}s", "x", "1"), sc("SUBSTR", "{t}missing", "0", "1"), sc("SUBSTR", "{t}list", "0", "1"),
			sc("SUBSTR", "{t}s", "0"),
		}},
	})
}

// TestDiffStringsLCSRandom compares LCS on random pairs over small
// alphabets, where many subsequences tie and only Redis's exact walk
// back through the table gives the same string and ranges.
func TestDiffStringsLCSRandom(t *testing.T) {
	p := difftest.Start(t)
	rng := rand.New(rand.NewPCG(7, 11))
	word := func() string {
		alpha := "ab"[:1+rng.IntN(2)] + "cdxyz"[:rng.IntN(5)]
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	opts := [][]string{nil, {"LEN"}, {"IDX"}, {"IDX", "WITHMATCHLEN"}, {"IDX", "MINMATCHLEN", "2"},
		{"IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"}, {"MINMATCHLEN", "2"}}
	for i := range 300 {
		proto := 2 + i%2
		p.DoProto(t, proto, "SET", "{r}a", word())
		p.DoProto(t, proto, "SET", "{r}b", word())
		p.DoProto(t, proto, append([]string{"LCS", "{r}a", "{r}b"}, opts[rng.IntN(len(opts))]...)...)
	}
}
