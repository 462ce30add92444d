package engine

import (
	"bytes"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// SORT and SORT_RO on lists, as a Redis 7.0 Cluster node answers them
// (sort.c): BY with a pattern and GET are refused in cluster mode, so
// what remains sorts the list's own elements (numerically, or with
// ALPHA as strings), keeps its order (BY with a constant), reverses it
// (DESC), slices it (LIMIT) and returns it or stores it as a list
// (STORE, SORT only). Sets and sorted sets are not served, so a key of
// any other kind is WRONGTYPE.

func registerSort(h map[string]Handler) {
	h["sort"] = func(c *Ctx) { sortGeneric(c, false) }
	h["sort_ro"] = func(c *Ctx) { sortGeneric(c, true) }
}

// sortItem is one element with its numeric score.
type sortItem struct {
	v     []byte
	score float64
}

// sortGeneric is SORT (readonly false) and SORT_RO. Options are parsed
// left to right and the first bad one answers, before the key is looked
// up, as in Redis.
func sortGeneric(c *Ctx, readonly bool) {
	args := c.Args
	var (
		desc, alpha, dontsort bool
		limitStart            int64
		limitCount            int64 = -1
		store                 []byte
	)
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case equalFoldASCII(a, "asc"):
			desc = false
		case equalFoldASCII(a, "desc"):
			desc = true
		case equalFoldASCII(a, "alpha"):
			alpha = true
		case equalFoldASCII(a, "limit") && left >= 2:
			var ok bool
			if limitStart, ok = ksParseInt(args[j+1]); !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			if limitCount, ok = ksParseInt(args[j+2]); !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			j += 2
		case !readonly && equalFoldASCII(a, "store") && left >= 1:
			store = args[j+1]
			j++
		case equalFoldASCII(a, "by") && left >= 1:
			// A pattern names other keys, which a cluster node does not
			// look up; a constant (no '*', as C's strchr sees it) only
			// asks for no sorting.
			if bytes.IndexByte(cString(args[j+1]), '*') >= 0 {
				c.W.Error(resp.ErrSortByCluster)
				return
			}
			dontsort = true
			j++
		case equalFoldASCII(a, "get") && left >= 1:
			c.W.Error(resp.ErrSortGetCluster)
			return
		default:
			c.W.Error(resp.ErrSyntax)
			return
		}
	}

	e := readKey(c, args[1], true)
	if e != nil && e.Kind != KindList {
		c.W.Error(resp.ErrWrongType)
		return
	}
	var l *List
	n := 0
	if e != nil {
		l = listOf(e)
		n = l.Len()
	}
	start, end := sortRange(limitStart, limitCount, n)

	var items []sortItem
	switch {
	case l == nil:
	case dontsort:
		// The list's own order, from the end for DESC, sliced by LIMIT.
		if end >= start {
			items = make([]sortItem, 0, end-start+1)
			from, to := start, end
			if desc {
				from, to = n-1-end, n-1-start
			}
			l.Range(from, to, desc, func(v []byte) bool {
				items = append(items, sortItem{v: v})
				return true
			})
			end -= start
			start = 0
		}
	default:
		items = make([]sortItem, 0, n)
		l.Walk(false, func(v []byte) bool {
			items = append(items, sortItem{v: v})
			return true
		})
	}

	convErr := false
	if !dontsort && len(items) > 0 {
		if !alpha {
			for i := range items {
				f, ok := sortScore(items[i].v)
				if !ok {
					convErr = true
				}
				items[i].score = f
			}
		}
		slices.SortStableFunc(items, sortCompare(desc, alpha, store != nil))
	}

	var out []sortItem
	if end >= start {
		out = items[start : end+1]
	}
	switch {
	case convErr:
		c.W.Error(resp.ErrSortScores)
	case store == nil:
		c.W.Array(len(out))
		for _, it := range out {
			c.W.Bulk(it.v)
		}
	default:
		sortStore(c, store, out)
	}
}

// sortRange is Redis's LIMIT arithmetic over n elements: the first and
// last index to return, end < start when there are none.
func sortRange(limitStart, limitCount int64, n int) (start, end int) {
	ln := int64(n)
	s := min(max(limitStart, 0), ln)
	cnt := min(max(limitCount, -1), ln)
	e := ln - 1
	if cnt >= 0 {
		e = s + cnt - 1
	}
	if s >= ln {
		s, e = ln-1, ln-2
	}
	if e >= ln {
		e = ln - 1
	}
	return int(s), int(e)
}

