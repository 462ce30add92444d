package scaleload

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// corruption changes one group behind the model's back.
type corruption struct {
	name  string
	kind  Kind
	apply func(ctx context.Context, rdb *redis.Client, g *group) error
	fits  func(g *group) bool // nil: any group of the kind
}

func hasBit(far bool) func(g *group) bool {
	return func(g *group) bool {
		for off := range g.st.(*bitmapState).set {
			if (off >= firstPageBits) == far {
				return true
			}
		}
		return false
	}
}

func firstPending(g *group) (string, pending) {
	s := g.st.(*streamState)
	i := slices.Sorted(maps.Keys(s.pel))[0]
	return entryID(i), s.pel[i]
}

func otherConsumer(c string) string {
	if c == "c1" {
		return "c2"
	}
	return "c1"
}

var corruptions = []corruption{
	{"string deleted", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.Del(ctx, g.key("a")).Err()
	}, nil},
	{"string value changed", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.Set(ctx, g.key("b"), "other", 0).Err()
	}, nil},
	{"expiry moved an hour", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.PExpireAt(ctx, g.key("x"), time.UnixMilli(g.st.(*stringState).xLo).Add(time.Hour)).Err()
	}, nil},
	{"expiry moved two seconds", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.PExpireAt(ctx, g.key("x"), time.UnixMilli(g.st.(*stringState).xLo).Add(-2*time.Second)).Err()
	}, nil},
	{"expiry lost", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.Persist(ctx, g.key("x")).Err()
	}, nil},
	{"expiry added", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.Expire(ctx, g.key("a"), time.Hour).Err()
	}, nil},
	{"counter off by one", KindString, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.Incr(ctx, g.key("n")).Err()
	}, nil},
	{"bit set far out", KindBitmap, func(ctx context.Context, rdb *redis.Client, g *group) error {
		for off := int64(firstPageBits + 1); ; off++ {
			if _, set := g.st.(*bitmapState).set[off]; !set {
				return rdb.SetBit(ctx, g.key("bm"), off, 1).Err()
			}
		}
	}, nil},
	{"bit cleared far out", KindBitmap, func(ctx context.Context, rdb *redis.Client, g *group) error {
		for off := range g.st.(*bitmapState).set {
			if off >= firstPageBits {
				// Clear it and set another, so BITCOUNT still agrees.
				if err := rdb.SetBit(ctx, g.key("bm"), off, 0).Err(); err != nil {
					return err
				}
				return rdb.SetBit(ctx, g.key("bm"), off^1, 1).Err()
			}
		}
		panic("unreachable")
	}, hasBit(true)},
	{"bit swapped in the first page", KindBitmap, func(ctx context.Context, rdb *redis.Client, g *group) error {
		for off := range g.st.(*bitmapState).set {
			if _, set := g.st.(*bitmapState).set[off^1]; off < firstPageBits && !set {
				if err := rdb.SetBit(ctx, g.key("bm"), off, 0).Err(); err != nil {
					return err
				}
				return rdb.SetBit(ctx, g.key("bm"), off^1, 1).Err()
			}
		}
		panic("unreachable")
	}, hasBit(false)},
	{"bitmap truncated", KindBitmap, func(ctx context.Context, rdb *redis.Client, g *group) error {
		// SETRANGE cannot shorten, so rewrite the string one byte short
		// of the model's length if its last byte is zero; else make it a
		// byte longer.
		b, err := rdb.Get(ctx, g.key("bm")).Bytes()
		if err != nil {
			return err
		}
		if b[len(b)-1] == 0 {
			return rdb.Set(ctx, g.key("bm"), b[:len(b)-1], 0).Err()
		}
		return rdb.Append(ctx, g.key("bm"), "\x00").Err()
	}, nil},
	{"HLL element added", KindHLL, func(ctx context.Context, rdb *redis.Client, g *group) error {
		for i := 0; ; i++ {
			changed, err := rdb.PFAdd(ctx, g.key("h"), "intruder"+string(rune('a'+i%26))+strings.Repeat("x", i/26)).Result()
			if err != nil || changed == 1 {
				return err
			}
		}
	}, nil},
	{"job taken behind the model", KindQueue, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.LMove(ctx, g.key("q"), g.key("p"), "RIGHT", "LEFT").Err()
	}, nil},
	{"job lost", KindQueue, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.RPop(ctx, g.key("p")).Err()
	}, nil},
	{"jobs reordered", KindQueue, func(ctx context.Context, rdb *redis.Client, g *group) error {
		// The same jobs in the two lists, the waiting ones reversed.
		s := g.st.(*queueState)
		pipe := rdb.TxPipeline()
		pipe.Del(ctx, g.key("q"))
		for _, j := range s.q {
			pipe.LPush(ctx, g.key("q"), j)
		}
		_, err := pipe.Exec(ctx)
		return err
	}, func(g *group) bool { return len(g.st.(*queueState).q) >= 2 }},
	{"pending entry moved to another consumer", KindStream, func(ctx context.Context, rdb *redis.Client, g *group) error {
		// XCLAIM with RETRYCOUNT keeps the delivery count: only the owner
		// differs.
		id, p := firstPending(g)
		return rdb.Do(ctx, "XCLAIM", g.key("s"), streamGroup, otherConsumer(p.consumer), 0, id, "RETRYCOUNT", p.deliveries).Err()
	}, nil},
	{"delivery count bumped", KindStream, func(ctx context.Context, rdb *redis.Client, g *group) error {
		id, p := firstPending(g)
		return rdb.XClaim(ctx, &redis.XClaimArgs{Stream: g.key("s"), Group: streamGroup, Consumer: p.consumer, Messages: []string{id}}).Err()
	}, nil},
	{"pending entry acknowledged", KindStream, func(ctx context.Context, rdb *redis.Client, g *group) error {
		id, _ := firstPending(g)
		return rdb.XAck(ctx, g.key("s"), streamGroup, id).Err()
	}, nil},
	{"entry added", KindStream, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.XAdd(ctx, &redis.XAddArgs{Stream: g.key("s"), ID: "*", Values: []any{streamField, "x"}}).Err()
	}, nil},
	{"group moved back", KindStream, func(ctx context.Context, rdb *redis.Client, g *group) error {
		return rdb.XGroupSetID(ctx, g.key("s"), streamGroup, "0").Err()
	}, nil},
	{"stream replaced by a copy without its group", KindStream, func(ctx context.Context, rdb *redis.Client, g *group) error {
		// Same entries, so XRANGE agrees; the group and its PEL are gone.
		s := g.st.(*streamState)
		pipe := rdb.TxPipeline()
		pipe.Del(ctx, g.key("s"))
		for i, v := range s.values {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: g.key("s"), ID: entryID(i), Values: []any{streamField, v}})
		}
		_, err := pipe.Exec(ctx)
		return err
	}, nil},
}

