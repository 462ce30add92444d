package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// modelEntry is the reference model's entry.
type modelEntry struct {
	id StreamID
	fv []string
}

// TestStreamModel runs random appends, deletes, trims and range reads on
// a Stream and on a plain sorted slice, comparing every read.
func TestStreamModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := &Stream{}
		var model []modelEntry
		next := StreamID{1, 0}
		for step := range 3000 {
			switch op := rng.IntN(20); {
			case op < 12: // append
				next.Ms += uint64(rng.IntN(3))
				next.Seq = uint64(rng.IntN(3))
				if !s.LastID().Less(next) {
					next = s.LastID()
					next.Seq++
				}
				n := 1 + rng.IntN(3)
				var fv [][]byte
				var sfv []string
				for i := range n {
					f := fmt.Sprintf("f%d", i)
					if rng.IntN(4) == 0 {
						f = fmt.Sprintf("g%d", rng.IntN(3))
					}
					v := fmt.Sprint(rng.IntN(1000))
					if rng.IntN(50) == 0 {
						v = string(make([]byte, 300+rng.IntN(2000)))
					}
					fv = append(fv, []byte(f), []byte(v))
					sfv = append(sfv, f, v)
				}
				s.Append(next, fv)
				model = append(model, modelEntry{next, sfv})
			case op < 15 && len(model) > 0: // delete
				i := rng.IntN(len(model))
				if !s.Delete(model[i].id) {
					t.Fatalf("seed %d step %d: Delete(%v) found nothing", seed, step, model[i].id)
				}
				if s.Delete(model[i].id) {
					t.Fatalf("seed %d step %d: second Delete(%v) found it", seed, step, model[i].id)
				}
				model = slices.Delete(model, i, i+1)
			case op < 17: // trim
				tr := TrimStrategy{MaxLen: rng.IntN(2) == 0, Approx: rng.IntN(2) == 0}
				if tr.MaxLen {
					tr.Len = int64(rng.IntN(len(model) + 1))
				} else if len(model) > 0 {
					tr.MinID = model[rng.IntN(len(model))].id
				}
				if tr.Approx && rng.IntN(2) == 0 {
					tr.Limit = int64(rng.IntN(300))
				}
				removed := s.Trim(tr)
				if !tr.Approx && tr.Limit == 0 {
					want := 0
					if tr.MaxLen {
						want = max(len(model)-int(tr.Len), 0)
					} else {
						for want < len(model) && model[want].id.Less(tr.MinID) {
							want++
						}
					}
					if int(removed) != want {
						t.Fatalf("seed %d step %d: exact trim %+v removed %d, want %d", seed, step, tr, removed, want)
					}
				}
				model = model[removed:]
			default: // range
				if len(model) == 0 {
					break
				}
				a, b := model[rng.IntN(len(model))].id, model[rng.IntN(len(model))].id
				if b.Less(a) {
					a, b = b, a
				}
				rev := rng.IntN(2) == 0
				var got []modelEntry
				s.Range(a, b, rev, func(id StreamID, fv [][]byte) bool {
					var sfv []string
					for _, x := range fv {
						sfv = append(sfv, string(x))
					}
					got = append(got, modelEntry{id, sfv})
					return true
				})
				var want []modelEntry
				for _, e := range model {
					if !e.id.Less(a) && !b.Less(e.id) {
						want = append(want, e)
					}
				}
				if rev {
					slices.Reverse(want)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("seed %d step %d: Range(%v, %v, rev=%v) = %v, want %v", seed, step, a, b, rev, got, want)
				}
			}
			if len(model) > 0 {
				// Point lookups (XCLAIM, XAUTOCLAIM): a live entry, and
				// an id at or just after one, live, deleted or never
				// added.
				e := model[rng.IntN(len(model))]
				fv, ok := s.Get(e.id)
				var sfv []string
				for _, x := range fv {
					sfv = append(sfv, string(x))
				}
				if !ok || !slices.Equal(sfv, e.fv) {
					t.Fatalf("seed %d step %d: Get(%v) = %q, %v; want %q", seed, step, e.id, sfv, ok, e.fv)
				}
				probe := StreamID{e.id.Ms, e.id.Seq + uint64(rng.IntN(3))}
				want := slices.ContainsFunc(model, func(m modelEntry) bool { return m.id == probe })
				if s.Has(probe) != want {
					t.Fatalf("seed %d step %d: Has(%v) = %v, want %v", seed, step, probe, !want, want)
				}
			}
			if s.Len() != int64(len(model)) {
				t.Fatalf("seed %d step %d: Len %d, model %d", seed, step, s.Len(), len(model))
			}
			wantFirst := StreamID{}
			if len(model) > 0 {
				wantFirst = model[0].id
			}
			if s.FirstID() != wantFirst {
				t.Fatalf("seed %d step %d: FirstID %v, want %v", seed, step, s.FirstID(), wantFirst)
			}
		}
	}
}

