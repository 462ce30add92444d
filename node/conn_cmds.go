package node

func (s *Server) connHandlers() map[string]func(c *client, args [][]byte) {
	h := map[string]func(c *client, args [][]byte){}
	registerTxCmds(s, h)
	h["ping"] = s.cmdPing
	return h
}

func (s *Server) cmdPing(c *client, args [][]byte) {
	if len(args) > 2 {
		c.rejectf("wrong number of arguments for '%s' command", "ping")
		return
	}
	if len(args) == 2 {
		c.w.Bulk(args[1])
		return
	}
	c.w.Simple("PONG")
}
