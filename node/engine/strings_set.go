package engine

import (
	"fmt"
	"math"

	"github.com/shardgate/shardgate/internal/resp"
)

// setFlags are the options of SET and GETEX, as Redis's OBJ_* flags.
type setFlags uint16

const (
	optNX setFlags = 1 << iota
	optXX
	optGet
	optKeepTTL
	optPersist
	optEX
	optPX
	optEXAT
	optPXAT
)

// optExpire is any of the options that take a time.
const optExpire = optEX | optPX | optEXAT | optPXAT

// setOptions is a parsed option list.
type setOptions struct {
	flags  setFlags
	expire []byte // the time argument of EX/PX/EXAT/PXAT, nil without one
}

// parseSetOptions parses the options of SET (forSet) or GETEX, from args
// (everything after the key, and after the value for SET), the way Redis's
// parseExtendedStringArgumentsOrReply does. Its rules, kept exactly:
//   - NX and XX exclude each other but may repeat; GET goes with anything;
//   - KEEPTTL (SET) and PERSIST (GETEX) exclude the four time options;
//   - a time option excludes the other three but may repeat (the last wins)
//     and needs a following argument;
//   - options compare as C strings: an argument is read up to its first NUL
//     byte, so "NX\x00junk" is NX.
//
// Anything else is a syntax error (ok=false).
func parseSetOptions(args [][]byte, forSet bool) (o setOptions, ok bool) {
	for j := 0; j < len(args); j++ {
		opt := cString(args[j])
		hasNext := j+1 < len(args)
		f := o.flags
		switch {
		case forSet && equalFoldASCII(opt, "nx") && f&optXX == 0:
			o.flags |= optNX
		case forSet && equalFoldASCII(opt, "xx") && f&optNX == 0:
			o.flags |= optXX
		case forSet && equalFoldASCII(opt, "get"):
			o.flags |= optGet
		case forSet && equalFoldASCII(opt, "keepttl") && f&(optPersist|optExpire) == 0:
			o.flags |= optKeepTTL
		case !forSet && equalFoldASCII(opt, "persist") && f&(optKeepTTL|optExpire) == 0:
			o.flags |= optPersist
		case hasNext && f&(optKeepTTL|optPersist) == 0 && timeOption(opt) != 0 &&
			f&(optExpire&^timeOption(opt)) == 0:
			o.flags |= timeOption(opt)
			o.expire = args[j+1]
			j++
		default:
			return o, false
		}
	}
	return o, true
}

// timeOption returns which of EX, PX, EXAT, PXAT opt names, or 0.
func timeOption(opt []byte) setFlags {
	switch {
	case equalFoldASCII(opt, "ex"):
		return optEX
	case equalFoldASCII(opt, "px"):
		return optPX
	case equalFoldASCII(opt, "exat"):
		return optEXAT
	case equalFoldASCII(opt, "pxat"):
		return optPXAT
	}
	return 0
}

// cString is b up to its first NUL byte, as C string functions see it.
func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// expireAt turns the time argument of option flag (one of optExpire) into
// an absolute unix time in milliseconds, as Redis's
// getExpireMillisecondsOrReply does: the argument must be a positive
// integer, seconds must not overflow when made milliseconds, and a relative
// time must not overflow when the current time is added. On error it
// replies (naming cmd in the text) and returns false.
func expireAt(c *Ctx, arg []byte, flag setFlags, cmd string) (int64, bool) {
	v, ok := resp.ParseInt(arg)
	if !ok {
		c.W.Error(resp.ErrNotInteger)
		return 0, false
	}
	seconds := flag&(optEX|optEXAT) != 0
	if v <= 0 || (seconds && v > math.MaxInt64/1000) {
		c.W.Error(fmt.Sprintf(resp.ErrInvalidExpire, cmd))
		return 0, false
	}
	if seconds {
		v *= 1000
	}
	if flag&(optEX|optPX) != 0 {
		v += c.Now // wraps on overflow, caught below as in Redis
	}
	if v <= 0 {
		c.W.Error(fmt.Sprintf(resp.ErrInvalidExpire, cmd))
		return 0, false
	}
	return v, true
}

// setReplies are the replies of a SET-like command when it sets the key
// and when NX/XX stop it: SET says OK or null, SETNX 1 or 0.
type setReplies uint8

const (
	repliesSet setReplies = iota
	repliesSetnx
)

