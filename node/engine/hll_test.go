package engine

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestHLLRedisBytes: values and replies captured from redis-server 7.0.15
// (node/diff_hll_test.go checks many more against a live one).
func TestHLLRedisBytes(t *testing.T) {
	s := newStrEnv(t)
	runSteps(t, s, []step{
		st(rInt(1), "PFADD", "h", "a", "b", "c"),
		st(rBulk("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ"), "GET", "h"),
		st(rInt(0), "PFADD", "h", "a"),
		st(rInt(3), "PFCOUNT", "h"),
		// The count is cached in the header, valid bit clear.
		st(rBulk("HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00`\xf3\x80P\xb1\x84K\xfb\x80BZ"), "GET", "h"),
		st(rInt(1), "PFADD", "new"),
		st(rBulk("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"), "GET", "new"),
		st(rInt(0), "PFADD", "new"),
		st(rInt(0), "PFCOUNT", "new"),
		st(rInt(0), "PFCOUNT", "missing"),
	})
	for _, tc := range [][3]string{
		{"ENCODING", "h", "+sparse\r\n"},
		{"DECODE", "h", rBulk("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603")},
		{"DECODE", "missing", rErr(resp.ErrPFDebugNoKey)},
		{"what", "h", rErr("ERR Unknown PFDEBUG subcommand 'what'")},
		{"TODENSE", "h", rInt(1)},
		{"TODENSE", "h", rInt(0)},
		{"ENCODING", "h", "+dense\r\n"},
		{"DECODE", "h", rErr(resp.ErrPFDebugNotSparse)},
	} {
		if got := pfdebug(s, tc[0], tc[1]); got != tc[2] {
			t.Errorf("PFDEBUG %s %s = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
	if got := pfdebug(s, "GETREG", "h"); !strings.HasPrefix(got, "*16384\r\n:0\r\n") || strings.Count(got, ":1\r\n") != 2 || strings.Count(got, ":2\r\n") != 1 {
		t.Errorf("PFDEBUG GETREG: %.40q...", got)
	}
}

// pfdebug runs PFDEBUG sub key on the key's shard (strEnv locks the shard
// of the first argument).
func pfdebug(s *strEnv, sub, key string) string {
	args := [][]byte{[]byte("PFDEBUG"), []byte(sub), []byte(key)}
	s.w.B = s.w.B[:0]
	c := Ctx{KS: s.ks, Args: args, W: &s.w, Now: s.now, Shard: s.ks.ShardOf(args[2])}
	cmdPfdebug(&c)
	return string(s.w.B)
}

// TestHLLMurmur64A pins the hash on every tail length (0 to 16 bytes)
// against Redis's MurmurHash64A: the register and run length each element
// gets on redis-server 7.0.15 (PFADD of the one element into a new key,
// then PFDEBUG DECODE: "Z:<register> v:<run>,1 Z:...").
func TestHLLMurmur64A(t *testing.T) {
	want := []struct {
		index int
		count uint8
	}{
		{5938, 2}, {13225, 4}, {10237, 1}, {2874, 1}, {13495, 1}, {14243, 2},
		{14197, 3}, {8436, 1}, {594, 2}, {7667, 3}, {1021, 2}, {13543, 1},
		{10985, 2}, {8624, 1}, {11294, 2}, {15725, 4}, {5949, 1},
	}
	const digits = "0123456789abcdefg"
	for n, w := range want {
		i, c := hllPatLen([]byte(digits[:n]))
		if i != w.index || c != w.count {
			t.Errorf("%q: register %d run %d, want %d %d", digits[:n], i, c, w.index, w.count)
		}
	}
}

// TestHLLAccuracy: PFCOUNT within 2% of the truth at 10^5 and 10^6.
func TestHLLAccuracy(t *testing.T) {
	s := newStrEnv(t)
	var buf [][]byte
	added := 0
	for _, n := range []int{100_000, 1_000_000} {
		if testing.Short() && n > 100_000 {
			break
		}
		for added < n {
			buf = buf[:0]
			buf = append(buf, []byte("PFADD"), []byte("acc"))
			for range min(1000, n-added) {
				buf = append(buf, []byte("element:"+strconv.Itoa(added)))
				added++
			}
			s.runBytes(buf)
		}
		got, err := strconv.ParseInt(s.run("PFCOUNT", "acc")[1:len(s.run("PFCOUNT", "acc"))-2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if e := math.Abs(float64(got)-float64(n)) / float64(n); e > 0.02 {
			t.Errorf("PFCOUNT after %d distinct = %d (error %.2f%%)", n, got, 100*e)
		} else {
			t.Logf("PFCOUNT after %d distinct = %d (error %.3f%%)", n, got, 100*e)
		}
		if l := len(s.entry("acc").Str); l != hllDenseSize {
			t.Errorf("length %d, want dense %d", l, hllDenseSize)
		}
	}
}

// TestHLLSparseModel drives random register updates through the sparse
// code and checks it, after every update, against a plain array of
// registers: same registers, same change reports, always a well-formed
// encoding, within hll-sparse-max-bytes until promoted, and the same
// estimate as the dense form of the same registers.
func TestHLLSparseModel(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var model [hllRegisters]uint8
		s := newHLL()
		// Concentrate updates in a window sometimes, so runs of VALs form
		// and merge; use big counts rarely to force promotion.
		lo, width := 0, hllRegisters
		if seed%3 == 1 {
			lo, width = rng.IntN(hllRegisters-64), 64
		}
		for step := range 4000 {
			r := lo + rng.IntN(width)
			c := uint8(1 + rng.IntN(5))
			if rng.IntN(8000) == 0 {
				c = uint8(33 + rng.IntN(10))
			}
			var res int
			s, res = hllSet(s, r, c)
			want := 0
			if c > model[r] {
				model[r] = c
				want = 1
			}
			if res != want {
				t.Fatalf("seed %d step %d: set(%d,%d) = %d, want %d", seed, step, r, c, res, want)
			}
			if s[4] == hllEncSparse && len(s) > hllSparseMaxBytes {
				t.Fatalf("seed %d: sparse length %d", seed, len(s))
			}
			if step%97 == 0 || s[4] == hllEncDense {
				checkRegisters(t, s, &model)
			}
			if s[4] == hllEncDense {
				break
			}
		}
		checkRegisters(t, s, &model)
		d := s
		if s[4] == hllEncSparse {
			var ok bool
			if d, ok = sparseToDense(s); !ok {
				t.Fatal("sparseToDense failed on a valid sparse HLL")
			}
		}
		cs, _ := hllCount(s)
		cd, _ := hllCount(d)
		if cr := rawCount(&model); cs != cd || cd != cr {
			t.Errorf("seed %d: counts sparse %d dense %d raw %d", seed, cs, cd, cr)
		}
	}
}

func checkRegisters(t *testing.T, s []byte, model *[hllRegisters]uint8) {
	t.Helper()
	var got [hllRegisters]uint8
	if !hllMerge(&got, s) {
		t.Fatalf("encoding does not cover 16384 registers: %q", s[hllHdrSize:])
	}
	if got != *model {
		for r := range got {
			if got[r] != model[r] {
				t.Fatalf("register %d = %d, want %d", r, got[r], model[r])
			}
		}
	}
}

// TestHLLSizes: sparse while small, never more than the dense 12 KB.
func TestHLLSizes(t *testing.T) {
	s := newStrEnv(t)
	limits := map[int]int{10: 60, 100: 400, 1000: 2400}
	for n := 1; n <= 200_000; n *= 10 {
		args := []string{"PFADD", "size:" + strconv.Itoa(n)}
		for i := range n {
			args = append(args, strconv.Itoa(i))
		}
		s.run(args...)
		l := len(s.entry(args[1]).Str)
		if l > hllDenseSize {
			t.Errorf("%d elements: %d bytes", n, l)
		}
		if max, ok := limits[n]; ok && l > max {
			t.Errorf("%d elements: %d bytes, want sparse under %d", n, l, max)
		}
		t.Logf("%d elements: %d bytes", n, l)
	}
}

// TestHLLErrors: other types get the generic WRONGTYPE, strings that are
// not HLLs Redis's HLL text, corrupted sparse forms INVALIDOBJ.
func TestHLLErrors(t *testing.T) {
	s := newStrEnv(t)
	putList(s, "{a}list")
	s.run("SET", "{a}str", "not an hll at all")
	s.run("SET", "{a}int", "1234567")
	s.run("SET", "{a}one", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00")
	s.run("SET", "{a}bad", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe")
	wrong, notHLL, corrupt := rErr(resp.ErrWrongType), rErr(resp.ErrNotHLL), rErr(resp.ErrCorruptHLL)
	runSteps(t, s, []step{
		st(wrong, "PFADD", "{a}list", "x"),
		st(wrong, "PFCOUNT", "{a}list"),
		st(wrong, "PFCOUNT", "{a}x", "{a}list"),
		st(wrong, "PFMERGE", "{a}list"),
		st(wrong, "PFMERGE", "{a}d", "{a}list"),
		st(notHLL, "PFADD", "{a}str", "x"),
		st(notHLL, "PFCOUNT", "{a}int"),
		st(notHLL, "PFMERGE", "{a}d", "{a}int"),
		st(corrupt, "PFCOUNT", "{a}bad"),
		st(corrupt, "PFCOUNT", "{a}bad", "{a}y"),
		st(corrupt, "PFMERGE", "{a}d", "{a}bad"),
		// Sparse opcodes for 16383 registers: Redis notices only when an
		// update falls past them.
		st(rInt(1), "PFADD", "{a}bad", "x", "y"),
		st(corrupt, "PFADD", "{a}one", "x", "y"),
	})
	if got := pfdebug(s, "ENCODING", "{a}list"); got != wrong {
		t.Errorf("PFDEBUG ENCODING list: %q", got)
	}
	if s.entry("{a}d") != nil {
		t.Error("a failed PFMERGE created its destination")
	}
}

// TestHLLStatsAndDirty: the counters INFO shows move as in Redis.
func TestHLLStatsAndDirty(t *testing.T) {
	s := newStrEnv(t)
	dirty := func() int64 { return s.ks.Changes() }
	d0 := dirty()
	s.run("PFADD", "h", "a", "b", "c") // create + 3 registers
	if got := dirty() - d0; got != 4 {
		t.Errorf("PFADD creating with 3 new registers: dirty +%d, want 4", got)
	}
	d0 = dirty()
	s.run("PFCOUNT", "h") // refreshes the cache
	s.run("PFCOUNT", "h") // cached
	s.run("PFADD", "h", "a")
	if got := dirty() - d0; got != 1 {
		t.Errorf("PFCOUNT refresh, PFCOUNT cached, PFADD no-op: dirty +%d, want 1", got)
	}
	hits, miss := s.ks.Stats.KeyspaceHits.Load(), s.ks.Stats.KeyspaceMiss.Load()
	s.run("PFCOUNT", "h", "{h}none")
	s.run("PFMERGE", "h", "{h}none")
	if dh, dm := s.ks.Stats.KeyspaceHits.Load()-hits, s.ks.Stats.KeyspaceMiss.Load()-miss; dh != 2 || dm != 2 {
		t.Errorf("hits +%d misses +%d, want +2 +2", dh, dm)
	}
}

// TestHLLWatchTouch: a change touches the key for WATCH; a no-op does not.
func TestHLLWatchTouch(t *testing.T) {
	s := newStrEnv(t)
	s.run("PFADD", "w", "a")
	s.run("PFCOUNT", "w")
	sh := s.ks.ShardOf([]byte("w"))
	for _, tc := range []struct {
		args  []string
		dirty bool
	}{
		{[]string{"PFADD", "w", "a"}, false},
		{[]string{"PFCOUNT", "w"}, false},
		{[]string{"PFADD", "w", "b"}, true},
		{[]string{"PFCOUNT", "w"}, true},
		{[]string{"PFMERGE", "w"}, true},
	} {
		w := &Watch{}
		sh.AddWatch([]byte("w"), w)
		s.run(tc.args...)
		if w.Dirty.Load() != tc.dirty {
			t.Errorf("%q: watch dirty %v, want %v", tc.args, w.Dirty.Load(), tc.dirty)
		}
		sh.RemoveWatch("w", w)
	}
}

// TestHLLEncodingRaw: an embstr-sized HLL set with SET turns raw once an
// HLL command writes or caches into it, as Redis unshares it.
func TestHLLEncodingRaw(t *testing.T) {
	s := newStrEnv(t)
	s.run("SET", "e", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff")
	if got := s.entry("e").Enc; got != EncEmbstr {
		t.Fatalf("after SET: %s", got)
	}
	s.run("PFCOUNT", "e")
	if got := s.entry("e").Enc; got != EncRaw {
		t.Errorf("after PFCOUNT: %s", got)
	}
}

func TestHLLSelfTest(t *testing.T) {
	if testing.Short() {
		t.Skip("ten million additions")
	}
	if msg := hllSelfTest(42); msg != "" {
		t.Fatal(msg)
	}
}

// TestHLLZeroAlloc: the steady-state paths allocate nothing.
func TestHLLZeroAlloc(t *testing.T) {
	s := newStrEnv(t)
	for i := range 5000 {
		s.run("PFADD", "dense", strconv.Itoa(i))
	}
	s.run("PFADD", "sparse", "a", "b")
	s.w.B = make([]byte, 0, 1<<16)
	var ele [8]byte
	i := uint64(0)
	for _, tc := range []struct {
		name string
		args [][]byte
		next func()
	}{
		{"PFADD dense", [][]byte{[]byte("PFADD"), []byte("dense"), ele[:]}, func() { i++; binary.LittleEndian.PutUint64(ele[:], i) }},
		{"PFADD sparse no-op", [][]byte{[]byte("PFADD"), []byte("sparse"), []byte("a")}, func() {}},
		{"PFCOUNT cached", [][]byte{[]byte("PFCOUNT"), []byte("sparse")}, func() {}},
	} {
		c := &Ctx{KS: s.ks, Args: tc.args, W: &s.w, Now: s.now, Shard: s.ks.ShardOf(tc.args[1])}
		h := s.h[string(bytesToLower(tc.args[0]))]
		h(c)
		if n := testing.AllocsPerRun(200, func() {
			tc.next()
			s.w.B = s.w.B[:0]
			h(c)
		}); n != 0 {
			t.Errorf("%s: %.1f allocations per run", tc.name, n)
		}
	}
}

func bytesToLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}
