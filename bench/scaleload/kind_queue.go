package scaleload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// queueKind: the reliable-queue pattern on lists q (jobs waiting) and p
// (jobs taken, not yet acknowledged). Producers LPUSH to q; workers move
// the oldest job from q's tail to p's head (LMOVE, BLMOVE, RPOPLPUSH) and
// acknowledge it with LREM p 1 job. Every job pushed and not acknowledged
// must be in exactly one of the lists, in the model's order.
type queueKind struct{}

type queueState struct {
	q, p []string // head first, as LRANGE prints them
}

func (s *queueState) clone() state {
	return &queueState{q: slices.Clone(s.q), p: slices.Clone(s.p)}
}

func (s *queueState) push(jobs ...string) {
	for _, j := range jobs {
		s.q = slices.Insert(s.q, 0, j)
	}
}

// move takes q's tail to p's head and returns it ("" if q is empty).
func (s *queueState) move() string {
	if len(s.q) == 0 {
		return ""
	}
	j := s.q[len(s.q)-1]
	s.q = s.q[:len(s.q)-1]
	s.p = slices.Insert(s.p, 0, j)
	return j
}

// ack removes the first j from p, as LREM p 1 j does; it reports whether
// there was one.
func (s *queueState) ack(j string) bool {
	i := slices.Index(s.p, j)
	if i < 0 {
		return false
	}
	s.p = slices.Delete(s.p, i, i+1)
	return true
}

func (queueKind) keys(g *group) []string { return []string{g.key("q"), g.key("p")} }

func job(g *group) string { return "j" + strconv.Itoa(g.next()) }

// Bounds that keep the lists short whatever the mix of operations.
const (
	queueMaxWaiting = 16
	queueMaxTaken   = 8
)

func (queueKind) populate(ctx context.Context, pipe redis.Pipeliner, g *group, r *rand.Rand, _ time.Time, _ *Config) state {
	s := &queueState{}
	jobs := make([]any, 3+r.IntN(5))
	for i := range jobs {
		j := job(g)
		jobs[i] = j
		s.push(j)
	}
	pipe.LPush(ctx, g.key("q"), jobs...)
	for range 2 {
		s.move()
		pipe.LMove(ctx, g.key("q"), g.key("p"), "RIGHT", "LEFT")
	}
	return s
}

func (queueKind) next(g *group, st state, r *rand.Rand, cfg *Config, write bool) *op {
	s := st.(*queueState)
	q, p := g.key("q"), g.key("p")
	if !write {
		switch r.IntN(3) {
		case 0, 1:
			key := []string{q, p}[r.IntN(2)]
			var got *redis.IntCmd
			return &op{name: "LLEN", key: key,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.LLen(ctx, key); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					s := st.(*queueState)
					want := int64(len(s.q))
					if key == p {
						want = int64(len(s.p))
					}
					if got.Val() != want {
						return fmt.Sprintf("LLEN %s: got %d, want %d", key, got.Val(), want)
					}
					return ""
				}}
		default:
			var got *redis.StringSliceCmd
			return &op{name: "LRANGE", key: p,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.LRange(ctx, p, 0, -1); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					if want := st.(*queueState).p; !slices.Equal(got.Val(), want) {
						return fmt.Sprintf("LRANGE %s: got %q, want %q", p, got.Val(), want)
					}
					return ""
				}}
		}
	}
	action := r.IntN(3) // push, take, ack
	switch {
	case len(s.p) >= queueMaxTaken:
		action = 2
	case len(s.q) >= queueMaxWaiting:
		action = 1
	case action == 2 && len(s.p) == 0:
		action = 0
	case action == 1 && len(s.q) == 0 && r.IntN(4) != 0:
		action = 0 // now and then a take from an empty queue (nil reply)
	}
	switch action {
	case 0:
		jobs := []any{job(g)}
		if r.IntN(3) == 0 {
			jobs = append(jobs, job(g))
		}
		eff := func(st state, _ time.Time) {
			for _, j := range jobs {
				st.(*queueState).push(j.(string))
			}
		}
		var got *redis.IntCmd
		return &op{name: "LPUSH", key: q, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.LPush(ctx, q, jobs...); return got.Err() },
			ok: func(st state, sent, _ time.Time) string {
				eff(st, sent)
				if want := int64(len(st.(*queueState).q)); got.Val() != want {
					return fmt.Sprintf("LPUSH %s: length %d, want %d", q, got.Val(), want)
				}
				return ""
			}}
	case 1:
		eff := func(st state, _ time.Time) { st.(*queueState).move() }
		var got *redis.StringCmd
		name, run := "LMOVE", func(ctx context.Context, rdb *redis.Client) error {
			got = rdb.LMove(ctx, q, p, "RIGHT", "LEFT")
			return got.Err()
		}
		switch r.IntN(3) {
		case 1:
			name, run = "RPOPLPUSH", func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.RPopLPush(ctx, q, p)
				return got.Err()
			}
		case 2:
			if len(s.q) > 0 { // BLMOVE only where it does not block
				name, run = "BLMOVE", func(ctx context.Context, rdb *redis.Client) error {
					got = rdb.BLMove(ctx, q, p, "RIGHT", "LEFT", time.Second)
					return got.Err()
				}
			}
		}
		return &op{name: name, key: q, write: true, effect: eff, run: run,
			ok: func(st state, _, _ time.Time) string {
				want := st.(*queueState).move()
				if got.Err() == redis.Nil && want == "" {
					return ""
				}
				if got.Err() == redis.Nil || got.Val() != want {
					return fmt.Sprintf("%s %s %s: got %q (%v), want %q", name, q, p, got.Val(), got.Err(), want)
				}
				return ""
			}}
	default:
		j := s.p[len(s.p)-1] // the oldest taken job, usually
		if r.IntN(4) == 0 {
			j = s.p[r.IntN(len(s.p))]
		}
		eff := func(st state, _ time.Time) { st.(*queueState).ack(j) }
		var got *redis.IntCmd
		return &op{name: "LREM", key: p, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.LRem(ctx, p, 1, j); return got.Err() },
			ok: func(st state, _, _ time.Time) string {
				if want := b2i(st.(*queueState).ack(j)); got.Val() != want {
					return fmt.Sprintf("LREM %s 1 %s: got %d, want %d", p, j, got.Val(), want)
				}
				return ""
			}}
	}
}

func (queueKind) check(ctx context.Context, rdb *redis.Client, g *group, st state, _ *Config) ([]string, error) {
	s := st.(*queueState)
	pipe := rdb.Pipeline()
	q := pipe.LRange(ctx, g.key("q"), 0, -1)
	p := pipe.LRange(ctx, g.key("p"), 0, -1)
	if err := execPipe(ctx, pipe); err != nil {
		return nil, err
	}
	var probs []string
	if !slices.Equal(q.Val(), s.q) {
		probs = append(probs, fmt.Sprintf("LRANGE %s: got %q, want %q", g.key("q"), q.Val(), s.q))
	}
	if !slices.Equal(p.Val(), s.p) {
		probs = append(probs, fmt.Sprintf("LRANGE %s: got %q, want %q", g.key("p"), p.Val(), s.p))
	}
	return probs, nil
}
