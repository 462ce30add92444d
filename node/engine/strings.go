package engine

import "github.com/shardgate/shardgate/internal/resp"

func registerStrings(h map[string]Handler) {
	h["get"] = cmdGet
	h["set"] = cmdSet
}

func cmdGet(c *Ctx) {
	e := c.Lookup(c.Args[1])
	switch {
	case e == nil:
		c.W.Null()
	case e.Kind != KindString:
		c.W.Error(resp.ErrWrongType)
	default:
		c.W.Bulk(e.Str)
	}
}

// cmdSet is a placeholder for plain SET key value; the options come with
// the strings family.
func cmdSet(c *Ctx) {
	if len(c.Args) != 3 {
		c.W.Error(resp.ErrSyntax)
		return
	}
	key, val := c.Args[1], c.Args[2]
	if e := c.Lookup(key); e != nil && e.Kind == KindString && e.Expire == 0 && cap(e.Str) >= len(val) {
		e.Str = append(e.Str[:0], val...)
	} else {
		c.KS.Set(c.Shard, key, &Entry{Kind: KindString, Str: append([]byte(nil), val...)})
	}
	c.Shard.TouchBytes(key)
	c.KS.Dirty(1)
	c.W.OK()
}
