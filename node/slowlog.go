package node

import (
	"fmt"
	"time"

	"github.com/shardgate/shardgate/internal/cmdstats"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/internal/slowlog"
	"github.com/shardgate/shardgate/slots"
)

// SLOWLOG: commands whose run took at least slowlog-log-slower-than, as
// Redis measures it: the command itself (here with its parsing, see
// slowBegin), not the writing of its reply, nor the time a blocking
// command waited (logged once served, not at all when it times out). Commands refused before
// they run (unknown, arity, auth, CROSSSLOT, MOVED, OOM) are not logged;
// inside a transaction each command is, and EXEC is not.

func registerSlowlogCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["slowlog|get"] = s.cmdSlowlogGet
	h["slowlog|len"] = func(c *client, _ [][]byte) { c.w.Int(int64(s.slowlog.Len())) }
	h["slowlog|reset"] = func(c *client, _ [][]byte) { s.slowlog.Reset(); c.w.OK() }
	h["slowlog|help"] = func(c *client, _ [][]byte) { writeHelp(c, slowlog.Help) }
	// LATENCY reads INFO latencystats's histograms, with no latency
	// monitor (internal/cmdstats).
	for _, name := range cmdstats.LatencyCommands {
		h[name] = func(c *client, args [][]byte) { s.cmdStats.Latency(&c.w, args) }
	}
}

func (s *Server) cmdSlowlogGet(c *client, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(fmt.Sprintf(resp.ErrSubcommandSyntax, args[1], "SLOWLOG"))
		return
	}
	count := int64(10)
	if len(args) == 3 {
		n, ok := slowlog.ParseCount(args[2])
		if !ok {
			c.w.Error(resp.ErrSlowlogCount)
			return
		}
		count = n
	}
	if c.slowlogMicros {
		slowlog.WriteEntriesMicros(&c.w, s.slowlog.Newest(count))
		return
	}
	slowlog.WriteEntries(&c.w, s.slowlog.Newest(count))
}

// slowClock is a monotonic clock for timing commands: one reading of
// it costs half what time.Now does.
func (s *Server) slowClock() time.Duration { return time.Since(s.start) }

// Timing a command costs one clock reading: it starts at c.slowMark, the
// end of the command before it (or the start of the batch, tick), and its
// own end is the next one's start. Parsing a command is thus counted in
// its time, which is well below what any threshold but 0 can see. The
// same reading times the command for INFO commandstats and latencystats.

// cmdTiming is what cmdBegin notes of a command about to run.
type cmdTiming struct {
	start  time.Duration // c.slowMark when it began
	logged bool          // the slow log may take it (not EXEC, log on)
}

// cmdBegin starts timing a command about to run; args is what to run and
// log.
func (s *Server) cmdBegin(c *client, cmd *slots.Command, args [][]byte) ([][]byte, cmdTiming) {
	c.waited, c.unblocked = 0, slowServed
	c.errMark = c.errReplies
	c.running, c.blockCounted = cmd, false
	t := cmdTiming{start: c.slowMark}
	if s.slowlog.Threshold() < 0 || cmd.Has(slots.FlagSkipSlowlog) || c.unlogged {
		return args, t
	}
	if cmd.Has(slots.FlagBlocking) {
		// What a blocked client's connection reads while it waits may
		// move its buffer, and args with it.
		args = copyArgs(args)
	}
	t.logged = true
	return args, t
}

// slowBlockEnd is how a command that blocked stopped waiting, for the
// slow log.
type slowBlockEnd uint8

const (
	slowServed    slowBlockEnd = iota // it did not block, or was served: logged
	slowUnserved                      // it timed out, or its client left: not logged
	slowUnblocked                     // CLIENT UNBLOCK: logged without its arguments
)

// cmdEnd counts the command cmdBegin timed in INFO commandstats and logs
// it if it was slow. Its time leaves out what it waited blocked. As in
// Redis 7.0, a command that blocked was counted as it blocked (wait);
// its end adds its time, and the latency histogram takes it unless it
// timed out or its client left; one ended by CLIENT UNBLOCK (either way)
// is a failed call.
// The slow log takes a command ended by CLIENT UNBLOCK with no arguments,
// as Redis 7.0 logs it (its unblock path records the command after its
// arguments are gone), and one that timed out not at all.
func (s *Server) cmdEnd(c *client, cmd *slots.Command, args [][]byte, t cmdTiming) {
	now := s.slowClock()
	c.slowMark = now
	d := now - t.start - c.waited
	// Failed: an error reply since the command, or the last one it ran
	// (EXEC), began; as Redis, an EXEC whose commands failed did not.
	failed := c.errReplies != c.errMark
	c.errMark = c.errReplies
	c.running = nil
	switch {
	case c.refusedRun:
		c.refusedRun = false
		s.cmdStats.Rejected(&c.cstats, cmd.ID)
		return
	case c.blockCounted: // counted as it blocked (wait)
		c.blockCounted = false
		switch c.unblocked {
		case slowUnserved:
			s.cmdStats.Unblocked(&c.cstats, cmd.ID, int64(d), false, false)
		case slowUnblocked:
			s.cmdStats.Unblocked(&c.cstats, cmd.ID, int64(d), true, true)
		default:
			s.cmdStats.Unblocked(&c.cstats, cmd.ID, int64(d), failed, true)
		}
	default:
		c.pendingCmds++ // total_commands_processed, as Redis's call() counts
		s.cmdStats.Call(&c.cstats, cmd.ID, int64(d), failed)
	}
	if !t.logged || !s.slowlog.Slow(d) {
		return
	}
	switch c.unblocked {
	case slowUnserved:
		return
	case slowUnblocked:
		args = nil
	}
	s.slowlog.Push(cmd, args, d, c.raddr, c.clientName(), s.opts.Now())
}

func copyArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}
