package engine

func registerKeyspace(h map[string]Handler) {
	h["del"] = cmdDel
}

func cmdDel(c *Ctx) {
	n := 0
	for _, k := range c.Args[1:] {
		if c.KS.Delete(c.Shard, k, c.Now) {
			c.Shard.TouchBytes(k)
			n++
		}
	}
	c.KS.Dirty(int64(n))
	c.W.Int(int64(n))
}
