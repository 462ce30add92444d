package node

import (
	"fmt"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// The SHARDGATE commands a proxy sends its nodes, served with or without
// gossip (the migration's SHARDGATE commands need it, migrate.go). Each
// runs only outside MULTI and after AUTH.
//
//   - SHARDGATE EXPIRY-HOLD ms (pause.go).
//   - SHARDGATE UNLOGGED command ...: runs the command, which the slow log
//     does not take. A proxy sends a command it fans out to every node
//     as is to one of them and so to the others, so that the slow log it
//     shows (the nodes' merged) has the command once, as a Redis's has.
//   - SHARDGATE MICROS SLOWLOG GET [count]: SLOWLOG GET with each entry's
//     time in microseconds as a seventh element, by which a proxy merges
//     its nodes' logs newest first (Redis's seconds would leave the
//     commands of one second in node order).
//   - SHARDGATE BRIEF command ...: runs the command leaving out what a
//     proxy does not read (XINFO STREAM's first and last entries, nil in
//     their place): a proxy resolving a blocking XREAD's '$' reads only
//     the stream's last generated id, and the entries may be megabytes
//     that every client sharing the connection would wait behind.
//   - SHARDGATE SLOT slot command ...: runs the command if this node
//     serves the slot, else answers the slot's redirection (MOVED,
//     TRYAGAIN while a migration fences it, CLUSTERDOWN), as for a
//     command with a key there. A proxy sends the keyless commands that
//     name a slot (its SCAN cursor's, CLUSTER COUNTKEYSINSLOT's) this way,
//     so that a slot table a moment stale follows the slot to its new
//     owner instead of reading the old one's nothing.
//
// The wrappers nest (SHARDGATE UNLOGGED SHARDGATE MICROS SLOWLOG GET).

// proxyCommand returns the handler of args if they are one of them.
func proxyCommand(args [][]byte) func(s *Server, c *client, args [][]byte) {
	if len(args) < 2 {
		return nil
	}
	switch {
	case equalFoldASCII(args[1], "expiry-hold"):
		return (*Server).cmdExpiryHold
	case equalFoldASCII(args[1], "unlogged"):
		return (*Server).cmdUnlogged
	case equalFoldASCII(args[1], "micros"):
		return (*Server).cmdMicros
	case equalFoldASCII(args[1], "slot"):
		return (*Server).cmdSlotBound
	case equalFoldASCII(args[1], "brief"):
		return (*Server).cmdBrief
	}
	return nil
}

func (s *Server) cmdUnlogged(c *client, args [][]byte) {
	s.runWith(c, args, "shardgate|unlogged", &c.unlogged)
}

func (s *Server) cmdBrief(c *client, args [][]byte) {
	s.runWith(c, args, "shardgate|brief", &c.brief)
}

func (s *Server) cmdMicros(c *client, args [][]byte) {
	s.runWith(c, args, "shardgate|micros", &c.slowlogMicros)
}

func (s *Server) cmdSlotBound(c *client, args [][]byte) {
	if len(args) < 4 {
		c.w.Error(fmt.Sprintf(resp.ErrWrongArgs, "shardgate|slot"))
		return
	}
	slot, ok := resp.ParseInt(args[2])
	if !ok || slot < 0 || slot >= slots.Count {
		c.w.Error(resp.ErrInvalidSlot)
		return
	}
	if msg := s.notServed(uint16(slot)); msg != "" {
		c.w.Error(msg)
		return
	}
	s.execute(c, args[3:])
}

// runWith runs the command a wrapper (name) carries with *flag set.
func (s *Server) runWith(c *client, args [][]byte, name string, flag *bool) {
	if len(args) < 3 {
		c.w.Error(fmt.Sprintf(resp.ErrWrongArgs, name))
		return
	}
	was := *flag
	*flag = true
	s.execute(c, args[2:])
	*flag = was
}
