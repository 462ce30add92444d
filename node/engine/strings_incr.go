package engine

import (
	"math"

	"github.com/shardgate/shardgate/internal/resp"
)

func cmdIncr(c *Ctx) { incrDecr(c, 1) }
func cmdDecr(c *Ctx) { incrDecr(c, -1) }

// cmdIncrby parses its increment before looking at the key, so a bad
// increment wins over WRONGTYPE, as in Redis.
func cmdIncrby(c *Ctx) {
	n, ok := resp.ParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	incrDecr(c, n)
}

// cmdDecrby refuses the one decrement that cannot be negated.
func cmdDecrby(c *Ctx) {
	n, ok := resp.ParseInt(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return
	}
	if n == math.MinInt64 {
		c.W.Error(resp.ErrDecrOverflow)
		return
	}
	incrDecr(c, -n)
}

// incrDecr adds incr to the integer at the key (0 when missing), keeping
// its expiry. The result is formatted into the existing buffer, so
// counting on an existing key allocates nothing, and the value is "int"
// encoded as Redis stores it.
func incrDecr(c *Ctx, incr int64) {
	key := c.Args[1]
	e := c.Lookup(key)
	var v int64
	if e != nil {
		if e.Kind != KindString {
			c.W.Error(resp.ErrWrongType)
			return
		}
		var ok bool
		if v, ok = resp.ParseInt(smallStr(e)); !ok {
			c.W.Error(resp.ErrNotInteger)
			return
		}
	}
	if (incr < 0 && v < 0 && incr < math.MinInt64-v) ||
		(incr > 0 && v > 0 && incr > math.MaxInt64-v) {
		c.W.Error(resp.ErrOverflow)
		return
	}
	v += incr
	if e == nil {
		e = &Entry{Kind: KindString, Str: make([]byte, 0, intBufLen)}
		c.KS.Set(c.Shard, key, e)
	}
	e.SetStrBytes(appendInt(e.Str[:0], v))
	e.Enc = EncInt
	changed(c, key)
	c.W.Int(v)
}

// intBufLen holds any int64 in decimal ("-9223372036854775808").
const intBufLen = 20

// cmdIncrbyfloat adds a long double increment to the value, as Redis does
// in x87 extended precision (see numbers.go). Checks come in Redis's
// order: type, the stored value, the increment, then a NaN or infinite
// result. The new value is stored as its text, with the encoding Redis's
// createStringObject gives it (embstr or raw, never int).
func cmdIncrbyfloat(c *Ctx) {
	key := c.Args[1]
	e := c.Lookup(key)
	if e != nil && e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	cur := ldFromInt(0)
	if e != nil {
		var ok bool
		if cur, ok = parseLongDouble(smallStr(e)); !ok {
			c.W.Error(resp.ErrNotFloat)
			return
		}
	}
	incr, ok := parseLongDouble(c.Args[2])
	if !ok {
		c.W.Error(resp.ErrNotFloat)
		return
	}
	sum, ok := addLD(cur, incr)
	if !ok {
		c.W.Error(resp.ErrIncrNaNOrInf)
		return
	}
	var tmp [64]byte
	text := appendLongDouble(tmp[:0], sum)
	storeString(c, key, e, text, createdEncoding(text), true)
	changed(c, key)
	c.W.Bulk(text)
}
