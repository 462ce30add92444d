package engine

import (
	"strconv"
	"testing"
)

// Benchmarks of the strings hot paths through engine.Ctx, as the
// dispatcher calls them (locks excluded). Run with
// go test ./node/engine -run '^$' -bench String -benchmem.

// benchCtx prepares a Ctx for one command over a fixed argument vector.
func benchCtx(b *testing.B, s *strEnv, args ...string) *Ctx {
	b.Helper()
	av := make([][]byte, len(args))
	for i, a := range args {
		av[i] = []byte(a)
	}
	s.w.B = make([]byte, 0, 64<<10)
	return &Ctx{KS: s.ks, Args: av, W: &s.w, Now: s.now, Shard: s.ks.ShardOf(av[1])}
}

func benchRun(b *testing.B, s *strEnv, c *Ctx, h Handler) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(s.w.B) > 60<<10 {
			s.w.B = s.w.B[:0]
		}
		h(c)
	}
}

func BenchmarkStringGet(b *testing.B) {
	s := newStrEnv(b)
	s.run("SET", "key:000000000001", "xxx")
	c := benchCtx(b, s, "GET", "key:000000000001")
	benchRun(b, s, c, cmdGet)
}

func BenchmarkStringSetOverwrite(b *testing.B) {
	s := newStrEnv(b)
	s.run("SET", "key:000000000001", "xxx")
	c := benchCtx(b, s, "SET", "key:000000000001", "yyy")
	benchRun(b, s, c, cmdSet)
}

// BenchmarkStringSetNew measures creating keys (what storing needs: the
// entry, the value and the map slot).
func BenchmarkStringSetNew(b *testing.B) {
	s := newStrEnv(b)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte("key:" + strconv.Itoa(i))
	}
	c := benchCtx(b, s, "SET", "k", "xxx")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(keys) == 0 {
			b.StopTimer()
			s.ks = New()
			c.KS = s.ks
			b.StartTimer()
		}
		s.w.B = s.w.B[:0]
		c.Args[1] = keys[i%len(keys)]
		c.Shard = s.ks.ShardOf(c.Args[1])
		cmdSet(c)
	}
}

func BenchmarkStringIncr(b *testing.B) {
	s := newStrEnv(b)
	c := benchCtx(b, s, "INCR", "counter")
	benchRun(b, s, c, cmdIncr)
}

func BenchmarkStringMset(b *testing.B) {
	s := newStrEnv(b)
	args := []string{"MSET"}
	for i := 0; i < 10; i++ {
		args = append(args, "{t}key:"+strconv.Itoa(i), "xxx")
	}
	c := benchCtx(b, s, args...)
	benchRun(b, s, c, cmdMset)
}

func BenchmarkStringMget(b *testing.B) {
	s := newStrEnv(b)
	args := []string{"MGET"}
	for i := 0; i < 10; i++ {
		k := "{t}key:" + strconv.Itoa(i)
		s.run("SET", k, "xxx")
		args = append(args, k)
	}
	c := benchCtx(b, s, args...)
	benchRun(b, s, c, cmdMget)
}

func BenchmarkStringIncrbyfloat(b *testing.B) {
	s := newStrEnv(b)
	c := benchCtx(b, s, "INCRBYFLOAT", "f", "1.5")
	benchRun(b, s, c, cmdIncrbyfloat)
}