// TestVerifyCatchesCorruption changes one group per corruption behind the
// model's back and expects Verify to report exactly those groups.
func TestVerifyCatchesCorruption(t *testing.T) {
	for _, target := range []struct {
		name  string
		start func(*testing.T) string
	}{{"proxy", startProxy}, {"redis", startRedis}} {
		t.Run(target.name, func(t *testing.T) {
			cfg := testConfig(target.start(t))
			cfg.Keys = 600
			ctx := context.Background()
			m, err := Populate(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr, MaxRetries: -1})
			defer rdb.Close()
			used := make(map[int]bool)
			want := make(map[string]string) // group base → corruption
			for _, c := range corruptions {
				var g *group
				for _, cand := range m.groups {
					if cand.kind == c.kind && !used[cand.idx] && cand.idx%bigEvery != 0 && (c.fits == nil || c.fits(cand)) {
						g = cand
						break
					}
				}
				if g == nil {
					t.Fatalf("%s: no %v group left", c.name, c.kind)
				}
				used[g.idx] = true
				if err := c.apply(ctx, rdb, g); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				want[g.base+":"] = c.name
			}
			rep, err := Verify(ctx, cfg, m)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Failed != len(corruptions) || len(rep.Failures) != len(corruptions) {
				t.Errorf("Verify: %d failed, want %d:\n%v", rep.Failed, len(corruptions), rep)
			}
			for base, name := range want {
				found := false
				for _, f := range rep.Failures {
					found = found || strings.Contains(f, " "+base)
				}
				if !found {
					t.Errorf("%s (%s) not reported", name, base)
				}
			}
			if t.Failed() {
				for _, f := range rep.Failures {
					t.Log(f)
				}
			}
			if rep.Unreadable != 0 {
				t.Errorf("%d groups unreadable; a missing group is a failure of the data", rep.Unreadable)
			}
		})
	}
}

// TestRunCatchesMismatch: a reply that contradicts the model during Run
// is counted as a mismatch (never as an error) and the group is reported
// by Verify.
func TestRunCatchesMismatch(t *testing.T) {
	cfg := testConfig(startProxy(t))
	cfg.Keys, cfg.Workers = MinKeys, 1
	ctx := context.Background()
	m, err := Populate(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr, MaxRetries: -1})
	defer rdb.Close()
	queues := 0
	for _, g := range m.groups {
		if g.kind == KindQueue {
			// An intruder at the tail: the next take returns it.
			if err := rdb.RPush(ctx, g.key("q"), "intruder").Err(); err != nil {
				t.Fatal(err)
			}
			queues++
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := Run(runCtx, cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	tot := st.Total()
	if tot.Mismatches == 0 || tot.Errors != 0 {
		t.Errorf("%d mismatches (want some), %d errors (want none): %q", tot.Mismatches, tot.Errors, st.MismatchSamples())
	}
	for _, s := range st.MismatchSamples() {
		// The intruder comes back from a take, or the lengths are off.
		if !strings.Contains(s, "intruder") && !strings.Contains(s, "LLEN") && !strings.Contains(s, "LPUSH") {
			t.Errorf("unexpected mismatch %q", s)
		}
	}
	rep, err := Verify(ctx, cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != queues {
		t.Errorf("Verify: %d failed, want the %d queues:\n%v", rep.Failed, queues, rep)
	}
	for _, f := range rep.Failures {
		if !strings.HasPrefix(f, "queue ") {
			t.Errorf("failure of another kind: %s", f)
		}
	}
}