func TestPELList(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l pelList
	tl := pelList{byTime: true}
	var model []*PendingEntry
	for step := range 6000 {
		if rng.IntN(3) > 0 || len(model) == 0 {
			id := StreamID{uint64(rng.IntN(2000)), 0}
			if step >= 5000 { // ascending appends, as XREADGROUP makes them
				id = StreamID{uint64(step), 0}
			}
			if l.Find(id) != nil {
				continue
			}
			e := &PendingEntry{ID: id, DeliveryTime: int64(rng.IntN(100))}
			l.insert(e)
			tl.insert(e)
			model = append(model, e)
		} else {
			i := rng.IntN(len(model))
			l.remove(model[i])
			tl.remove(model[i])
			model = slices.Delete(model, i, i+1)
		}
		if l.Len() != len(model) || tl.Len() != len(model) {
			t.Fatalf("step %d: Len %d/%d, want %d", step, l.Len(), tl.Len(), len(model))
		}
	}
	slices.SortFunc(model, func(a, b *PendingEntry) int { return a.ID.Compare(b.ID) })
	var got []*PendingEntry
	l.Ascend(StreamID{}, func(e *PendingEntry) bool { got = append(got, e); return true })
	if !slices.Equal(got, model) {
		t.Fatalf("Ascend order differs")
	}
	for _, e := range model {
		if l.Find(e.ID) != e {
			t.Fatalf("Find(%v) missed", e.ID)
		}
	}
	minT := model[0].DeliveryTime
	for _, e := range model {
		minT = min(minT, e.DeliveryTime)
	}
	if tl.first().DeliveryTime != minT {
		t.Fatalf("oldest delivery %d, want %d", tl.first().DeliveryTime, minT)
	}
}

func TestParseStreamID(t *testing.T) {
	tests := []struct {
		in   string
		p    idParse
		want StreamID
		auto bool
		ok   bool
	}{
		{"1-2", idParse{}, StreamID{1, 2}, false, true},
		{"5", idParse{missingSeq: 7}, StreamID{5, 7}, false, true},
		{"-", idParse{}, StreamID{}, false, true},
		{"+", idParse{}, MaxStreamID, false, true},
		{"-", idParse{strict: true}, StreamID{}, false, false},
		{"1-*", idParse{allowAuto: true}, StreamID{1, 0}, true, true},
		{"1-*", idParse{}, StreamID{}, false, false},
		{"01-2", idParse{}, StreamID{1, 2}, false, true},
		{" 1", idParse{}, StreamID{1, 0}, false, true},
		{"+1", idParse{}, StreamID{1, 0}, false, true},
		{"-1", idParse{}, StreamID{}, false, false},
		{"1-", idParse{}, StreamID{}, false, false},
		{"18446744073709551615-18446744073709551615", idParse{}, MaxStreamID, false, true},
		{"18446744073709551616", idParse{}, StreamID{}, false, false},
		{"1x", idParse{}, StreamID{}, false, false},
		{"", idParse{}, StreamID{}, false, false},
	}
	for _, tt := range tests {
		got, ok := parseStreamID([]byte(tt.in), tt.p)
		if ok != tt.ok || (ok && (got.id != tt.want || got.autoSeq != tt.auto)) {
			t.Errorf("parseStreamID(%q, %+v) = %v %v, want %v %v %v", tt.in, tt.p, got, ok, tt.want, tt.auto, tt.ok)
		}
	}
}
