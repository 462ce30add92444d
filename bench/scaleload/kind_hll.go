package scaleload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// hllKind: one HyperLogLog, key h, whose elements are e0 .. e(n-1) of its
// group. Its estimate cannot be predicted without Redis's algorithm, so
// Verify recomputes it: it adds the model's elements to a scratch key of
// the same slot (hv) and compares the two PFCOUNTs, which must be equal
// when the registers survived intact.
type hllKind struct{}

type hllState struct {
	n     int   // elements added: e0 .. e(n-1)
	count int64 // last PFCOUNT read since the last PFADD; -1: unknown
}

func (s *hllState) clone() state { c := *s; return &c }

func (hllKind) keys(g *group) []string { return []string{g.key("h")} }

func element(g *group, i int) string { return "g" + strconv.Itoa(g.idx) + "e" + strconv.Itoa(i) }

func elements(g *group, from, to int) []any {
	out := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, element(g, i))
	}
	return out
}

func (hllKind) populate(ctx context.Context, pipe redis.Pipeliner, g *group, r *rand.Rand, _ time.Time, _ *Config) state {
	n := 5 + r.IntN(40)
	if g.big() {
		n = 5000 // past hll-sparse-max-bytes: a dense HLL
	}
	pipe.PFAdd(ctx, g.key("h"), elements(g, 0, n)...)
	return &hllState{n: n, count: -1}
}

func (hllKind) next(g *group, st state, r *rand.Rand, _ *Config, write bool) *op {
	s := st.(*hllState)
	k := g.key("h")
	var got *redis.IntCmd
	if !write {
		return &op{name: "PFCOUNT", key: k,
			run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.PFCount(ctx, k); return got.Err() },
			ok: func(st state, _, _ time.Time) string {
				s := st.(*hllState)
				if s.count >= 0 && got.Val() != s.count {
					return fmt.Sprintf("PFCOUNT %s: got %d, want %d as read before", k, got.Val(), s.count)
				}
				s.count = got.Val()
				return ""
			}}
	}
	add := 1 + r.IntN(4)
	els := elements(g, s.n, s.n+add)
	if s.n > 0 {
		els = append(els, element(g, r.IntN(s.n))) // one already there
	}
	n := s.n + add
	eff := func(st state, _ time.Time) { s := st.(*hllState); s.n, s.count = n, -1 }
	return &op{name: "PFADD", key: k, write: true, effect: eff,
		run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.PFAdd(ctx, k, els...); return got.Err() },
		ok: func(st state, sent, _ time.Time) string {
			eff(st, sent)
			if v := got.Val(); v != 0 && v != 1 {
				return fmt.Sprintf("PFADD %s: got %d, want 0 or 1", k, v)
			}
			return ""
		}}
}

func (hllKind) check(ctx context.Context, rdb *redis.Client, g *group, st state, _ *Config) ([]string, error) {
	s := st.(*hllState)
	k, scratch := g.key("h"), g.key("hv")
	pipe := rdb.Pipeline()
	pipe.Del(ctx, scratch)
	pipe.PFAdd(ctx, scratch, elements(g, 0, s.n)...)
	want := pipe.PFCount(ctx, scratch)
	pipe.Del(ctx, scratch)
	got := pipe.PFCount(ctx, k)
	typ := pipe.Type(ctx, k)
	if err := execPipe(ctx, pipe); err != nil {
		return nil, err
	}
	var probs []string
	if typ.Val() != "string" {
		probs = append(probs, fmt.Sprintf("TYPE %s: got %s, want string", k, typ.Val()))
	}
	if got.Val() != want.Val() {
		probs = append(probs, fmt.Sprintf("PFCOUNT %s: got %d, want %d (the model's %d elements)", k, got.Val(), want.Val(), s.n))
	}
	if s.count >= 0 && got.Val() != s.count {
		probs = append(probs, fmt.Sprintf("PFCOUNT %s: got %d, want %d as read during the run", k, got.Val(), s.count))
	}
	return probs, nil
}
