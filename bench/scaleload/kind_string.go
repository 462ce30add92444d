package scaleload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// stringKind: keys a and b (no TTL), x (TTL), n (counter).
type stringKind struct{}

type stringState struct {
	a, b, x  string
	xLo, xHi int64 // x's expiry range, unix ms
	n        int64
}

func (s *stringState) clone() state { c := *s; return &c }

func (stringKind) keys(g *group) []string {
	return []string{g.key("a"), g.key("b"), g.key("x"), g.key("n")}
}

func (stringKind) populate(ctx context.Context, pipe redis.Pipeliner, g *group, r *rand.Rand, now time.Time, cfg *Config) state {
	s := &stringState{n: r.Int64N(1000)}
	s.a, s.b, s.x = value(g, r, g.big()), value(g, r, g.big()), value(g, r, g.big())
	s.xLo = pxat(now, r, cfg)
	s.xHi = s.xLo
	pipe.MSet(ctx, g.key("a"), s.a, g.key("b"), s.b)
	pipe.SetArgs(ctx, g.key("x"), s.x, redis.SetArgs{ExpireAt: time.UnixMilli(s.xLo)})
	pipe.Set(ctx, g.key("n"), s.n, 0)
	return s
}

// pxat is an absolute expiry (unix ms) TTL after now plus up to a tenth
// of the TTL, so keys do not share one.
func pxat(now time.Time, r *rand.Rand, cfg *Config) int64 {
	return unixMs(now.Add(cfg.TTL)) + r.Int64N(cfg.TTL.Milliseconds()/10+1)
}

func (stringKind) next(g *group, _ state, r *rand.Rand, cfg *Config, write bool) *op {
	a, b, x, n := g.key("a"), g.key("b"), g.key("x"), g.key("n")
	if !write {
		switch r.IntN(4) {
		case 0:
			var got *redis.StringCmd
			return &op{name: "GET", key: a,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.Get(ctx, a); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					return stringMismatch(a, got, st.(*stringState).a)
				}}
		case 1:
			var got *redis.SliceCmd
			return &op{name: "MGET", key: a,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.MGet(ctx, a, b); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					s := st.(*stringState)
					v := got.Val()
					if len(v) != 2 || v[0] != any(s.a) || v[1] != any(s.b) {
						return fmt.Sprintf("MGET %s %s: got %.60q, want [%.40q %.40q]", a, b, v, s.a, s.b)
					}
					return ""
				}}
		case 2:
			var got *redis.StringCmd
			return &op{name: "GET", key: x,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.Get(ctx, x); return got.Err() },
				ok: func(st state, sent, acked time.Time) string {
					s := st.(*stringState)
					must, may := presence(s.xLo, s.xHi, unixMs(sent), unixMs(acked), cfg.TTLTolerance.Milliseconds())
					switch {
					case got.Err() == redis.Nil && must:
						return fmt.Sprintf("GET %s: missing before its expiry %d", x, s.xLo)
					case got.Err() == nil && !may:
						return fmt.Sprintf("GET %s: present after its expiry %d", x, s.xHi)
					case got.Err() == nil && got.Val() != s.x:
						return fmt.Sprintf("GET %s: got %.60q, want %.60q", x, got.Val(), s.x)
					}
					return ""
				}}
		default:
			var got *redis.StringCmd
			return &op{name: "GET", key: n,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.Get(ctx, n); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					want := st.(*stringState).n
					if v, err := got.Int64(); err != nil || v != want {
						return fmt.Sprintf("GET %s: got %q (%v), want %d", n, got.Val(), got.Err(), want)
					}
					return ""
				}}
		}
	}
	switch r.IntN(6) {
	case 0:
		v := value(g, r, g.big())
		eff := func(st state, _ time.Time) { s := st.(*stringState); s.a = v }
		var got *redis.StatusCmd
		return &op{name: "SET", key: a, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.Set(ctx, a, v, 0); return got.Err() },
			ok:  okStatus("SET "+a, &got, eff)}
	case 1:
		va, vb := value(g, r, g.big()), value(g, r, g.big())
		eff := func(st state, _ time.Time) { s := st.(*stringState); s.a, s.b = va, vb }
		var got *redis.StatusCmd
		return &op{name: "MSET", key: a, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.MSet(ctx, a, va, b, vb)
				return got.Err()
			},
			ok: okStatus("MSET "+a, &got, eff)}
	case 2:
		v := value(g, r, g.big())
		// An ambiguous SET PX may run any time after it was sent.
		eff := func(st state, sent time.Time) {
			s := st.(*stringState)
			s.x, s.xLo, s.xHi = v, unixMs(sent.Add(cfg.TTL)), noUpperBound
		}
		var got *redis.StatusCmd
		return &op{name: "SET PX", key: x, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.Set(ctx, x, v, cfg.TTL)
				return got.Err()
			},
			ok: func(st state, sent, acked time.Time) string {
				if m := okStatus("SET PX "+x, &got, eff)(st, sent, acked); m != "" {
					return m
				}
				st.(*stringState).xHi = unixMs(acked.Add(cfg.TTL))
				return ""
			}}
	case 3:
		v := value(g, r, g.big())
		at := pxat(time.Now(), r, cfg)
		eff := func(st state, _ time.Time) { s := st.(*stringState); s.x, s.xLo, s.xHi = v, at, at }
		var got *redis.StatusCmd
		return &op{name: "SET PXAT", key: x, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.SetArgs(ctx, x, v, redis.SetArgs{ExpireAt: time.UnixMilli(at)})
				return got.Err()
			},
			ok: okStatus("SET PXAT "+x, &got, eff)}
	case 4:
		eff := func(st state, _ time.Time) { st.(*stringState).n++ }
		var got *redis.IntCmd
		return &op{name: "INCR", key: n, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.Incr(ctx, n); return got.Err() },
			ok: func(st state, sent, _ time.Time) string {
				s := st.(*stringState)
				if got.Val() != s.n+1 {
					return fmt.Sprintf("INCR %s: got %d, want %d", n, got.Val(), s.n+1)
				}
				eff(st, sent)
				return ""
			}}
	default:
		// MULTI SET b INCR n EXEC: both or neither, never half.
		v := value(g, r, g.big())
		eff := func(st state, _ time.Time) { s := st.(*stringState); s.b = v; s.n++ }
		var set *redis.StatusCmd
		var incr *redis.IntCmd
		return &op{name: "MULTI", key: b, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					set = p.Set(ctx, b, v, 0)
					incr = p.Incr(ctx, n)
					return nil
				})
				return err
			},
			ok: func(st state, sent, _ time.Time) string {
				s := st.(*stringState)
				if set.Val() != "OK" || incr.Val() != s.n+1 {
					return fmt.Sprintf("MULTI SET %s INCR %s: got %q %d, want OK %d", b, n, set.Val(), incr.Val(), s.n+1)
				}
				eff(st, sent)
				return ""
			}}
	}
}

