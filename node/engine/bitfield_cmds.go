package engine

import "github.com/shardgate/shardgate/internal/resp"

// BITFIELD and BITFIELD_RO, as Redis 7.0.15's bitfieldGeneric answers
// them:
//   - every subcommand is parsed before anything runs, so a bad one late in
//     the list fails the whole command with no effect;
//   - with only GETs (or none) the key is read (a keyspace hit or miss)
//     and may be missing or any string; BITFIELD_RO refuses SET and INCRBY
//     after parsing and before looking at the key;
//   - with writes, the string is first grown (or created) with zeros to
//     cover the highest bit any SET or INCRBY touches, even when every
//     write then fails under OVERFLOW FAIL;
//   - a write counts as a change (WATCH, dirty) when the string grew or
//     the field's value changed; a failed write replies nil and changes
//     nothing.

func registerBitfield(h map[string]Handler) {
	h["bitfield"] = cmdBitfield
	h["bitfield_ro"] = cmdBitfieldRO
}

func cmdBitfield(c *Ctx)   { bitfield(c, false) }
func cmdBitfieldRO(c *Ctx) { bitfield(c, true) }

// bfInline is how many subcommands are parsed without allocating.
const bfInline = 8

func bitfield(c *Ctx, readOnly bool) {
	var inline [bfInline]bfOp
	p, errText := parseBitfield(c.Args, inline[:0])
	if errText != "" {
		c.W.Error(errText)
		return
	}
	key := c.Args[1]
	if !p.writes {
		e := lookupRead(c, key)
		if e != nil && e.Kind != KindString {
			c.W.Error(resp.ErrWrongType)
			return
		}
		c.W.Array(len(p.ops))
		for i := range p.ops {
			bitfieldGet(c.W, e, &p.ops[i])
		}
		return
	}
	if readOnly {
		c.W.Error(resp.ErrBitfieldRO)
		return
	}
	e := c.Lookup(key)
	if e != nil && e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	if e == nil {
		e = &Entry{Kind: KindString, Enc: EncRaw}
		c.KS.Set(c.Shard, key, e)
	}
	e.Enc = EncRaw // Redis unshares the value (an int or embstr turns raw)
	need := p.highest>>3 + 1
	grew := need > e.StrLen()
	if grew {
		e.GrowStr(need)
	}
	changes := 0
	c.W.Array(len(p.ops))
	for i := range p.ops {
		op := &p.ops[i]
		if op.op == bfGet {
			bitfieldGet(c.W, e, op)
			continue
		}
		if written, changed := bitfieldWrite(c.W, e, op); written && (changed || grew) {
			changes++
		}
	}
	if changes > 0 {
		c.Shard.TouchBytes(key)
		c.KS.Dirty(int64(changes))
	}
}

// bitfieldGet replies with one field of e (nil e: a missing key, all
// zeros).
func bitfieldGet(w *resp.Writer, e *Entry, op *bfOp) {
	var win bfWindow
	if e != nil {
		e.ReadStr(win[:], op.off>>3)
	}
	shift, bits := uint(op.off&7), uint(op.bits)
	if op.signed {
		w.Int(win.getSigned(shift, bits))
	} else {
		w.Int(int64(win.get(shift, bits)))
	}
}

// bitfieldWrite runs one SET or INCRBY on e, already long enough, and
// replies. It reports whether it wrote (a write refused by OVERFLOW FAIL
// replies nil and does not) and whether the field's value changed.
func bitfieldWrite(w *resp.Writer, e *Entry, op *bfOp) (written, changed bool) {
	var win bfWindow
	start := op.off >> 3
	e.ReadStr(win[:], start)
	shift, bits := uint(op.off&7), uint(op.bits)
	var oldv, newv, reply uint64
	overflow := 0
	if op.signed {
		old := win.getSigned(shift, bits)
		var nv, wrapped int64
		if op.op == bfIncrby {
			overflow, wrapped = signedOverflow(old, op.val, bits, op.ow)
			nv = old + op.val
			if overflow != 0 {
				nv = wrapped
			}
			reply = uint64(nv)
		} else {
			nv = op.val
			if overflow, wrapped = signedOverflow(nv, 0, bits, op.ow); overflow != 0 {
				nv = wrapped
			}
			reply = uint64(old)
		}
		oldv, newv = uint64(old), uint64(nv)
	} else {
		old := win.get(shift, bits)
		var nv, wrapped uint64
		if op.op == bfIncrby {
			overflow, wrapped = unsignedOverflow(old, op.val, bits, op.ow)
			nv = old + uint64(op.val)
			if overflow != 0 {
				nv = wrapped
			}
			reply = nv
		} else {
			nv = uint64(op.val)
			if overflow, wrapped = unsignedOverflow(nv, 0, bits, op.ow); overflow != 0 {
				nv = wrapped
			}
			reply = old
		}
		oldv, newv = old, nv
	}
	if overflow != 0 && op.ow == bfFail {
		w.Null()
		return false, false
	}
	w.Int(int64(reply))
	win.set(shift, bits, newv)
	e.WriteStr(win[:bfSpan(shift, bits)], start)
	return true, oldv != newv
}
