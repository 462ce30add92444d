package segbit

import (
	"math"
	"math/big"
	"slices"
	"strconv"
)

// model is one logical bitmap as the test sees it: its runs of ones and
// its length in bytes (1 + the highest byte ever written).
type model struct {
	ones   []span // disjoint, sorted, not adjacent
	length uint64
}

type span struct{ lo, hi uint64 } // inclusive

func (m *model) get(o uint64) bool {
	for _, r := range m.ones {
		if o >= r.lo && o <= r.hi {
			return true
		}
	}
	return false
}

func (m *model) set(o uint64, v bool) {
	m.length = max(m.length, o/8+1)
	if m.get(o) == v {
		return
	}
	if v {
		m.ones = normalize(append(m.ones, span{o, o}))
		return
	}
	var out []span
	for _, r := range m.ones {
		if o < r.lo || o > r.hi {
			out = append(out, r)
			continue
		}
		if r.lo < o {
			out = append(out, span{r.lo, o - 1})
		}
		if o < r.hi {
			out = append(out, span{o + 1, r.hi})
		}
	}
	m.ones = out
}

// normalize sorts runs and merges overlapping or adjacent ones.
func normalize(rs []span) []span {
	slices.SortFunc(rs, func(a, b span) int {
		if a.lo < b.lo {
			return -1
		}
		if a.lo > b.lo {
			return 1
		}
		return 0
	})
	var out []span
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// count is the number of ones in [s, e].
func (m *model) count(s, e uint64) int64 {
	var n int64
	for _, r := range m.ones {
		lo, hi := max(r.lo, s), min(r.hi, e)
		if lo <= hi {
			n += int64(hi - lo + 1)
		}
	}
	return n
}

// first returns the first bit equal to v in [s, e].
func (m *model) first(v bool, s, e uint64) (uint64, bool) {
	if v {
		for _, r := range m.ones {
			if r.hi >= s && r.lo <= e {
				return max(r.lo, s), true
			}
		}
		return 0, false
	}
	x := s
	for _, r := range m.ones {
		if r.hi < x {
			continue
		}
		if r.lo > x {
			break
		}
		if r.hi == 1<<64-1 {
			return 0, false
		}
		x = r.hi + 1
	}
	return x, x <= e
}

// combine is BITOP over models.
func combine(op string, srcs []*model) *model {
	out := &model{}
	for _, s := range srcs {
		out.length = max(out.length, s.length)
	}
	if out.length == 0 {
		return out
	}
	end := out.length * 8 // exclusive
	cuts := []uint64{0, end}
	for _, s := range srcs {
		for _, r := range s.ones {
			cuts = append(cuts, r.lo, r.hi+1)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	for i := 0; i+1 < len(cuts) && cuts[i] < end; i++ {
		a := cuts[i]
		v := srcs[0].get(a)
		switch op {
		case "NOT":
			v = !v
		default:
			for _, s := range srcs[1:] {
				switch op {
				case "AND":
					v = v && s.get(a)
				case "OR":
					v = v || s.get(a)
				case "XOR":
					v = v != s.get(a)
				}
			}
		}
		if v {
			out.ones = append(out.ones, span{a, min(cuts[i+1], end) - 1})
		}
	}
	out.ones = normalize(out.ones)
	return out
}

// modelRange resolves start/end against tot with big integers, as Redis's
// code reads (independently of normRange).
func modelRange(start, end int64, tot uint64) (s, e uint64, ok bool) {
	t := new(big.Int).SetUint64(tot)
	bs, be := big.NewInt(start), big.NewInt(end)
	if start < 0 {
		bs.Add(bs, t)
	}
	if end < 0 {
		be.Add(be, t)
	}
	zero := big.NewInt(0)
	if bs.Cmp(zero) < 0 {
		bs.SetInt64(0)
	}
	if be.Cmp(zero) < 0 {
		be.SetInt64(0)
	}
	if be.Cmp(t) >= 0 {
		be.Sub(t, big.NewInt(1))
	}
	if bs.Cmp(be) > 0 {
		return 0, 0, false
	}
	return bs.Uint64(), be.Uint64(), true
}

// bitcount is the model's answer to BITCOUNT key [start end [unit]].
func (m *model) bitcount(ranged bool, start, end int64, isBit bool) int64 {
	if m.length == 0 {
		return 0
	}
	if !ranged {
		return m.count(0, 1<<64-1)
	}
	if start < 0 && end < 0 && start > end {
		return 0
	}
	tot := m.length
	if isBit {
		tot *= 8
	}
	s, e, ok := modelRange(start, end, tot)
	if !ok {
		return 0
	}
	if !isBit {
		s, e = s*8, e*8+7
	}
	return m.count(s, e)
}

// bitpos is the model's answer to BITPOS key bit [start [end [unit]]].
func (m *model) bitpos(bit int64, start, end int64, endGiven, isBit bool) int64 {
	if m.length == 0 {
		return -bit
	}
	tot := m.length
	if isBit {
		tot *= 8
	}
	s, e, ok := modelRange(start, end, tot)
	if !ok {
		return -1
	}
	if !isBit {
		s, e = s*8, e*8+7
	}
	if p, ok := m.first(bit == 1, s, e); ok {
		return int64(p)
	}
	if bit == 1 || endGiven || e >= math.MaxInt64 {
		return -1 // no bit past the last addressable one
	}
	return int64(e + 1)
}

func u(n uint64) string  { return strconv.FormatUint(n, 10) }
func i64(n int64) string { return strconv.FormatInt(n, 10) }
