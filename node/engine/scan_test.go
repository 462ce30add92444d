package engine

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// scanStep runs one SCAN step as the dispatcher would (keyspace shared).
func scanStep(ks *Keyspace, now int64, cursor uint64, o scanOpts) ([]string, uint64) {
	ks.RLock()
	defer ks.RUnlock()
	c := Ctx{KS: ks, Now: now, W: &resp.Writer{Proto: 2}}
	return c.scan(cursor, o)
}

func setKey(ks *Keyspace, key string, expire int64) {
	s := ks.ShardOf([]byte(key))
	s.Lock()
	ks.Set(s, []byte(key), &Entry{Kind: KindString, Str: []byte("v"), Expire: expire})
	s.Unlock()
}

func delKey(ks *Keyspace, key string, now int64) {
	s := ks.ShardOf([]byte(key))
	s.Lock()
	ks.Delete(s, []byte(key), now)
	s.Unlock()
}

// scanKeyName spreads keys over a few crowded slots (hash tags) and many
// sparse ones.
func scanKeyName(r *rand.Rand, prefix string, i int) string {
	if r.IntN(2) == 0 {
		return "{tag" + strconv.Itoa(r.IntN(3)) + "}" + prefix + strconv.Itoa(i)
	}
	return prefix + strconv.Itoa(i)
}

// TestScanNeverMisses is the SCAN property: with keys added, removed and
// expiring between calls, every key present for the whole scan is
// returned, and no key is returned twice.
func TestScanNeverMisses(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		ks := New()
		now := ksEnvNow
		stable := map[string]bool{}
		for i := range 200 + r.IntN(800) {
			k := scanKeyName(r, "stable", i)
			stable[k] = true
			setKey(ks, k, 0)
		}
		var churn []string
		next := 0
		seen := map[string]int{}
		cursor := uint64(0)
		for calls := 0; ; calls++ {
			if calls > 100000 {
				t.Fatalf("seed %d: scan does not end", seed)
			}
			keys, nc := scanStep(ks, now, cursor, scanOpts{count: 1 + r.IntN(30)})
			for _, k := range keys {
				seen[k]++
			}
			cursor = nc
			if cursor == 0 {
				break
			}
			for range r.IntN(20) {
				switch op := r.IntN(3); {
				case op == 0 || len(churn) == 0:
					k := scanKeyName(r, "churn", next)
					next++
					exp := int64(0)
					if r.IntN(3) == 0 {
						exp = now + int64(1+r.IntN(5))
					}
					setKey(ks, k, exp)
					churn = append(churn, k)
				default:
					i := r.IntN(len(churn))
					delKey(ks, churn[i], now)
					churn[i] = churn[len(churn)-1]
					churn = churn[:len(churn)-1]
				}
			}
			now++
		}
		for k := range stable {
			if seen[k] == 0 {
				t.Fatalf("seed %d: stable key %q never returned", seed, k)
			}
		}
		for k, n := range seen {
			if n > 1 {
				t.Fatalf("seed %d: key %q returned %d times", seed, k, n)
			}
		}
	}
}

// TestScanConcurrent scans while other goroutines write, under the real
// locks (run with -race).
func TestScanConcurrent(t *testing.T) {
	ks := New()
	stable := map[string]bool{}
	for i := range 2000 {
		k := "s" + strconv.Itoa(i)
		if i%3 == 0 {
			k = "{hot}" + k
		}
		stable[k] = true
		setKey(ks, k, 0)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				k := "w" + strconv.Itoa(w) + ":" + strconv.Itoa(r.IntN(500))
				if r.IntN(2) == 0 {
					k = "{hot}" + k
				}
				ks.RLock()
				if r.IntN(2) == 0 {
					setKey(ks, k, 0)
				} else {
					delKey(ks, k, ksEnvNow)
				}
				ks.RUnlock()
			}
		}()
	}
	for round := range 5 {
		seen := map[string]bool{}
		cursor := uint64(0)
		for {
			keys, nc := scanStep(ks, ksEnvNow, cursor, scanOpts{count: 5 + round*20})
			for _, k := range keys {
				seen[k] = true
			}
			if cursor = nc; cursor == 0 {
				break
			}
		}
		for k := range stable {
			if !seen[k] {
				t.Errorf("round %d: %q missed", round, k)
			}
		}
	}
	close(done)
	wg.Wait()
}

// TestScanHugeSlot: one crowded slot is scanned completely, and each
// call's work follows COUNT, not the slot's size (a call finishes the home
// slot it is at, so it may return a few more keys than COUNT).
func TestScanHugeSlot(t *testing.T) {
	ks := New()
	const n = 20000
	for i := range n {
		setKey(ks, "{one}"+strconv.Itoa(i), 0)
	}
	for _, count := range []int{1, 10, 100} {
		seen := map[string]bool{}
		cursor, calls, most := uint64(0), 0, 0
		for {
			keys, nc := scanStep(ks, ksEnvNow, cursor, scanOpts{count: count})
			calls++
			most = max(most, len(keys))
			for _, k := range keys {
				if seen[k] {
					t.Fatalf("COUNT %d: %q returned twice", count, k)
				}
				seen[k] = true
			}
			if cursor = nc; cursor == 0 {
				break
			}
		}
		if len(seen) != n {
			t.Errorf("COUNT %d: returned %d keys, want %d", count, len(seen), n)
		}
		if most > count+8 {
			t.Errorf("COUNT %d: a call returned %d keys", count, most)
		}
		if calls < n/(count+8) {
			t.Errorf("COUNT %d: %d calls for %d keys", count, calls, n)
		}
	}
}

