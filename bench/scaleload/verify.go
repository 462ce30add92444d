package scaleload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Report is the outcome of Verify.
type Report struct {
	Groups int `json:"groups"`
	Keys   int `json:"keys"`
	// Uncertain groups had an unresolved ambiguous write: either state
	// passed.
	Uncertain int `json:"uncertain"`
	// Resynced is the number of ambiguous writes Run resolved by reading
	// the group back (over the model's life); ResyncedApplied of them had
	// happened.
	Resynced        int64 `json:"resynced"`
	ResyncedApplied int64 `json:"resynced_applied"`
	// Failed groups differ from the model, contradicted it during Run, or
	// could not be read (Unreadable of them).
	Failed     int `json:"failed"`
	Unreadable int `json:"unreadable"`
	// Failures describe the first Config.MaxSamples failed groups, in
	// group order.
	Failures []string      `json:"failures,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// OK reports whether every acknowledged write was found intact.
func (r Report) OK() bool { return r.Failed == 0 && r.Groups > 0 }

func (r Report) String() string {
	var b strings.Builder
	verdict := "OK"
	if !r.OK() {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "verify %s: %d groups (%d keys) in %v, %d failed (%d unreadable), %d uncertain, %d ambiguous writes resolved by re-reads (%d had happened)",
		verdict, r.Groups, r.Keys, r.Duration.Round(time.Millisecond), r.Failed, r.Unreadable, r.Uncertain, r.Resynced, r.ResyncedApplied)
	for _, f := range r.Failures {
		b.WriteString("\n  ")
		b.WriteString(f)
	}
	return b.String()
}

// Verify reads every group back and compares it with the model: string
// values and expiries (PTTL within Config.TTLTolerance of the recorded
// absolute expiry, no expiry where none was set), bitmaps (BITCOUNT,
// STRLEN, the first 8 KB bit by bit, every set bit beyond), HyperLogLogs
// (PFCOUNT equal to that of the model's elements added to a scratch key
// of the same slot, which Verify deletes again, and to the last count
// read), both lists of every queue in order, and every stream's entries,
// group (last delivered id, entries read, lag, pending count), pending
// entries (id, consumer, delivery count) and consumers. A group whose
// read fails is read again, Config.VerifyAttempts times in all. Its error
// is for bad arguments and ctx's end only; what differs is in the Report.
func Verify(ctx context.Context, cfg Config, m *Model) (Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Report{}, err
	}
	if err := m.start(&cfg); err != nil {
		return Report{}, err
	}
	defer m.release()
	rdb := cfg.client(cfg.Workers)
	defer rdb.Close()

	start := time.Now()
	rep := Report{Groups: len(m.groups), Keys: m.keys, Resynced: m.resynced.Load(), ResyncedApplied: m.resyncedApplied.Load()}
	type failure struct {
		idx  int
		text string
	}
	var mu sync.Mutex
	var failures []failure
	var unreadable atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(m.groups) {
					return
				}
				g := m.groups[i]
				text, readable := verifyGroup(ctx, g, rdb, &cfg)
				if !readable {
					unreadable.Add(1)
				}
				if text != "" {
					mu.Lock()
					failures = append(failures, failure{i, g.kind.String() + " " + g.base + ": " + text})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, g := range m.groups {
		if g.alt != nil && g.broken == "" {
			rep.Uncertain++
		}
	}
	slices.SortFunc(failures, func(a, b failure) int { return cmp.Compare(a.idx, b.idx) })
	rep.Failed = len(failures)
	rep.Unreadable = int(unreadable.Load())
	for _, f := range failures[:min(len(failures), cfg.MaxSamples)] {
		rep.Failures = append(rep.Failures, f.text)
	}
	rep.Duration = time.Since(start)
	return rep, ctx.Err()
}

// verifyGroup checks g and returns what is wrong with it ("" if nothing)
// and whether it could be read.
func verifyGroup(ctx context.Context, g *group, rdb *redis.Client, cfg *Config) (string, bool) {
	if g.broken != "" {
		return "during the run: " + g.broken, true
	}
	k := kinds[g.kind]
	var err error
	for attempt := range cfg.VerifyAttempts {
		if attempt > 0 && !sleep(ctx, time.Duration(attempt)*500*time.Millisecond) {
			break
		}
		var before, after []string
		if before, err = k.check(ctx, rdb, g, g.st, cfg); err != nil {
			if !transient(err) {
				return err.Error(), true // WRONGTYPE, NOGROUP ...: the data is wrong
			}
			continue
		}
		if len(before) == 0 {
			return "", true
		}
		if g.alt == nil {
			return strings.Join(before, "; "), true
		}
		if after, err = k.check(ctx, rdb, g, g.alt, cfg); err != nil {
			if !transient(err) {
				return err.Error(), true
			}
			continue
		}
		if len(after) == 0 {
			return "", true
		}
		return "after an ambiguous write it holds neither allowed state: not the one before (" +
			strings.Join(before, "; ") + "), nor the one after (" + strings.Join(after, "; ") + ")", true
	}
	if err == nil {
		err = ctx.Err()
	}
	return fmt.Sprintf("unreadable: %v", err), false
}

// transientErrors are the error replies that say "not now" rather than
// "this is wrong".
var transientErrors = []string{"TRYAGAIN", "MOVED", "ASK", "CLUSTERDOWN", "LOADING", "BUSY", "MASTERDOWN"}

// transient reports whether a read that failed with err is worth trying
// again: a broken connection or timeout, or a redirection or busy reply
// that got through to the client.
func transient(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true
	}
	for _, p := range transientErrors {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