// okStatus is the ok of a write answered +OK.
func okStatus(what string, got **redis.StatusCmd, eff func(state, time.Time)) func(state, time.Time, time.Time) string {
	return func(st state, sent, _ time.Time) string {
		if (*got).Val() != "OK" {
			return fmt.Sprintf("%s: got %q, want OK", what, (*got).Val())
		}
		eff(st, sent)
		return ""
	}
}

func stringMismatch(key string, got *redis.StringCmd, want string) string {
	if got.Err() == redis.Nil {
		return fmt.Sprintf("GET %s: missing, want %.60q", key, want)
	}
	if got.Val() != want {
		return fmt.Sprintf("GET %s: got %.60q, want %.60q", key, got.Val(), want)
	}
	return ""
}

func (stringKind) check(ctx context.Context, rdb *redis.Client, g *group, st state, cfg *Config) ([]string, error) {
	s := st.(*stringState)
	ks := stringKind{}.keys(g)
	pipe := rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(ks))
	ttls := make([]*redis.Cmd, len(ks))
	for i, k := range ks {
		gets[i] = pipe.Get(ctx, k)
		ttls[i] = pipe.Do(ctx, "PTTL", k)
	}
	t0 := time.Now()
	if err := execPipe(ctx, pipe); err != nil {
		return nil, err
	}
	t1 := time.Now()
	tol := cfg.TTLTolerance.Milliseconds()
	var probs []string
	for i, want := range []string{s.a, s.b} {
		if m := stringMismatch(ks[i], gets[i], want); m != "" {
			probs = append(probs, m)
		}
		if m := ttlProblem(intVal(ttls[i]), unixMs(t0), unixMs(t1), 0, 0, tol); m != "" && gets[i].Err() == nil {
			probs = append(probs, ks[i]+": "+m)
		}
	}
	must, may := presence(s.xLo, s.xHi, unixMs(t0), unixMs(t1), tol)
	switch x := gets[2]; {
	case x.Err() == redis.Nil && must:
		probs = append(probs, fmt.Sprintf("%s: missing before its expiry %d", ks[2], s.xLo))
	case x.Err() == nil && !may:
		probs = append(probs, fmt.Sprintf("%s: present after its expiry %d", ks[2], s.xHi))
	case x.Err() == nil:
		if x.Val() != s.x {
			probs = append(probs, fmt.Sprintf("GET %s: got %.60q, want %.60q", ks[2], x.Val(), s.x))
		}
		if m := ttlProblem(intVal(ttls[2]), unixMs(t0), unixMs(t1), s.xLo, s.xHi, tol); m != "" {
			probs = append(probs, ks[2]+": "+m)
		}
	}
	if v, err := gets[3].Int64(); err != nil || v != s.n {
		probs = append(probs, fmt.Sprintf("GET %s: got %q (%v), want %d", ks[3], gets[3].Val(), gets[3].Err(), s.n))
	}
	if m := ttlProblem(intVal(ttls[3]), unixMs(t0), unixMs(t1), 0, 0, tol); m != "" && gets[3].Err() == nil {
		probs = append(probs, ks[3]+": "+m)
	}
	return probs, nil
}
