package engine

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// listModel is the plain-slice model the List is checked against.
type listModel [][]byte

func checkList(t rapid.TB, l *List, m listModel) {
	t.Helper()
	if l.Len() != len(m) {
		t.Fatalf("Len %d, model %d", l.Len(), len(m))
	}
	total := 0
	for i, c := range l.chunks() {
		if c.n <= 0 {
			t.Fatalf("chunk %d has %d entries", i, c.n)
		}
		if c.used() > listChunkBytes && c.n > 1 {
			t.Fatalf("chunk %d holds %d bytes in %d entries", i, c.used(), c.n)
		}
		n := 0
		for off := int(c.start); off < int(c.end); n++ {
			_, off = readEntry(c.buf, off)
			if off > int(c.end) {
				t.Fatalf("chunk %d: entry past the end", i)
			}
		}
		if n != int(c.n) {
			t.Fatalf("chunk %d: %d entries, n says %d", i, n, c.n)
		}
		total += n
	}
	if total != l.Len() {
		t.Fatalf("chunks hold %d, Len %d", total, l.Len())
	}
	var got [][]byte
	l.Walk(false, func(v []byte) bool { got = append(got, slices.Clone(v)); return true })
	if !equalLists(got, m) {
		t.Fatalf("forward walk %q, model %q", got, m)
	}
	got = got[:0]
	l.Walk(true, func(v []byte) bool { got = append(got, slices.Clone(v)); return true })
	slices.Reverse(got)
	if !equalLists(got, m) {
		t.Fatalf("reverse walk %q, model %q", got, m)
	}
}

func equalLists(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return bytes.Equal(x, y) })
}

// TestListModel drives a List and a slice with the same random operations
// (small chunks of every size, elements from empty to bigger than a chunk)
// and compares them after each.
func TestListModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := &List{}
		var m listModel
		pool := [][]byte{[]byte("a"), []byte("b"), []byte(""), []byte("x")}
		elem := rapid.Custom(func(t *rapid.T) []byte {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0:
				return bytes.Repeat([]byte{'L'}, rapid.IntRange(100, 20000).Draw(t, "biglen"))
			case 1, 2, 3:
				return pool[rapid.IntRange(0, len(pool)-1).Draw(t, "pool")]
			default:
				return rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "bytes")
			}
		})
		index := func(t *rapid.T) int { return rapid.IntRange(0, len(m)-1).Draw(t, "i") }
		t.Repeat(map[string]func(*rapid.T){
			"pushBack": func(t *rapid.T) {
				for range rapid.IntRange(1, 200).Draw(t, "times") {
					v := elem.Draw(t, "v")
					l.PushBack(v)
					m = append(m, slices.Clone(v))
				}
			},
			"pushFront": func(t *rapid.T) {
				for range rapid.IntRange(1, 200).Draw(t, "times") {
					v := elem.Draw(t, "v")
					l.PushFront(v)
					m = slices.Insert(m, 0, slices.Clone(v))
				}
			},
			"popFront": func(t *rapid.T) {
				if len(m) == 0 {
					t.Skip("no element to act on")
				}
				if v := l.PopFront(); !bytes.Equal(v, m[0]) {
					t.Fatalf("PopFront %q, model %q", v, m[0])
				}
				m = m[1:]
			},
			"popBack": func(t *rapid.T) {
				if len(m) == 0 {
					t.Skip("no element to act on")
				}
				if v := l.PopBack(); !bytes.Equal(v, m[len(m)-1]) {
					t.Fatalf("PopBack %q, model %q", v, m[len(m)-1])
				}
				m = m[:len(m)-1]
			},
			"index": func(t *rapid.T) {
				if len(m) == 0 {
					t.Skip("no element to act on")
				}
				i := index(t)
				if v := l.Index(i); !bytes.Equal(v, m[i]) {
					t.Fatalf("Index(%d) %q, model %q", i, v, m[i])
				}
			},
			"set": func(t *rapid.T) {
				if len(m) == 0 {
					t.Skip("no element to act on")
				}
				i := index(t)
				v := elem.Draw(t, "v")
				l.Set(i, v)
				m[i] = slices.Clone(v)
			},
			"range": func(t *rapid.T) {
				if len(m) == 0 {
					t.Skip("no element to act on")
				}
				a, b := index(t), index(t)
				if a > b {
					a, b = b, a
				}
				rev := rapid.Bool().Draw(t, "rev")
				var got [][]byte
				l.Range(a, b, rev, func(v []byte) bool { got = append(got, slices.Clone(v)); return true })
				want := slices.Clone(m[a : b+1])
				if rev {
					slices.Reverse(want)
				}
				if !equalLists(got, want) {
					t.Fatalf("Range(%d,%d,%v) %q, model %q", a, b, rev, got, want)
				}
			},
			"trim": func(t *rapid.T) {
				a := rapid.IntRange(0, len(m)).Draw(t, "front")
				b := rapid.IntRange(0, len(m)-a).Draw(t, "back")
				l.TrimFront(a)
				l.TrimBack(b)
				m = m[a : len(m)-b]
			},
			"insert": func(t *rapid.T) {
				pivot := pool[rapid.IntRange(0, len(pool)-1).Draw(t, "pivot")]
				v := elem.Draw(t, "v")
				after := rapid.Bool().Draw(t, "after")
				i := slices.IndexFunc(m, func(x []byte) bool { return bytes.Equal(x, pivot) })
				if got := l.Insert(pivot, v, after); got != (i >= 0) {
					t.Fatalf("Insert found %v, model %v", got, i >= 0)
				}
				if i >= 0 {
					if after {
						i++
					}
					m = slices.Insert(m, i, slices.Clone(v))
				}
			},
			"remove": func(t *rapid.T) {
				v := pool[rapid.IntRange(0, len(pool)-1).Draw(t, "v")]
				count := rapid.Int64Range(-5, 5).Draw(t, "count")
				got := l.Remove(v, count)
				var want int64
				limit := count
				if limit < 0 {
					limit = -limit
				}
				if count >= 0 {
					for i := 0; i < len(m); i++ {
						if bytes.Equal(m[i], v) && (limit == 0 || want < limit) {
							m = slices.Delete(m, i, i+1)
							i--
							want++
						}
					}
				} else {
					for i := len(m) - 1; i >= 0; i-- {
						if bytes.Equal(m[i], v) && want < limit {
							m = slices.Delete(m, i, i+1)
							want++
						}
					}
				}
				if got != want {
					t.Fatalf("Remove(%q, %d) = %d, model %d", v, count, got, want)
				}
			},
			"clone": func(t *rapid.T) {
				c := l.CloneValue().(*List)
				checkList(t, c, m)
				if c.Len() > 0 {
					c.PushFront([]byte("zzz"))
					c.Set(c.Len()-1, []byte("changed"))
				}
			},
			"": func(t *rapid.T) { checkList(t, l, m) },
		})
	})
}

