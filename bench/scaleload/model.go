package scaleload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/slots"
)

// Kind is the data type of a key group.
type Kind uint8

// The kinds of key groups.
const (
	// KindString: {t}:a and {t}:b without TTL (SET, MSET, GET, MGET), {t}:x
	// with a TTL (SET PX, SET PXAT), {t}:n a counter (INCR), and a MULTI
	// block writing b and n together.
	KindString Kind = iota
	// KindBitmap: one sparse bitmap (SETBIT, GETBIT, BITCOUNT, STRLEN).
	KindBitmap
	// KindHLL: one HyperLogLog (PFADD, PFCOUNT); a few are dense.
	KindHLL
	// KindQueue: a reliable queue, {t}:q and {t}:p (LPUSH; LMOVE, BLMOVE
	// and RPOPLPUSH from q to p; LREM from p as the acknowledgement).
	KindQueue
	// KindStream: a stream with group g and consumers c1..c3 (XADD,
	// XREADGROUP, XACK, XCLAIM), always with entries pending.
	KindStream
	numKinds
)

var kindNames = [numKinds]string{"string", "bitmap", "hll", "queue", "stream"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// kindShare is each kind's share of the keys, in percent.
var kindShare = [numKinds]int{40, 15, 15, 15, 15}

// state is a model of one group's keys.
type state interface{ clone() state }

// kindImpl is what a kind does; implementations are stateless.
type kindImpl interface {
	// keys returns the group's keys (populate deletes them first).
	keys(g *group) []string
	// populate queues on pipe the commands that write g's initial state and
	// returns that state.
	populate(ctx context.Context, pipe redis.Pipeliner, g *group, r *rand.Rand, now time.Time, cfg *Config) state
	// next returns a write or a read on g, whose model is s.
	next(g *group, s state, r *rand.Rand, cfg *Config, write bool) *op
	// check reads g from the server and returns how it differs from s
	// (nothing: it matches); an error if it could not be read.
	check(ctx context.Context, rdb *redis.Client, g *group, s state, cfg *Config) ([]string, error)
}

var kinds = [numKinds]kindImpl{stringKind{}, bitmapKind{}, hllKind{}, queueKind{}, streamKind{}}

// op is one operation of Run.
type op struct {
	name  string // the command, for stats
	key   string // for error texts
	write bool
	// run sends the command and keeps its reply; redis.Nil is a reply.
	run func(ctx context.Context, rdb *redis.Client) error
	// ok takes a reply that was not an error: it compares it with s and,
	// for a write, applies the write to s. It returns a mismatch, or "".
	// sent and acked bracket the command's execution on the server.
	ok func(s state, sent, acked time.Time) string
	// effect applies a write to s as if it happened, without its reply:
	// the other allowed state after an ambiguous write (nil for reads).
	effect func(s state, sent time.Time)
}

// group is a set of keys of one kind under one hash tag. During Run only
// the worker that owns it touches it.
type group struct {
	idx  int
	kind Kind
	base string // "{tag}:<letter><idx>", the keys' common start
	st   state  // the model; before an ambiguous write while alt is set
	// alt is the state after an ambiguous write: the server may hold
	// either. Run resolves it after settleAt by a re-read.
	alt      state
	settleAt time.Time
	// broken is the first contradiction found during Run; the group takes
	// no more operations and Verify reports it.
	broken string
	seq    int // see next
}

func (g *group) key(suffix string) string { return g.base + ":" + suffix }

// next returns a number the group never used, for values and queue jobs:
// even a write whose fate is unknown leaves its value unique.
func (g *group) next() int { g.seq++; return g.seq }

// Model is what Populate wrote and Run's acknowledged writes made of it:
// the expected content of every key. One Run or Verify at a time may use
// it.
type Model struct {
	prefix   string
	keys     int
	groups   []*group
	busy     atomic.Bool
	resynced atomic.Int64
	// resyncedApplied counts the resolved ambiguous writes that had
	// happened.
	resyncedApplied atomic.Int64
}

// Keys is the number of keys the model covers.
func (m *Model) Keys() int { return m.keys }

// Groups is the number of key groups.
func (m *Model) Groups() int { return len(m.groups) }

// Uncertain is the number of groups whose last write was ambiguous and
// not yet resolved by a re-read: Verify accepts either state for them.
// It is -1 while a Run or Verify uses the model.
func (m *Model) Uncertain() int {
	if !m.acquire() {
		return -1
	}
	defer m.release()
	n := 0
	for _, g := range m.groups {
		if g.alt != nil {
			n++
		}
	}
	return n
}

func (m *Model) acquire() bool { return m.busy.CompareAndSwap(false, true) }
func (m *Model) release()      { m.busy.Store(false) }

// tagTable returns, for every slot, a hash tag of the form
// "<prefix>.<n>" that hashes to it: every slot gets keys.
func tagTable(prefix string) []string {
	tags := make([]string, slots.Count)
	left := slots.Count
	for n := 0; left > 0; n++ {
		t := prefix + "." + strconv.Itoa(n)
		s := slots.SlotString("{" + t + "}")
		if tags[s] == "" {
			tags[s] = t
			left--
		}
	}
	return tags
}

// layout returns the kinds of the groups of a dataset of keys keys, in
// group order: each kind's share, the kinds shuffled so that every range
// of slots gets all of them.
func layout(keys int, seed int64) []Kind {
	var out []Kind
	for k := range numKinds {
		per := len(kinds[k].keys(&group{}))
		n := max(1, keys*kindShare[k]/100/per)
		for range n {
			out = append(out, k)
		}
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5ca1e))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

var kindLetters = [numKinds]string{"s", "b", "h", "q", "x"}

// newModel lays out the groups (no state yet).
func newModel(cfg *Config) *Model {
	tags := tagTable(cfg.Prefix)
	ks := layout(cfg.Keys, cfg.Seed)
	m := &Model{prefix: cfg.Prefix, groups: make([]*group, len(ks))}
	for i, k := range ks {
		// Evenly over the slot space: with more groups than slots every
		// slot gets some, with fewer every node of a test cluster does.
		slot := i * slots.Count / len(ks)
		g := &group{idx: i, kind: k, base: "{" + tags[slot] + "}:" + kindLetters[k] + strconv.Itoa(i)}
		m.groups[i] = g
		m.keys += len(kinds[k].keys(g))
	}
	return m
}

// groupRand is the random source for group i's initial state, the same
// whatever the number of workers.
func groupRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(i)<<1|1))
}

