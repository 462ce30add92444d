package engine

import "github.com/shardgate/shardgate/internal/resp"

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest
// common subsequence of two strings, as Redis 7.0's lcsCommand computes
// it. Missing keys are empty strings. The table is Redis's dynamic
// programming table of uint32 lengths, refused past proto-max-bulk-len
// exactly where Redis refuses it (LEN, which needs no walk back, then
// computes in two rows). Where several subsequences are equally long,
// the walk back through the table takes Redis's path, so the string and
// the IDX ranges are Redis's too.

// lcsOpts are LCS's parsed options.
type lcsOpts struct {
	getLen, getIdx, withMatchLen bool
	minMatchLen                  int64
}

func cmdLcs(c *Ctx) {
	ea := lookupRead(c, c.Args[1])
	eb := lookupRead(c, c.Args[2])
	if (ea != nil && ea.Kind != KindString) || (eb != nil && eb.Kind != KindString) {
		c.W.Error(resp.ErrLcsNotStrings)
		return
	}
	var o lcsOpts
	args := c.Args
	for j := 3; j < len(args); j++ {
		opt := args[j]
		switch {
		case equalFoldASCII(opt, "idx"):
			o.getIdx = true
		case equalFoldASCII(opt, "len"):
			o.getLen = true
		case equalFoldASCII(opt, "withmatchlen"):
			o.withMatchLen = true
		case equalFoldASCII(opt, "minmatchlen") && j < len(args)-1:
			n, ok := resp.ParseInt(args[j+1])
			if !ok {
				c.W.Error(resp.ErrNotInteger)
				return
			}
			o.minMatchLen = max(n, 0)
			j++
		default:
			c.W.Error(resp.ErrSyntax)
			return
		}
	}
	if o.getLen && o.getIdx {
		c.W.Error(resp.ErrLcsLenAndIdx)
		return
	}
	alen, blen := lcsLen(ea), lcsLen(eb)
	// Strings are at most 512 MB, so this cannot overflow.
	if (alen+1)*(blen+1)*4 > maxStringLen {
		c.W.Error(resp.ErrLcsTooBig)
		return
	}
	var a, b []byte
	if alen != 0 && blen != 0 {
		// An empty string has nothing in common with the other, which is
		// not read (Redis still builds a table of one row per byte).
		a, b = lcsBytes(ea), lcsBytes(eb)
	}
	if o.getLen {
		c.W.Int(int64(lcsLength(a, b)))
		return
	}
	lcsReply(c.W, a, b, o)
}

func lcsLen(e *Entry) int64 {
	if e == nil {
		return 0
	}
	return e.StrLen()
}

func lcsBytes(e *Entry) []byte {
	if e == nil {
		return nil
	}
	return e.StrBytes()
}

// lcsLength is the length of the longest common subsequence, in two rows
// of the table (LEN needs no walk back), each as long as the shorter
// string: the length does not depend on the order of the strings, and
// the size check bounds the shorter one to about 11,600 bytes.
func lcsLength(a, b []byte) uint32 {
	if len(b) > len(a) {
		a, b = b, a
	}
	prev := make([]uint32, len(b)+1)
	cur := make([]uint32, len(b)+1)
	for _, ai := range a {
		lcsRow(cur, prev, ai, b)
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lcsRow fills row (the table's row for a's byte ai) from up, the row
// above: the LCS length of the prefixes grows by one where the bytes
// match and is the longer of the two shorter prefixes' otherwise.
func lcsRow(row, up []uint32, ai byte, b []byte) {
	row, up = row[:len(b)+1], up[:len(b)+1]
	left := uint32(0)
	for j, bj := range b {
		v := max(up[j+1], left)
		if ai == bj {
			v = up[j] + 1
		}
		row[j+1] = v
		left = v
	}
}

// lcsRange is one IDX match: inclusive byte ranges in a and in b.
type lcsRange struct{ aStart, aEnd, bStart, bEnd int }

// lcsReply builds the full table, walks it back from the end and writes
// the subsequence, or with IDX the matches (last first, as Redis emits
// them while walking back) and the length.
func lcsReply(w *resp.Writer, a, b []byte, o lcsOpts) {
	alen, blen := len(a), len(b)
	cols := blen + 1
	t := make([]uint32, (alen+1)*cols)
	for i := 1; i <= alen; i++ {
		lcsRow(t[i*cols:(i+1)*cols], t[(i-1)*cols:i*cols], a[i-1], b)
	}
	total := t[alen*cols+blen]
	result := make([]byte, total)
	var matches []lcsRange
	// The walk: a match extends the current range backwards (both
	// strings step back together); a mismatch, or reaching the first
	// byte of either string, closes it. On a mismatch Redis steps back in
	// a only when that keeps a strictly longer subsequence, else in b.
	idx := int(total)
	unset := alen // Redis's marker for "no range open"
	cur := lcsRange{aStart: unset}
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if cur.aStart == unset {
				cur = lcsRange{i - 1, i - 1, j - 1, j - 1}
			} else if cur.aStart == i && cur.bStart == j {
				cur.aStart--
				cur.bStart--
			} else {
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if t[(i-1)*cols+j] > t[i*cols+j-1] {
				i--
			} else {
				j--
			}
			if cur.aStart != unset {
				emit = true
			}
		}
		if emit {
			if n := int64(cur.aEnd - cur.aStart + 1); o.minMatchLen == 0 || n >= o.minMatchLen {
				matches = append(matches, cur)
			}
			cur.aStart = unset
		}
	}
	if !o.getIdx {
		w.Bulk(result)
		return
	}
	w.Map(2)
	w.BulkString("matches")
	w.Array(len(matches))
	for _, m := range matches {
		if o.withMatchLen {
			w.Array(3)
		} else {
			w.Array(2)
		}
		w.Array(2)
		w.Int(int64(m.aStart))
		w.Int(int64(m.aEnd))
		w.Array(2)
		w.Int(int64(m.bStart))
		w.Int(int64(m.bEnd))
		if o.withMatchLen {
			w.Int(int64(m.aEnd - m.aStart + 1))
		}
	}
	w.BulkString("len")
	w.Int(int64(total))
}
