package scaleload

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// streamKind: stream s with consumer group g and consumers c1, c2, c3.
// Entries get explicit ids (entry i is "<i+1>-1"), so the state after an
// ambiguous XADD is known. XREADGROUP delivers new entries (pending, one
// delivery), XCLAIM moves pending entries to another consumer (one
// delivery more), XACK acknowledges some; entries stay pending all along,
// so a migration must carry PELs, owners and delivery counts.
type streamKind struct{}

const (
	streamGroup   = "g"
	streamField   = "v"
	streamMaxPEL  = 12 // above: acknowledge
	streamMaxLead = 8  // undelivered entries above which XADD waits
)

var streamConsumers = []string{"c1", "c2", "c3"}

type pending struct {
	consumer   string
	deliveries int64
}

type streamState struct {
	values    []string        // entry i's field v
	delivered int             // entries 0 .. delivered-1 were delivered to g
	pel       map[int]pending // by entry index
}

func (s *streamState) clone() state {
	return &streamState{values: slices.Clone(s.values), delivered: s.delivered, pel: maps.Clone(s.pel)}
}

func entryID(i int) string { return strconv.Itoa(i+1) + "-1" }

func (s *streamState) add(v string) { s.values = append(s.values, v) }

// read delivers up to n new entries to consumer c and returns their
// indexes.
func (s *streamState) read(c string, n int) []int {
	var out []int
	for ; n > 0 && s.delivered < len(s.values); n-- {
		s.pel[s.delivered] = pending{consumer: c, deliveries: 1}
		out = append(out, s.delivered)
		s.delivered++
	}
	return out
}

// claim gives the pending entries among idx to c and returns those it
// claimed.
func (s *streamState) claim(c string, idx []int) []int {
	var out []int
	for _, i := range idx {
		if p, ok := s.pel[i]; ok {
			s.pel[i] = pending{consumer: c, deliveries: p.deliveries + 1}
			out = append(out, i)
		}
	}
	return out
}

// ack acknowledges the entries among idx that are pending and returns
// how many.
func (s *streamState) ack(idx []int) int64 {
	var n int64
	for _, i := range idx {
		if _, ok := s.pel[i]; ok {
			delete(s.pel, i)
			n++
		}
	}
	return n
}

// somePending returns up to n distinct pending entries, in random order.
func (s *streamState) somePending(r *rand.Rand, n int) []int {
	all := slices.Sorted(maps.Keys(s.pel))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(n, len(all))]
}

func (streamKind) keys(g *group) []string { return []string{g.key("s")} }

func (streamKind) populate(ctx context.Context, pipe redis.Pipeliner, g *group, r *rand.Rand, _ time.Time, _ *Config) state {
	k := g.key("s")
	s := &streamState{pel: make(map[int]pending)}
	for i := range 4 + r.IntN(6) {
		v := value(g, r, i == 0 && g.big())
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: entryID(len(s.values)), Values: []any{streamField, v}})
		s.add(v)
	}
	pipe.XGroupCreate(ctx, k, streamGroup, "0")
	for _, c := range streamConsumers {
		pipe.XGroupCreateConsumer(ctx, k, streamGroup, c)
	}
	n := 3
	s.read("c1", n)
	pipe.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streamGroup, Consumer: "c1", Streams: []string{k, ">"}, Count: int64(n), Block: -1})
	s.claim("c2", []int{0})
	pipe.XClaim(ctx, &redis.XClaimArgs{Stream: k, Group: streamGroup, Consumer: "c2", Messages: []string{entryID(0)}})
	s.ack([]int{1})
	pipe.XAck(ctx, k, streamGroup, entryID(1))
	return s
}

func ids(idx []int) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = entryID(x)
	}
	return out
}

