package proxy

import (
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// CLIENT subcommands, answered about the client's connection to the proxy
// (ids, names and addresses are the proxy's, never a node's).

func registerClientCmds(h map[string]func(c *client, args [][]byte)) {
	h["client|id"] = func(c *client, _ [][]byte) { c.local.Int(c.id) }
	h["client|setname"] = cmdClientSetName
	h["client|getname"] = cmdClientGetName
	h["client|reply"] = cmdClientReply
}

func cmdClientSetName(c *client, args [][]byte) {
	if !validClientName(args[2]) {
		c.local.Error(resp.ErrClientName)
		return
	}
	c.setName(args[2])
	c.local.OK()
}

func cmdClientGetName(c *client, _ [][]byte) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.local.Null()
		return
	}
	c.local.BulkString(name)
}

// cmdClientReply: OFF and SKIP have no reply themselves; handle applies
// the mode to the ops that follow.
func cmdClientReply(c *client, args [][]byte) {
	switch {
	case slots.EqualFold("on", args[2]):
		c.reply = replyOn
		c.local.OK()
	case slots.EqualFold("off", args[2]):
		c.reply = replyOff
	case slots.EqualFold("skip", args[2]):
		if c.reply != replyOff {
			c.reply = replySkipNext
		}
	default:
		c.local.Error(resp.ErrSyntax)
	}
}

// validClientName: Redis allows only printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// setName sets the connection name; an empty name clears it.
func (c *client) setName(b []byte) {
	c.mu.Lock()
	c.name = string(b)
	c.mu.Unlock()
}