// populateBatch is how many groups go into one pipeline.
const populateBatch = 32

// Populate deletes the keys of cfg.Prefix's dataset, writes it anew (cfg.Keys
// keys of every kind spread over all slots) and returns its model. Any
// error reply fails it: the dataset must start exactly known.
func Populate(ctx context.Context, cfg Config) (*Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("scaleload: Config.Prefix %q has a brace", cfg.Prefix)
	}
	m := newModel(&cfg)
	rdb := cfg.client(cfg.Workers)
	defer rdb.Close()
	var next atomic.Int64
	errs := make(chan error, cfg.Workers)
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				from := int(next.Add(populateBatch)) - populateBatch
				if from >= len(m.groups) {
					return
				}
				if err := populateGroups(ctx, rdb, m.groups[from:min(from+populateBatch, len(m.groups))], &cfg); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func populateGroups(ctx context.Context, rdb *redis.Client, gs []*group, cfg *Config) error {
	pipe := rdb.Pipeline()
	now := time.Now()
	for _, g := range gs {
		k := kinds[g.kind]
		pipe.Del(ctx, k.keys(g)...)
		g.st = k.populate(ctx, pipe, g, groupRand(cfg.Seed, g.idx), now, cfg)
	}
	return execPipe(ctx, pipe)
}

// execPipe runs pipe and returns the first error reply (redis.Nil is
// none).
func execPipe(ctx context.Context, pipe redis.Pipeliner) error {
	cmds, err := pipe.Exec(ctx)
	for _, c := range cmds {
		if e := c.Err(); e != nil && e != redis.Nil {
			var args []string
			for _, a := range c.Args()[:min(len(c.Args()), 3)] {
				args = append(args, fmt.Sprint(a))
			}
			return fmt.Errorf("scaleload: %s: %w", strings.Join(args, " "), e)
		}
	}
	if err != nil && err != redis.Nil {
		return fmt.Errorf("scaleload: pipeline: %w", err)
	}
	return nil
}

// value returns a fresh value for a string key or stream entry: unique
// per group (a stale value can never pass for the new one), of random
// length; big ones are about 64 KB, so a migration moves some values in
// several pieces.
func value(g *group, r *rand.Rand, big bool) string {
	n := r.IntN(48)
	if big {
		n = 64<<10 + r.IntN(1024)
	}
	var b strings.Builder
	b.Grow(n + 24)
	b.WriteString(strconv.Itoa(g.idx))
	b.WriteByte('.')
	b.WriteString(strconv.Itoa(g.next()))
	b.WriteByte('.')
	for range n {
		b.WriteByte(byte('a' + r.IntN(26)))
	}
	return b.String()
}

func (g *group) big() bool { return g.idx%bigEvery == 0 }

// bigEvery: every bigEvery-th group has large values (strings, a stream
// entry) or many elements (bitmaps, HLLs).
const bigEvery = 61

// intVal is a generic reply's integer, or -3 (no PTTL answer) if it has
// none.
func intVal(c *redis.Cmd) int64 {
	v, err := c.Int64()
	if err != nil {
		return -3
	}
	return v
}