// messagesMismatch compares entries read with the model's entries idx.
func messagesMismatch(what string, got []redis.XMessage, s *streamState, idx []int) string {
	ok := len(got) == len(idx)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].ID == entryID(idx[i]) && len(got[i].Values) == 1 && got[i].Values[streamField] == any(s.values[idx[i]])
	}
	if ok {
		return ""
	}
	gotIDs := make([]string, len(got))
	for i, m := range got {
		gotIDs[i] = m.ID
	}
	return fmt.Sprintf("%s: got entries %v, want %v (or their values differ)", what, gotIDs, ids(idx))
}

func (streamKind) next(g *group, st state, r *rand.Rand, _ *Config, write bool) *op {
	s := st.(*streamState)
	k := g.key("s")
	if !write {
		if r.IntN(2) == 0 {
			var got *redis.IntCmd
			return &op{name: "XLEN", key: k,
				run: func(ctx context.Context, rdb *redis.Client) error { got = rdb.XLen(ctx, k); return got.Err() },
				ok: func(st state, _, _ time.Time) string {
					if want := int64(len(st.(*streamState).values)); got.Val() != want {
						return fmt.Sprintf("XLEN %s: got %d, want %d", k, got.Val(), want)
					}
					return ""
				}}
		}
		var got *redis.XPendingCmd
		return &op{name: "XPENDING", key: k,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.XPending(ctx, k, streamGroup)
				return got.Err()
			},
			ok: func(st state, _, _ time.Time) string {
				if want := int64(len(st.(*streamState).pel)); got.Val().Count != want {
					return fmt.Sprintf("XPENDING %s %s: %d pending, want %d", k, streamGroup, got.Val().Count, want)
				}
				return ""
			}}
	}
	action := r.IntN(4) // add, read, claim, ack
	switch {
	case len(s.pel) >= streamMaxPEL:
		action = 3
	case action == 0 && len(s.values)-s.delivered >= streamMaxLead:
		action = 1
	case action >= 2 && len(s.pel) == 0:
		action = 0
	}
	switch action {
	case 0:
		v := value(g, r, false)
		i := len(s.values)
		eff := func(st state, _ time.Time) { st.(*streamState).add(v) }
		var got *redis.StringCmd
		return &op{name: "XADD", key: k, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: entryID(i), Values: []any{streamField, v}})
				return got.Err()
			},
			ok: func(st state, sent, _ time.Time) string {
				eff(st, sent)
				if got.Val() != entryID(i) {
					return fmt.Sprintf("XADD %s %s: got id %q", k, entryID(i), got.Val())
				}
				return ""
			}}
	case 1:
		c := streamConsumers[r.IntN(len(streamConsumers))]
		n := 1 + r.IntN(3)
		eff := func(st state, _ time.Time) { st.(*streamState).read(c, n) }
		var got *redis.XStreamSliceCmd
		return &op{name: "XREADGROUP", key: k, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streamGroup, Consumer: c, Streams: []string{k, ">"}, Count: int64(n), Block: -1})
				return got.Err()
			},
			ok: func(st state, _, _ time.Time) string {
				s := st.(*streamState)
				want := s.read(c, n)
				var msgs []redis.XMessage
				if got.Err() == nil {
					if len(got.Val()) != 1 || got.Val()[0].Stream != k {
						return fmt.Sprintf("XREADGROUP %s: reply for %d streams", k, len(got.Val()))
					}
					msgs = got.Val()[0].Messages
				}
				return messagesMismatch("XREADGROUP GROUP g "+c+" COUNT "+strconv.Itoa(n)+" STREAMS "+k+" >", msgs, s, want)
			}}
	case 2:
		c := streamConsumers[r.IntN(len(streamConsumers))]
		idx := s.somePending(r, 1+r.IntN(2))
		eff := func(st state, _ time.Time) { st.(*streamState).claim(c, idx) }
		var got *redis.XMessageSliceCmd
		return &op{name: "XCLAIM", key: k, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.XClaim(ctx, &redis.XClaimArgs{Stream: k, Group: streamGroup, Consumer: c, Messages: ids(idx)})
				return got.Err()
			},
			ok: func(st state, _, _ time.Time) string {
				s := st.(*streamState)
				want := s.claim(c, idx)
				return messagesMismatch(fmt.Sprintf("XCLAIM %s g %s 0 %v", k, c, ids(idx)), got.Val(), s, want)
			}}
	default:
		idx := s.somePending(r, 1+r.IntN(2))
		if r.IntN(5) == 0 {
			idx = append(idx, len(s.values)+5) // an id never added: not counted
		}
		eff := func(st state, _ time.Time) { st.(*streamState).ack(idx) }
		var got *redis.IntCmd
		return &op{name: "XACK", key: k, write: true, effect: eff,
			run: func(ctx context.Context, rdb *redis.Client) error {
				got = rdb.XAck(ctx, k, streamGroup, ids(idx)...)
				return got.Err()
			},
			ok: func(st state, _, _ time.Time) string {
				if want := st.(*streamState).ack(idx); got.Val() != want {
					return fmt.Sprintf("XACK %s g %v: got %d, want %d", k, ids(idx), got.Val(), want)
				}
				return ""
			}}
	}
}

