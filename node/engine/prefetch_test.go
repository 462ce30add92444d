package engine

import (
	"fmt"
	"sync"
	"testing"
)

// Prefetch reads and changes nothing a lookup can see, whatever the keys:
// present, missing, empty, repeated, more than one round's worth, and
// while other goroutines grow and shrink the same shards' tables.
func TestPrefetchChangesNothing(t *testing.T) {
	ks := New()
	set := func(k string) {
		ks.RLock()
		sh := ks.ShardOf([]byte(k))
		sh.Lock()
		ks.Set(sh, []byte(k), &Entry{})
		sh.Unlock()
		ks.RUnlock()
	}
	for i := range 1000 {
		set(fmt.Sprint("k", i))
	}
	var keys [][]byte
	for i := range 100 {
		keys = append(keys, []byte(fmt.Sprint("k", i*13)), []byte(fmt.Sprint("missing", i)))
	}
	keys = append(keys, nil, []byte{}, []byte("k1"), []byte("k1"), []byte("{k1}x"))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // resize tables under Prefetch's unlocked reads
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			k := []byte(fmt.Sprint("churn", n%5000))
			ks.RLock()
			sh := ks.ShardOf(k)
			sh.Lock()
			if n%2 == 0 {
				ks.Set(sh, k, &Entry{})
			} else {
				ks.Delete(sh, k, 0)
			}
			sh.Unlock()
			ks.RUnlock()
		}
	}()
	for range 200 {
		ks.Prefetch(keys)
		ks.Prefetch(keys[:1])
		ks.Prefetch(nil)
	}
	close(stop)
	wg.Wait()

	for i := range 1000 {
		k := []byte(fmt.Sprint("k", i))
		sh := ks.ShardOf(k)
		if ks.Peek(sh, k, 0) == nil {
			t.Fatalf("key %s lost", k)
		}
	}
	if sh := ks.ShardOf([]byte("missing1")); ks.Peek(sh, []byte("missing1"), 0) != nil {
		t.Fatal("Prefetch created a key")
	}
}