// sortCompare orders two elements as Redis's sortCompare: by score, equal
// scores by their bytes; with ALPHA as C strings (strcoll in the C locale:
// up to the first NUL), or by all their bytes when the result is stored.
// DESC negates the comparison, so equal elements keep the list's order
// either way (glibc's qsort is a stable merge sort).
func sortCompare(desc, alpha, stored bool) func(a, b sortItem) int {
	return func(a, b sortItem) int {
		var cmp int
		switch {
		case !alpha:
			switch {
			case a.score > b.score:
				cmp = 1
			case a.score < b.score:
				cmp = -1
			default:
				cmp = bytes.Compare(a.v, b.v)
			}
		case stored:
			cmp = bytes.Compare(a.v, b.v)
		default:
			cmp = bytes.Compare(cString(a.v), cString(b.v))
		}
		if desc {
			return -cmp
		}
		return cmp
	}
}

// sortStore is STORE: the elements replace dst as a new list (without a
// TTL), or an empty result deletes dst; the reply is their count.
func sortStore(c *Ctx, dst []byte, items []sortItem) {
	if len(items) == 0 {
		if c.KS.DeleteStored(c.Shard, dst) { // dbDelete: see BITOP
			c.Shard.TouchBytes(dst)
			c.KS.Dirty(1)
		}
		c.W.Int(0)
		return
	}
	l := &List{}
	for _, it := range items {
		l.PushBack(it.v)
	}
	c.KS.Set(c.Shard, dst, newListEntry(l))
	c.Shard.TouchBytes(dst)
	c.KS.Dirty(int64(len(items)))
	c.W.Int(int64(len(items)))
}

// sortScore reads an element as SORT does with C's strtod: the string up
// to its first NUL, leading white space skipped, decimal or hexadecimal,
// inf or infinity; it must be read whole (the empty string is 0), and
// neither NaN, nor out of range: overflowing, or underflowing to zero or
// to an inexact subnormal (glibc's ERANGE).
func sortScore(b []byte) (float64, bool) {
	s := cString(b)
	if len(s) == 0 {
		return 0, true // strtod reads nothing and stops at the NUL
	}
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	body := s[i:]
	neg := false
	if len(body) > 0 && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	if equalFoldASCII(body, "inf") || equalFoldASCII(body, "infinity") {
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	hex := len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	var mant []byte
	var ok bool
	if hex {
		mant, ok = strtodSyntax(body[2:], isHexDigit, 'p')
	} else {
		mant, ok = strtodSyntax(body, isDecDigit, 'e')
	}
	if !ok {
		return 0, false
	}
	text := string(s[i:])
	if hex && bytes.IndexAny(body, "pP") < 0 {
		text += "p0" // strtod's binary exponent is optional, Go's is not
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, false // overflow
	}
	if f == 0 {
		// Zero from a nonzero mantissa underflowed.
		return f, len(bytes.Trim(mant, "0.")) == 0
	}
	if math.Abs(f) < 0x1p-1022 {
		// A subnormal: ERANGE unless it is exact.
		exact, ok := new(big.Rat).SetString(text)
		return f, ok && exact.Cmp(new(big.Rat).SetFloat64(f)) == 0
	}
	return f, true
}

// strtodSyntax checks that b is a whole strtod number after its sign and
// base prefix: digits with at most one point (at least one digit), then an
// optional exponent (the letter, a sign, decimal digits). It returns the
// mantissa.
func strtodSyntax(b []byte, digit func(byte) bool, expLetter byte) ([]byte, bool) {
	i, digits := 0, 0
	point := false
	for ; i < len(b); i++ {
		if digit(b[i]) {
			digits++
		} else if b[i] == '.' && !point {
			point = true
		} else {
			break
		}
	}
	if digits == 0 {
		return nil, false
	}
	mant := b[:i]
	if i == len(b) {
		return mant, true
	}
	if b[i]|0x20 != expLetter {
		return nil, false
	}
	i++
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	if i == len(b) {
		return nil, false
	}
	for ; i < len(b); i++ {
		if !isDecDigit(b[i]) {
			return nil, false
		}
	}
	return mant, true
}