// setGeneric is Redis's setGenericCommand: validate the time, run the GET
// part, test NX/XX, then store the value, clearing the old expiry unless
// KEEPTTL, and set the new one. A time already past is stored as it is
// (the key then expires on its next access), as Redis 7.0 does.
func setGeneric(c *Ctx, o setOptions, key, val []byte, cmd string, r setReplies) {
	var at int64
	if o.expire != nil {
		var ok bool
		if at, ok = expireAt(c, o.expire, o.flags&optExpire, cmd); !ok {
			return
		}
	}
	var e *Entry
	if o.flags&optGet != 0 {
		var ok bool
		if e, ok = getGeneric(c, key); !ok {
			return
		}
	} else {
		e = c.Lookup(key)
	}
	if (o.flags&optNX != 0 && e != nil) || (o.flags&optXX != 0 && e == nil) {
		if o.flags&optGet == 0 {
			if r == repliesSetnx {
				c.W.Int(0)
			} else {
				c.W.Null()
			}
		}
		return
	}
	e = storeString(c, key, e, val, stringEncoding(val), o.flags&optKeepTTL != 0)
	if o.expire != nil {
		c.KS.SetExpire(c.Shard, key, e, at)
	}
	changed(c, key)
	if o.flags&optGet == 0 {
		if r == repliesSetnx {
			c.W.Int(1)
		} else {
			c.W.OK()
		}
	}
}

func cmdSet(c *Ctx) {
	o, ok := parseSetOptions(c.Args[3:], true)
	if !ok {
		c.W.Error(resp.ErrSyntax)
		return
	}
	setGeneric(c, o, c.Args[1], c.Args[2], "set", repliesSet)
}

func cmdSetnx(c *Ctx) {
	setGeneric(c, setOptions{flags: optNX}, c.Args[1], c.Args[2], "setnx", repliesSetnx)
}

func cmdSetex(c *Ctx) {
	setGeneric(c, setOptions{flags: optEX, expire: c.Args[2]}, c.Args[1], c.Args[3], "setex", repliesSet)
}

func cmdPsetex(c *Ctx) {
	setGeneric(c, setOptions{flags: optPX, expire: c.Args[2]}, c.Args[1], c.Args[3], "psetex", repliesSet)
}

// cmdGetset replies with the old value and sets the new one, dropping any
// expiry.
func cmdGetset(c *Ctx) {
	key := c.Args[1]
	e, ok := getGeneric(c, key)
	if !ok {
		return
	}
	storeString(c, key, e, c.Args[2], stringEncoding(c.Args[2]), false)
	changed(c, key)
}

// cmdGetdel replies with the value and deletes the key.
func cmdGetdel(c *Ctx) {
	key := c.Args[1]
	e, ok := getGeneric(c, key)
	if !ok || e == nil {
		return
	}
	c.KS.Delete(c.Shard, key, c.Now)
	changed(c, key)
}

// cmdGetex replies with the value and then changes its expiry. Redis checks
// in this order: options, key, type, time. An absolute time already past
// deletes the key at once (not counted as an expiry); PERSIST only counts
// as a change when there was an expiry to remove.
func cmdGetex(c *Ctx) {
	key := c.Args[1]
	o, ok := parseSetOptions(c.Args[2:], false)
	if !ok {
		c.W.Error(resp.ErrSyntax)
		return
	}
	e := lookupRead(c, key)
	if e == nil {
		c.W.Null()
		return
	}
	if e.Kind != KindString {
		c.W.Error(resp.ErrWrongType)
		return
	}
	var at int64
	if o.expire != nil {
		if at, ok = expireAt(c, o.expire, o.flags&optExpire, "getex"); !ok {
			return
		}
	}
	writeStrValue(c.W, e)
	switch {
	case o.flags&(optEXAT|optPXAT) != 0 && at <= c.Now:
		c.KS.Delete(c.Shard, key, c.Now)
		changed(c, key)
	case o.expire != nil:
		c.KS.SetExpire(c.Shard, key, e, at)
		changed(c, key)
	case o.flags&optPersist != 0 && e.Expire != 0:
		c.KS.SetExpire(c.Shard, key, e, 0)
		changed(c, key)
	}
}

// checkPairs replies Redis's arity error for MSET/MSETNX when the key/value
// list is odd (the table's arity lets "MSET k v k" through).
func checkPairs(c *Ctx, cmd string) bool {
	if len(c.Args)%2 == 0 {
		c.W.Error(fmt.Sprintf(resp.ErrWrongArgs, cmd))
		return false
	}
	return true
}

func cmdMset(c *Ctx) {
	if !checkPairs(c, "mset") {
		return
	}
	msetAll(c)
	c.W.OK()
}

// cmdMsetnx sets all pairs only when none of the keys exists.
func cmdMsetnx(c *Ctx) {
	if !checkPairs(c, "msetnx") {
		return
	}
	for i := 1; i < len(c.Args); i += 2 {
		if c.Lookup(c.Args[i]) != nil {
			c.W.Int(0)
			return
		}
	}
	msetAll(c)
	c.W.Int(1)
}

// msetAll stores every key/value pair of the arguments, clearing expiries.
func msetAll(c *Ctx) {
	for i := 1; i < len(c.Args); i += 2 {
		key, val := c.Args[i], c.Args[i+1]
		storeString(c, key, c.Lookup(key), val, stringEncoding(val), false)
		c.Shard.TouchBytes(key)
	}
	c.KS.Dirty(int64(len(c.Args) / 2))
}
