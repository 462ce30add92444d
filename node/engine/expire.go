package engine

import (
	"sync"
	"time"
)

// Active expiry, after Redis's activeExpireCycle: keys nobody reads again
// must still leave memory once they expire.
//
// Redis keeps expiring keys in a second dictionary per database and samples
// it. Here the keyspace keeps a bitmap of the shards that hold expiring keys
// (Keyspace.expiring), so a cycle only visits those, in rotation, resuming
// where the previous cycle stopped. In each shard it samples keys with a
// TTL and deletes the expired ones, and samples the same shard again while
// more than a quarter of a sample had expired (Redis's adaptive rule; 7.0
// uses a 10% threshold with its default effort, shardgate keeps the older
// 25%, which does a little less work per cycle). It moves on to more
// shards while the cycle has sampled fewer than `sample` keys or while the
// keys seen so far were mostly expired, and it never runs past its time
// budget. A node with no expiring keys does no work; one with many but
// none expired does about `sample` checks per cycle.
//
// Each shard keeps the keys that have a TTL in a map of their own
// (Shard.ttl), as Redis keeps its expires dictionary: a sample costs as
// many lookups as keys it checks, however many keys without a TTL share
// the shard.

// DefaultExpireBudget bounds one ExpireCycle: Redis gives the slow cycle
// 25% of a 100 ms tick.
const DefaultExpireBudget = 25 * time.Millisecond

// expireStalePercent: a shard is sampled again while more than this share
// of its sample had expired.
const expireStalePercent = 25

// expireCycleState is what the cycle remembers between runs.
type expireCycleState struct {
	mu   sync.Mutex // one cycle at a time
	next int        // slot to resume the rotation at
}

// ExpireCycle runs one active expiry cycle with DefaultExpireBudget,
// measured on the monotonic clock, and returns how many keys it removed.
// now (unix ms) decides what has expired; sample is the number of keys
// checked per shard visit (Redis: 20).
func (ks *Keyspace) ExpireCycle(now int64, sample int) int {
	start := time.Now()
	return ks.ExpireCycleWithin(now, sample, func() bool {
		return time.Since(start) >= DefaultExpireBudget
	})
}

// ExpireCycleWithin is ExpireCycle with the budget given as stop, polled
// between samples: once it reports true the cycle ends.
func (ks *Keyspace) ExpireCycleWithin(now int64, sample int, stop func() bool) int {
	if sample < 1 {
		sample = 1
	}
	if !ks.mayExpire() {
		return 0
	}
	st := &ks.cycle
	st.mu.Lock()
	defer st.mu.Unlock()

	sampled, removed := 0, 0
	shards := ks.expiring.count() // visit each expiring shard at most once
	for visited := 0; visited < shards; visited++ {
		slot := ks.expiring.nextWrap(st.next)
		if slot < 0 {
			break
		}
		st.next = (slot + 1) % len(ks.shards)
		n, x, stopped := ks.expireShard(&ks.shards[slot], now, sample, stop)
		sampled += n
		removed += x
		if stopped || stop() {
			ks.Stats.ExpireTimeCap.Add(1)
			break
		}
		if sampled >= sample && removed*100 <= sampled*expireStalePercent {
			break
		}
	}
	return removed
}

// expireShard samples one shard until a sample is mostly live, returning
// the keys with a TTL it checked, those it removed, and whether stop fired.
func (ks *Keyspace) expireShard(s *Shard, now int64, sample int, stop func() bool) (checked, removed int, stopped bool) {
	for {
		ks.big.RLock()
		s.mu.Lock()
		n, x := ks.expireSample(s, now, sample)
		left := len(s.ttl)
		s.mu.Unlock()
		ks.big.RUnlock()
		checked += n
		removed += x
		if n == 0 || left == 0 || x*100 <= n*expireStalePercent {
			return checked, removed, false
		}
		if stop() {
			return checked, removed, true
		}
	}
}

// expireSample checks up to want keys with a TTL in s (the caller holds
// it), deleting the expired ones. A map's range starts at a random place,
// so successive samples see different keys, as Redis's random sampling of
// its expires dictionary does.
func (ks *Keyspace) expireSample(s *Shard, now int64, want int) (checked, removed int) {
	for k := range s.ttl {
		if checked == want {
			break
		}
		e := s.keys.getString(ks.keySeed, k)
		checked++
		if e.ExpiredAt(now) {
			ks.expire(s, k, e)
			removed++
		}
	}
	return checked, removed
}
