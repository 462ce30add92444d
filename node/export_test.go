package node

import (
	"time"

	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// PanicOnForTest makes the named command (a table name such as "get" or
// "client|id") panic with value on server s only, so tests can prove a
// crashing handler costs one ERR reply and a log line. It swaps the route
// of this Server instance; production code never reaches it, and other
// servers keep their handlers.
func PanicOnForTest(s *Server, name string, value any) {
	var cmd *slots.Command
	for _, c := range allCommands() {
		if c.FullName == name {
			cmd = c
		}
	}
	if cmd == nil {
		panic("PanicOnForTest: no command " + name)
	}
	r := &s.routes[cmd.ID]
	switch {
	case r.data != nil:
		r.data = func(*engine.Ctx) { panic(value) }
	case r.conn != nil:
		r.conn = func(*client, [][]byte) { panic(value) }
	default:
		panic("PanicOnForTest: command " + name + " has no handler")
	}
}

// allCommands lists the table's commands and subcommands.
func allCommands() []*slots.Command {
	var out []*slots.Command
	var walk func(c *slots.Command)
	walk = func(c *slots.Command) {
		out = append(out, c)
		for _, sub := range c.Subcommands {
			walk(sub)
		}
	}
	for _, c := range slots.All() {
		walk(c)
	}
	return out
}

// SlowSnapshotsForTest makes every snapshot pause for d after each
// slotsPerPause slots (outside any lock), so that tests see clients write
// while a snapshot is half done.
func SlowSnapshotsForTest(s *Server, slotsPerPause int, d time.Duration) {
	s.snapPause = func(slot uint16) {
		if int(slot)%slotsPerPause == slotsPerPause-1 {
			time.Sleep(d)
		}
	}
}

// OnLoadYieldForTest runs f each time a load done by Serve lets the
// commands waiting for the keyspace in (loadState.check).
func OnLoadYieldForTest(s *Server, f func()) { s.load.yielded = f }

// PeerChecksForTest is how many times serving blocked clients asked
// whether a client had closed its connection.
func PeerChecksForTest(s *Server) int64 { return s.blk.peerChecks.Load() }