func (streamKind) check(ctx context.Context, rdb *redis.Client, g *group, st state, _ *Config) ([]string, error) {
	s := st.(*streamState)
	k := g.key("s")
	pipe := rdb.Pipeline()
	entries := pipe.XRange(ctx, k, "-", "+")
	groups := pipe.XInfoGroups(ctx, k)
	pel := pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: streamGroup, Start: "-", End: "+", Count: int64(len(s.pel) + 1)})
	consumers := pipe.XInfoConsumers(ctx, k, streamGroup)
	if err := execPipe(ctx, pipe); err != nil {
		return nil, err
	}
	var probs []string
	all := make([]int, len(s.values))
	for i := range all {
		all[i] = i
	}
	if m := messagesMismatch("XRANGE "+k+" - +", entries.Val(), s, all); m != "" {
		probs = append(probs, m)
	}

	lastID := "0-0"
	if s.delivered > 0 {
		lastID = entryID(s.delivered - 1)
	}
	wantGroup := redis.XInfoGroup{Name: streamGroup, Consumers: int64(len(streamConsumers)), Pending: int64(len(s.pel)),
		LastDeliveredID: lastID, EntriesRead: int64(s.delivered), Lag: int64(len(s.values) - s.delivered)}
	if gs := groups.Val(); len(gs) != 1 || gs[0] != wantGroup {
		probs = append(probs, fmt.Sprintf("XINFO GROUPS %s: got %+v, want [%+v]", k, gs, wantGroup))
	}

	var gotPEL, wantPEL []string
	for _, p := range pel.Val() {
		gotPEL = append(gotPEL, fmt.Sprintf("%s:%s:%d", p.ID, p.Consumer, p.RetryCount))
	}
	perConsumer := make(map[string]int64)
	for _, i := range slices.Sorted(maps.Keys(s.pel)) {
		p := s.pel[i]
		wantPEL = append(wantPEL, fmt.Sprintf("%s:%s:%d", entryID(i), p.consumer, p.deliveries))
		perConsumer[p.consumer]++
	}
	if !slices.Equal(gotPEL, wantPEL) {
		probs = append(probs, fmt.Sprintf("XPENDING %s g (id:consumer:deliveries): got %v, want %v", k, gotPEL, wantPEL))
	}

	var gotCons, wantCons []string
	for _, c := range consumers.Val() {
		gotCons = append(gotCons, fmt.Sprintf("%s:%d", c.Name, c.Pending))
	}
	for _, c := range streamConsumers {
		wantCons = append(wantCons, fmt.Sprintf("%s:%d", c, perConsumer[c]))
	}
	if !slices.Equal(gotCons, wantCons) {
		probs = append(probs, fmt.Sprintf("XINFO CONSUMERS %s g (name:pending): got %v, want %v", k, gotCons, wantCons))
	}
	return probs, nil
}