// TestScanShrunkTable: a table that shrinks between calls (deletes, then
// an insertion rebuilds it smaller) leaves the cursor inside a home slot's
// interval, whose keys below the cursor were returned before; the scan
// goes on from there, missing no key that stayed and returning none
// twice. The shrink comes after a different call each round.
func TestScanShrunkTable(t *testing.T) {
	const n, keep = 20000, 8
	for cut := 1; cut <= 20; cut++ {
		ks := New()
		for i := range n {
			setKey(ks, "{s}"+strconv.Itoa(i), 0)
		}
		seen := map[string]int{}
		cursor := uint64(0)
		for calls := 0; ; calls++ {
			keys, nc := scanStep(ks, ksEnvNow, cursor, scanOpts{count: 20})
			for _, k := range keys {
				seen[k]++
			}
			if calls == cut {
				for i := range n {
					if i%keep != 0 {
						delKey(ks, "{s}"+strconv.Itoa(i), ksEnvNow)
					}
				}
				setKey(ks, "{s}new", 0) // rebuilds the sparse table smaller
			}
			if cursor = nc; cursor == 0 {
				break
			}
		}
		for i := 0; i < n; i += keep {
			if k := "{s}" + strconv.Itoa(i); seen[k] != 1 {
				t.Errorf("shrink after call %d: %q returned %d times", cut, k, seen[k])
			}
		}
	}
}

func TestScanFilters(t *testing.T) {
	e := newKsEnv(t)
	e.set("user:1", "v", 0)
	e.set("user:2", "v", 0)
	e.set("other", "v", 0)
	e.set("gone", "v", ksEnvNow+1)
	e.now += 2 // past the key's expire millisecond
	tests := []struct {
		o    scanOpts
		want int
	}{
		{scanOpts{count: 100}, 3},
		{scanOpts{count: 100, pattern: []byte("user:*")}, 2},
		{scanOpts{count: 100, typ: []byte("STRING")}, 3},
		{scanOpts{count: 100, typ: []byte("list")}, 0},
	}
	for _, tt := range tests {
		got := 0
		cursor := uint64(0)
		for {
			keys, nc := scanStep(e.ks, e.now, cursor, tt.o)
			got += len(keys)
			if cursor = nc; cursor == 0 {
				break
			}
		}
		if got != tt.want {
			t.Errorf("%+v: %d keys, want %d", tt.o, got, tt.want)
		}
	}
	if got := e.do("DBSIZE"); got != ksInt(3) {
		t.Errorf("SCAN did not reclaim the expired key it met: DBSIZE %q", got)
	}
}

// TestScanCursorBelow2p53: every cursor a scan hands out fits in a
// float64's 53-bit mantissa, the last slot's included, so JavaScript
// clients keep it exact; a cursor past the last slot ends the scan.
func TestScanCursorBelow2p53(t *testing.T) {
	ks := New()
	// Keys in the highest slots and a crowded one, so that cursors carry
	// the largest slot numbers and positions.
	for i := range 3000 {
		setKey(ks, "{tag1}k"+strconv.Itoa(i), 0)
		setKey(ks, "k"+strconv.Itoa(i), 0)
	}
	cursor, calls, seen := uint64(0), 0, 0
	maxSlot := uint64(0)
	for {
		keys, next := scanStep(ks, ksEnvNow, cursor, scanOpts{count: 7})
		seen += len(keys)
		calls++
		if next >= 1<<53 {
			t.Fatalf("cursor %d is not below 2^53", next)
		}
		maxSlot = max(maxSlot, next>>scanPosBits)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if seen != 6000 {
		t.Errorf("scan saw %d keys, want 6000", seen)
	}
	if maxSlot < 16000 {
		t.Errorf("highest slot in a cursor %d; the test should reach the last slots", maxSlot)
	}
	for _, c := range []uint64{16384 << scanPosBits, 1<<64 - 1} {
		if keys, next := scanStep(ks, ksEnvNow, c, scanOpts{count: 10}); next != 0 || len(keys) != 0 {
			t.Errorf("scan from %d = %d keys, next %d; want the end", c, len(keys), next)
		}
	}
}

// TestShrinkSparse: a key table that deletes left mostly empty is rebuilt
// at its right size by ShrinkSparse, without waiting for an insertion, and
// keeps every key.
func TestShrinkSparse(t *testing.T) {
	ks := New()
	const n = 50000
	for i := range n {
		setKey(ks, "{d}"+strconv.Itoa(i), 0)
	}
	s := ks.ShardOf([]byte("{d}"))
	big := len(s.keys.slots)
	for i := range n {
		if i%1000 != 0 {
			delKey(ks, "{d}"+strconv.Itoa(i), ksEnvNow)
		}
	}
	if len(s.keys.slots) != big {
		t.Fatalf("the table changed size on deletes: %d -> %d", big, len(s.keys.slots))
	}
	if got := ks.ShrinkSparse(func() bool { return false }); got != 1 {
		t.Errorf("ShrinkSparse rebuilt %d tables, want 1", got)
	}
	if size := len(s.keys.slots); size > 4*n/1000 {
		t.Errorf("after ShrinkSparse: %d slots for %d keys (was %d)", size, s.keys.Len(), big)
	}
	if got := ks.ShrinkSparse(func() bool { return false }); got != 0 {
		t.Errorf("a second ShrinkSparse rebuilt %d tables", got)
	}
	keys, cursor := []string(nil), uint64(0)
	for {
		k, nc := scanStep(ks, ksEnvNow, cursor, scanOpts{count: 10})
		keys = append(keys, k...)
		if cursor = nc; cursor == 0 {
			break
		}
	}
	if len(keys) != n/1000 {
		t.Errorf("SCAN after the shrink: %d keys, want %d", len(keys), n/1000)
	}
}