// TestListEntryEncoding round-trips entries whose lengths cross the
// uvarint and backlen size boundaries.
func TestListEntryEncoding(t *testing.T) {
	for _, n := range []int{0, 1, 125, 126, 127, 128, 129, 16380, 16381, 16382, 16383, 16384, 70000} {
		v := bytes.Repeat([]byte{'v'}, n)
		buf := make([]byte, entrySize(n)+3)
		size := putEntry(buf[3:], v)
		if size != entrySize(n) {
			t.Fatalf("len %d: size %d, entrySize %d", n, size, entrySize(n))
		}
		got, next := readEntry(buf, 3)
		if !bytes.Equal(got, v) || next != 3+size {
			t.Fatalf("len %d: read %d bytes, next %d", len(got), next, 3+size)
		}
		if s := prevEntry(buf, 3+size); s != 3 {
			t.Fatalf("len %d: prevEntry %d, want 3", n, s)
		}
	}
}

func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	runtime.GC()
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestListMemoryPerElement measures the heap a list of 1,000,000 small
// elements takes (the numbers in List's doc comment) and fails if it
// grows past 12 bytes per element.
func TestListMemoryPerElement(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a million elements")
	}
	const n = 1_000_000
	for _, tc := range []struct {
		name string
		elem func(i int) []byte
		max  float64
	}{
		{"e<i>", func(i int) []byte { return []byte("e" + strconv.Itoa(i)) }, 12},
		{"16 bytes", func(i int) []byte { return fmt.Appendf(nil, "%016d", i) }, 21},
	} {
		var data float64
		for i := range n {
			data += float64(len(tc.elem(i)))
		}
		before := heapObjectBytes()
		l := &List{}
		for i := range n {
			l.PushBack(tc.elem(i))
		}
		after := heapObjectBytes()
		per := float64(after-before) / n
		t.Logf("%s: %.1f bytes per element (data %.1f), MEMORY USAGE estimate %.1f", tc.name, per, data/n,
			float64(l.MemoryUsage(0))/n)
		if per > tc.max {
			t.Errorf("%s: %.1f bytes per element, want <= %v", tc.name, per, tc.max)
		}
		runtime.KeepAlive(l)
	}
}

func BenchmarkListPushPop(b *testing.B) {
	l := &List{}
	v := []byte(strings.Repeat("x", 10))
	for range 100 {
		l.PushFront(v)
	}
	b.ReportAllocs()
	for b.Loop() {
		l.PushFront(v)
		l.PopBack()
	}
}
