package engine

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzListOps reads the input as a program of List operations (pushes and
// pops at both ends, Set, Insert, Remove, trims) with elements from a small
// pool plus sizes that cross the entry-encoding and chunk boundaries, and
// checks the list against a slice model after each step.
func FuzzListOps(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 3, 3, 4})
	f.Add([]byte{0, 200, 0, 201, 1, 202, 5, 0, 6, 1, 7, 3, 8, 1})
	f.Add([]byte{0, 250, 0, 250, 0, 250, 4, 3, 9, 2, 9, 129})
	f.Fuzz(func(t *testing.T, prog []byte) {
		l := &List{}
		var m [][]byte
		elem := func(b byte) []byte {
			switch {
			case b < 200:
				return [][]byte{[]byte("a"), []byte("b"), {}, []byte("ccc")}[b%4]
			case b < 250:
				return bytes.Repeat([]byte{b}, int(b-190)*3) // 30..177 bytes: 1 and 2-byte headers
			default:
				return bytes.Repeat([]byte{'z'}, 3000+int(b-250)*2000) // chunk-sized
			}
		}
		for len(prog) >= 2 && len(m) < 5000 {
			op, arg := prog[0]%10, prog[1]
			prog = prog[2:]
			switch op {
			case 0, 1: // a run of pushes, back (0) or front (1)
				for range int(arg%16) + 1 {
					v := elem(arg)
					if op == 0 {
						l.PushBack(v)
						m = append(m, v)
					} else {
						l.PushFront(v)
						m = slices.Insert(m, 0, v)
					}
				}
			case 2, 3:
				if len(m) == 0 {
					continue
				}
				var got, want []byte
				if op == 2 {
					got, want, m = l.PopFront(), m[0], m[1:]
				} else {
					got, want, m = l.PopBack(), m[len(m)-1], m[:len(m)-1]
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("pop %q, model %q", got, want)
				}
			case 4, 5:
				if len(m) == 0 {
					continue
				}
				i := int(arg) % len(m)
				if op == 4 {
					v := elem(arg * 7)
					l.Set(i, v)
					m[i] = v
				} else if got := l.Index(i); !bytes.Equal(got, m[i]) {
					t.Fatalf("Index(%d) %q, model %q", i, got, m[i])
				}
			case 6:
				pivot, v := elem(arg%4), elem(arg)
				i := slices.IndexFunc(m, func(x []byte) bool { return bytes.Equal(x, pivot) })
				if l.Insert(pivot, v, arg&4 != 0) != (i >= 0) {
					t.Fatalf("Insert: found differs")
				}
				if i >= 0 {
					if arg&4 != 0 {
						i++
					}
					m = slices.Insert(m, i, v)
				}
			case 7:
				v, count := elem(arg%4), int64(arg>>2%7)-3
				var want int64
				if count >= 0 {
					for i := 0; i < len(m); i++ {
						if bytes.Equal(m[i], v) && (count == 0 || want < count) {
							m = slices.Delete(m, i, i+1)
							i--
							want++
						}
					}
				} else {
					for i := len(m) - 1; i >= 0; i-- {
						if bytes.Equal(m[i], v) && want < -count {
							m = slices.Delete(m, i, i+1)
							want++
						}
					}
				}
				if got := l.Remove(v, count); got != want {
					t.Fatalf("Remove(%q, %d) %d, model %d", v, count, got, want)
				}
			case 8, 9:
				k := min(int(arg)%8, len(m))
				if op == 8 {
					l.TrimFront(k)
					m = m[k:]
				} else {
					l.TrimBack(k)
					m = m[:len(m)-k]
				}
			}
			checkList(t, l, m)
		}
	})
}
