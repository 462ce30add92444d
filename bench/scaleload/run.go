package scaleload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors of Run and Verify.
var (
	// ErrModelBusy: another Run or Verify is using the model.
	ErrModelBusy = errors.New("scaleload: the model is in use by another Run or Verify")
	// ErrPrefix: the model was populated under another Config.Prefix.
	ErrPrefix = errors.New("scaleload: the model was populated under another prefix")
)

func (m *Model) start(cfg *Config) error {
	if m == nil {
		return errors.New("scaleload: nil Model")
	}
	if cfg.Prefix != m.prefix {
		return fmt.Errorf("%w (%q, not %q)", ErrPrefix, m.prefix, cfg.Prefix)
	}
	if !m.acquire() {
		return ErrModelBusy
	}
	return nil
}

// Run sends a mix of reads and writes to the model's groups until ctx is
// done, and returns their figures. Each worker owns a share of the groups,
// so every group sees its operations in order and the model predicts
// every reply; a reply that contradicts it is a mismatch (counted in
// Stats, and the group is reported by Verify).
//
// A write answered with an error or not at all (timeout, broken
// connection) may or may not have happened: it counts as a client-visible
// error, and the group then holds one of two states. The group takes no
// operations until Config.Settle has passed; then Run reads it back and
// keeps whichever state the server holds (neither is a mismatch). A group
// still unresolved when Run ends is verified against both.
//
// Commands in flight when ctx ends are completed, not cancelled, so the
// end of a run is not itself a source of errors. Run's error is for bad
// arguments only.
func Run(ctx context.Context, cfg Config, m *Model) (*Stats, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := m.start(&cfg); err != nil {
		return nil, err
	}
	defer m.release()
	rdb := cfg.client(cfg.Workers)
	defer rdb.Close()

	start := time.Now()
	st := newStats(cfg.Workers, cfg.MaxSamples, start)
	workers := make([]*worker, cfg.Workers)
	for i := range workers {
		workers[i] = &worker{cfg: &cfg, rdb: rdb, m: m, stats: st, rec: st.recs[i],
			r: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)<<1))}
		if cfg.Rate > 0 {
			workers[i].interval = time.Duration(float64(cfg.Workers) / cfg.Rate * float64(time.Second))
		}
	}
	for i, g := range m.groups {
		w := workers[i%len(workers)]
		w.groups = append(w.groups, g)
		if g.alt != nil { // left unresolved by an earlier Run
			w.waiting = append(w.waiting, g)
		}
	}

	stopTicks := make(chan struct{})
	ticksDone := make(chan struct{})
	go func() {
		defer close(ticksDone)
		t := time.NewTicker(cfg.Window)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				w := st.tick(now)
				if cfg.OnWindow != nil {
					cfg.OnWindow(w)
				}
			case <-stopTicks:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.loop(ctx) })
	}
	wg.Wait()
	close(stopTicks)
	<-ticksDone
	end := time.Now()
	w := st.tick(end)
	if cfg.OnWindow != nil {
		cfg.OnWindow(w)
	}
	st.finish(end)
	return st, nil
}

// worker is one client of Run with the groups it owns.
type worker struct {
	cfg      *Config
	rdb      *redis.Client
	m        *Model
	stats    *Stats
	rec      *recorder
	r        *rand.Rand
	interval time.Duration // between operations, with Config.Rate
	groups   []*group
	waiting  []*group // ambiguous writes to resolve, by settleAt
}

func (w *worker) loop(ctx context.Context) {
	// Operations are not cancelled with ctx: a command cut off would be
	// an ambiguous write made by the tool, not by the system under test.
	opCtx := context.WithoutCancel(ctx)
	next := time.Now()
	for ctx.Err() == nil {
		if w.interval > 0 {
			next = next.Add(w.interval)
			if d := time.Until(next); d > 0 {
				if !sleep(ctx, d) {
					return
				}
			} else if d < -time.Second {
				next = time.Now() // behind: do not burst to catch up
			}
		}
		if len(w.waiting) > 0 && !time.Now().Before(w.waiting[0].settleAt) {
			w.resync(opCtx, w.waiting[0])
			continue
		}
		g := w.pick()
		if g == nil {
			d := 10 * time.Millisecond
			if len(w.waiting) > 0 {
				d = min(d, max(time.Until(w.waiting[0].settleAt), 0))
			}
			if !sleep(ctx, d) {
				return
			}
			continue
		}
		w.do(opCtx, g)
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func usable(g *group) bool { return g.alt == nil && g.broken == "" }

// pick returns a random group that can take an operation, or nil.
func (w *worker) pick() *group {
	if len(w.groups) == 0 {
		return nil
	}
	for range 8 {
		if g := w.groups[w.r.IntN(len(w.groups))]; usable(g) {
			return g
		}
	}
	from := w.r.IntN(len(w.groups))
	for i := range w.groups {
		if g := w.groups[(from+i)%len(w.groups)]; usable(g) {
			return g
		}
	}
	return nil
}

func (w *worker) do(ctx context.Context, g *group) {
	write := w.r.Float64() >= w.cfg.ReadRatio
	o := kinds[g.kind].next(g, g.st, w.r, w.cfg, write)
	sent := time.Now()
	err := o.run(ctx, w.rdb)
	acked := time.Now()
	if err != nil && err != redis.Nil {
		w.rec.record(o.name, acked.Sub(sent), true, false)
		w.stats.errorSample(fmt.Sprintf("%s %s: %v", o.name, o.key, err))
		if o.write {
			alt := g.st.clone()
			o.effect(alt, sent)
			g.alt, g.settleAt = alt, acked.Add(w.cfg.Settle)
			w.waiting = append(w.waiting, g)
		}
		return
	}
	mismatch := o.ok(g.st, sent, acked)
	w.rec.record(o.name, acked.Sub(sent), false, mismatch != "")
	if mismatch != "" {
		w.breakGroup(g, mismatch)
	}
}

// resync reads g back after an ambiguous write and keeps the state the
// server holds.
func (w *worker) resync(ctx context.Context, g *group) {
	sent := time.Now()
	k := kinds[g.kind]
	before, err := k.check(ctx, w.rdb, g, g.st, w.cfg)
	var after []string
	if err == nil && len(before) > 0 {
		after, err = k.check(ctx, w.rdb, g, g.alt, w.cfg)
	}
	done := time.Now()
	if err != nil && !transient(err) {
		// WRONGTYPE, NOGROUP ...: neither state, whatever the write did.
		before, after, err = []string{err.Error()}, []string{err.Error()}, nil
	}
	w.rec.record("RESYNC", done.Sub(sent), err != nil, err == nil && len(before) > 0 && len(after) > 0)
	if err != nil {
		w.stats.errorSample(fmt.Sprintf("RESYNC %s: %v", g.base, err))
		g.settleAt = done.Add(time.Second)
		w.waiting = append(w.waiting[1:], g)
		return
	}
	w.waiting = w.waiting[1:]
	w.m.resynced.Add(1)
	switch {
	case len(before) == 0:
		g.alt = nil
	case len(after) == 0:
		g.st, g.alt = g.alt, nil
		w.m.resyncedApplied.Add(1)
	default:
		w.breakGroup(g, "after an ambiguous write it holds neither allowed state: "+
			"not the one before ("+strings.Join(before, "; ")+"), nor the one after ("+strings.Join(after, "; ")+")")
	}
}

func (w *worker) breakGroup(g *group, why string) {
	g.broken = why
	w.stats.mismatchSample(g.kind.String() + " " + g.base + ": " + why)
	w.waiting = slices.DeleteFunc(w.waiting, func(x *group) bool { return x == g })
}
