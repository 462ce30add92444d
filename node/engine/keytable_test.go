package engine

import (
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"testing"
	"unsafe"

	"pgregory.net/rapid"
)

// TestKeyTableModel runs random sets, deletes, lookups and iterations
// (some deleting as they go) against a Go map.
func TestKeyTableModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := maphash.MakeSeed()
		var tab keyTable
		model := map[string]*Entry{}
		// A small key universe, so that keys come back after deletes and
		// probe sequences run over tombstones.
		key := rapid.StringMatching(`k[0-9]{1,2}`)
		check := func(what string) {
			if tab.Len() != len(model) {
				rt.Fatalf("%s: Len %d, model %d", what, tab.Len(), len(model))
			}
			if tab.slots != nil && int(tab.used)*keyTableMaxDen > len(tab.slots)*keyTableMaxNum {
				rt.Fatalf("%s: %d of %d slots used", what, tab.used, len(tab.slots))
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"set": func(rt *rapid.T) {
				k := key.Draw(rt, "key")
				e := &Entry{Str: []byte(k)}
				old, stored := tab.set(seed, []byte(k), e)
				if old != model[k] || stored != k || tab.storedKey(seed, []byte(k)) != k {
					rt.Fatalf("set %q replaced %p (stored %q), model %p", k, old, stored, model[k])
				}
				model[k] = e
				check("set")
			},
			"delete": func(rt *rapid.T) {
				k := key.Draw(rt, "key")
				_, had := model[k]
				if got := tab.delete(seed, k); got != had {
					rt.Fatalf("delete %q: %v, model %v", k, got, had)
				}
				delete(model, k)
				check("delete")
			},
			"get": func(rt *rapid.T) {
				k := key.Draw(rt, "key")
				if got, want := tab.get(seed, []byte(k)), model[k]; got != want {
					rt.Fatalf("get %q: %p, model %p", k, got, want)
				}
				if got, want := tab.getString(seed, k), model[k]; got != want {
					rt.Fatalf("getString %q: %p, model %p", k, got, want)
				}
			},
			"iterate": func(rt *rapid.T) {
				// Every key once; deleting the ones seen (as active expiry
				// does) neither repeats nor skips a key.
				del := rapid.Bool().Draw(rt, "delete while iterating")
				seen := map[string]bool{}
				for k, e := range tab.all() {
					if seen[k] {
						rt.Fatalf("key %q twice", k)
					}
					seen[k] = true
					if model[k] != e {
						rt.Fatalf("key %q with %p, model %p", k, e, model[k])
					}
					if del && len(seen)%2 == 0 {
						tab.delete(seed, k)
						delete(model, k)
					}
				}
				if del {
					check("iterate")
					return
				}
				if !maps.Equal(seen, func() map[string]bool {
					m := map[string]bool{}
					for k := range model {
						m[k] = true
					}
					return m
				}()) {
					rt.Fatalf("iteration saw %v, model %v", slices.Sorted(maps.Keys(seen)), slices.Sorted(maps.Keys(model)))
				}
			},
			"reset": func(rt *rapid.T) {
				if rapid.IntRange(0, 9).Draw(rt, "rarely") != 0 {
					return
				}
				tab.reset()
				clear(model)
				check("reset")
			},
		})
	})
}

// TestKeyTableShrinks: a table emptied by deletes gives its array back,
// and one thinned out is rebuilt smaller at the next insert.
func TestKeyTableShrinks(t *testing.T) {
	seed := maphash.MakeSeed()
	var tab keyTable
	for i := range 10000 {
		tab.set(seed, fmt.Appendf(nil, "key:%d", i), &Entry{})
	}
	big := len(tab.slots)
	for i := range 9990 {
		tab.delete(seed, fmt.Sprintf("key:%d", i))
	}
	if len(tab.slots) != big {
		t.Fatalf("deletes rebuilt the table: %d slots, was %d", len(tab.slots), big)
	}
	// The next insert finds the table under 1/8 full and rebuilds it
	// for the 11 keys.
	tab.set(seed, []byte("new"), &Entry{})
	if len(tab.slots) != 32 {
		t.Fatalf("thinned table rebuilt at %d slots for %d keys (was %d)", len(tab.slots), tab.Len(), big)
	}
	for i := 9990; i < 10000; i++ {
		if tab.get(seed, fmt.Appendf(nil, "key:%d", i)) == nil {
			t.Fatalf("key:%d lost in the rebuild", i)
		}
	}
	for k := range tab.all() {
		tab.delete(seed, k)
	}
	if tab.slots != nil || tab.Len() != 0 || tab.used != 0 {
		t.Fatalf("emptied table keeps %d slots, len %d, used %d", len(tab.slots), tab.Len(), tab.used)
	}
}

// TestShardLayout: a shard is one cache line and the array of them
// starts on one (see Shard).
func TestShardLayout(t *testing.T) {
	if got := unsafe.Sizeof(Shard{}); got != 64 {
		t.Errorf("Shard is %d bytes, want 64", got)
	}
	if got := unsafe.Sizeof(keySlot{}); got != 32 {
		t.Errorf("keySlot is %d bytes, want 32", got)
	}
	// An entry fits Go's 64-byte size class; a field more costs every
	// key 16 bytes (the next class is 80).
	if got := unsafe.Sizeof(Entry{}); got > 64 {
		t.Errorf("Entry is %d bytes, want at most 64", got)
	}
	ks := New()
	if off := uintptr(unsafe.Pointer(&ks.shards[0])) % 64; off != 0 {
		t.Errorf("shards start %d bytes into a cache line", off)
	}
}

func BenchmarkKeyTableGet(b *testing.B) {
	for _, n := range []int{6, 1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			seed := maphash.MakeSeed()
			var tab keyTable
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key:%012d", i)
				tab.set(seed, keys[i], &Entry{})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if tab.get(seed, keys[i%n]) == nil {
					b.Fatal("missing")
				}
			}
		})
	}
}
