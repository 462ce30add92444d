package scaleload

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// firstPageBits: Verify reads the bitmap's first 8 KB whole (GETRANGE)
// and compares every bit, set or clear; set bits beyond are read one by
// one (GETBIT), and BITCOUNT proves there are no others.
const firstPageBits = 8 << 10 * 8

// bitmapKind: one bitmap, key bm.
type bitmapKind struct{}

type bitmapState struct {
	set    map[int64]struct{} // offsets of the set bits
	strlen int64              // the string's length: SETBIT to 0 grows it too
}

func (s *bitmapState) clone() state {
	return &bitmapState{set: maps.Clone(s.set), strlen: s.strlen}
}

func (s *bitmapState) setBit(off int64, v bool) {
	if v {
		s.set[off] = struct{}{}
	} else {
		delete(s.set, off)
	}
	s.strlen = max(s.strlen, off/8+1)
}

// randomSet returns a random set offset, or -1.
func (s *bitmapState) randomSet(r *rand.Rand) int64 {
	if len(s.set) == 0 {
		return -1
	}
	i := r.IntN(len(s.set))
	for off := range s.set {
		if i == 0 {
			return off
		}
		i--
	}
	return -1
}

func (bitmapKind) keys(g *group) []string { return []string{g.key("bm")} }

// offset is a random bit offset: mostly in the first page, the rest up
// to BitmapMaxOffset, so the bitmap is sparse and long.
func offset(r *rand.Rand, cfg *Config) int64 {
	if r.IntN(10) < 7 {
		return r.Int64N(firstPageBits)
	}
	return firstPageBits + r.Int64N(cfg.BitmapMaxOffset-firstPageBits)
}

func (bitmapKind) populate(ctx context.Context, pipe redis.Pipeliner, g *group, r *rand.Rand, _ time.Time, cfg *Config) state {
	s := &bitmapState{set: make(map[int64]struct{})}
	n := 8
	if g.big() {
		n = 1000 // some pages dense
	}
	for range n {
		s.setBit(offset(r, cfg), true)
	}
	for _, off := range slices.Sorted(maps.Keys(s.set)) {
		pipe.SetBit(ctx, g.key("bm"), off, 1)
	}
	return s
}

func (bitmapKind) next(g *group, st state, r *rand.Rand, cfg *Config, write bool) *op {
	s := st.(*bitmapState)
	k := g.key("bm")
	var got *redis.IntCmd
	if !write {
		switch r.IntN(3) {
		case 0:
			return &op{name: "BITCOUNT", key: k,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.BitCount(ctx, k, nil); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					if want := int64(len(st.(*bitmapState).set)); got.Val() != want {
						return fmt.Sprintf("BITCOUNT %s: got %d, want %d", k, got.Val(), want)
					}
					return ""
				}}
		default:
			off := s.randomSet(r)
			if off < 0 || r.IntN(2) == 0 {
				off = offset(r, cfg)
			}
			return &op{name: "GETBIT", key: k,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.GetBit(ctx, k, off); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					_, set := st.(*bitmapState).set[off]
					if want := b2i(set); got.Val() != want {
						return fmt.Sprintf("GETBIT %s %d: got %d, want %d", k, off, got.Val(), want)
					}
					return ""
				}}
		}
	}
	off, v := offset(r, cfg), true
	if o := s.randomSet(r); o >= 0 && r.IntN(3) == 0 {
		off, v = o, false
	}
	eff := func(st state, _ time.Time) { st.(*bitmapState).setBit(off, v) }
	return &op{name: "SETBIT", key: k, write: true, effect: eff,
		run: func(ctx context.Context, rdb *redis.Client) error {
			got = rdb.SetBit(ctx, k, off, int(b2i(v)))
			return got.Err()
		},
		ok: func(st state, sent, _ time.Time) string {
			_, was := st.(*bitmapState).set[off]
			eff(st, sent)
			if want := b2i(was); got.Val() != want {
				return fmt.Sprintf("SETBIT %s %d: old bit %d, want %d", k, off, got.Val(), want)
			}
			return ""
		}}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (bitmapKind) check(ctx context.Context, rdb *redis.Client, g *group, st state, _ *Config) ([]string, error) {
	s := st.(*bitmapState)
	k := g.key("bm")
	pipe := rdb.Pipeline()
	count := pipe.BitCount(ctx, k, nil)
	strlen := pipe.StrLen(ctx, k)
	page := pipe.GetRange(ctx, k, 0, firstPageBits/8-1)
	var far []int64
	for off := range s.set {
		if off >= firstPageBits {
			far = append(far, off)
		}
	}
	slices.Sort(far)
	bits := make([]*redis.IntCmd, len(far))
	for i, off := range far {
		bits[i] = pipe.GetBit(ctx, k, off)
	}
	if err := execPipe(ctx, pipe); err != nil {
		return nil, err
	}
	var probs []string
	if want := int64(len(s.set)); count.Val() != want {
		probs = append(probs, fmt.Sprintf("BITCOUNT %s: got %d, want %d", k, count.Val(), want))
	}
	if strlen.Val() != s.strlen {
		probs = append(probs, fmt.Sprintf("STRLEN %s: got %d, want %d", k, strlen.Val(), s.strlen))
	}
	want := make([]byte, min(s.strlen, firstPageBits/8))
	for off := range s.set {
		if off < firstPageBits {
			want[off/8] |= 0x80 >> (off % 8)
		}
	}
	if got := page.Val(); got != string(want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		probs = append(probs, fmt.Sprintf("GETRANGE %s 0 %d: differs from byte %d (got %d bytes, want %d)", k, firstPageBits/8-1, i, len(got), len(want)))
	}
	for i, off := range far {
		if bits[i].Val() != 1 {
			probs = append(probs, fmt.Sprintf("GETBIT %s %d: got %d, want 1", k, off, bits[i].Val()))
		}
	}
	return probs, nil
}
