package proxy

import (
	"bytes"
	"slices"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Redirections. Nodes are the authority on who serves a slot; the proxy's
// slot table is a cache. A node that does not serve a command's slot
// answers as a Redis Cluster node does, and the proxy follows, so the
// client never sees it unless the hops run out:
//
//   - -MOVED <slot> <host>:<port>: the slot lives there now. The proxy
//     points the slot at that address (a backend is created if it is new),
//     asks for a fresh cluster view, and sends the command there.
//   - -ASK <slot> <host>:<port>: this one command goes there, after
//     ASKING; the table does not change.
//   - -TRYAGAIN ...: the slot is busy (a multi-key command during a
//     migration); the command is sent again to the same node after a
//     backoff.
//
// A batch's commands are resent in their original order, each to its new
// node, and the batch waits until every reply is final, so the client's
// replies stay in its order and commands for one slot reach its new owner
// in the order the client sent them: a command answered MOVED waits while
// an earlier command from its node is being retried after TRYAGAIN.
//
// Following is bounded in time, not only in hops, because a slot
// migration's fence holds the slot's commands (typically milliseconds, at
// worst about a second) and then answers MOVED, or TRYAGAIN when the fence
// outlasted the node's wait. From the batch's first redirection on, the
// proxy follows for at most Options.RedirectTimeout: TRYAGAIN rounds wait
// a backoff that starts at tryAgainBackoff and doubles up to maxBackoff,
// the last resend being made when the budget ends; a command follows at
// most maxRedirects MOVED or ASK hops, and from its third hop on (nodes
// that disagree about the slot, which gossip settles in time, not in
// hops) those rounds wait the backoff too. Once the budget is spent only
// a command's free hops are still followed (the fence's MOVED may answer
// the last resend). What is still a redirection when the budget or the
// hops run out goes to the client as the node said it. A multi-key
// command (one hash tag) is one unit: it runs whole on one node or is
// redirected whole, never split across a migration.
//
// A MULTI ... EXEC block sent whole on a shared connection is resent whole
// when the node refused it for a moved slot (a queued command or EXEC
// answered MOVED and EXEC did not run). Paths with node-side state are not
// resent: a blocking command on its dedicated connection is (blocking.go:
// nothing ran), but a transaction whose WATCHes live on the old node
// answers EXEC with a null reply, as if a watched key had changed, which
// makes a client retry it against the new owner (multi.go).
//
// A client that has gone (closed, reset or killed) is not followed for:
// its redirected commands did not run, and a client that timed out and
// sent them again on another connection (go-redis does, after 3 s) would
// otherwise have them run twice once the fence lifts. What the proxy
// pushes back for it (a blocking pop's element, returnPopped) is followed
// all the same.

// maxRedirects bounds the MOVED and ASK hops followed for one command
// (WATCH's too, multi.go): generous, since one migration costs one hop and
// a stale proxy view one more, but finite, so that two nodes that send a
// command to each other cannot keep it for the whole budget.
const maxRedirects = 16

// freeHops is the number of MOVED or ASK hops of one command followed at
// once; later hops wait the backoff.
const freeHops = 2

// tryAgainBackoff is the wait before the first resend after TRYAGAIN (or a
// hop past freeHops); it doubles each waiting round up to maxBackoff.
const (
	tryAgainBackoff = 5 * time.Millisecond
	maxBackoff      = 200 * time.Millisecond
)

// redirectBudget is the time left to follow redirections and the next
// backoff. The zero value has not started.
type redirectBudget struct {
	deadline time.Time
	wait     time.Duration
}

// start starts the budget d from now.
func (b *redirectBudget) start(d time.Duration) {
	b.deadline = time.Now().Add(d)
	b.wait = tryAgainBackoff
}

func (b *redirectBudget) started() bool { return !b.deadline.IsZero() }

// spent reports whether the budget has run out.
func (b *redirectBudget) spent() bool { return !time.Now().Before(b.deadline) }

// backoff sleeps before a resend: the current wait, but never past the
// budget's end (the last resend is made then) nor past limit (when not
// zero). The next wait doubles, up to maxBackoff.
func (b *redirectBudget) backoff(limit time.Time) {
	end := b.deadline
	if !limit.IsZero() && limit.Before(end) {
		end = limit
	}
	if d := min(b.wait, time.Until(end)); d > 0 {
		time.Sleep(d)
	}
	b.wait = min(2*b.wait, maxBackoff)
}

// redirectKind is what a node's reply asks of the proxy.
type redirectKind uint8

const (
	noRedirect redirectKind = iota
	redirectMoved
	redirectAsk
	redirectTryAgain
)

var (
	movedPrefix    = []byte("-MOVED ")
	askPrefix      = []byte("-ASK ")
	tryAgainPrefix = []byte("-TRYAGAIN")
	askingCmd      = [][]byte{[]byte("ASKING")}
)

// redirect is a parsed redirection.
type redirect struct {
	kind redirectKind
	slot uint16
	addr string
}

// parseRedirect reads a node's reply as a redirection; kind noRedirect if
// it is none (or malformed).
func parseRedirect(reply []byte) redirect {
	if len(reply) < 5 || reply[0] != '-' {
		return redirect{}
	}
	switch reply[1] {
	case 'M':
		if bytes.HasPrefix(reply, movedPrefix) {
			return parseTarget(redirectMoved, reply[len(movedPrefix):])
		}
	case 'A':
		if bytes.HasPrefix(reply, askPrefix) {
			return parseTarget(redirectAsk, reply[len(askPrefix):])
		}
	case 'T':
		if bytes.HasPrefix(reply, tryAgainPrefix) {
			return redirect{kind: redirectTryAgain}
		}
	}
	return redirect{}
}

// parseTarget reads "<slot> <host>:<port>\r\n".
func parseTarget(kind redirectKind, b []byte) redirect {
	b = bytes.TrimRight(b, "\r\n")
	sl, addr, ok := bytes.Cut(b, []byte{' '})
	if !ok || len(addr) == 0 || bytes.IndexByte(addr, ' ') >= 0 {
		return redirect{}
	}
	n, err := strconv.ParseUint(string(sl), 10, 16)
	if err != nil || n >= slots.Count {
		return redirect{}
	}
	return redirect{kind: kind, slot: uint16(n), addr: string(addr)}
}

// isRedirect is parseRedirect's cheap first test, for the hot path.
func isRedirect(reply []byte) bool {
	return len(reply) > 1 && reply[0] == '-' && (reply[1] == 'M' || reply[1] == 'A' || reply[1] == 'T')
}

// unitRedirect returns the redirection a unit of requests (one command, or
// a MULTI ... EXEC block) should follow.
func unitRedirect(reqs []*request) redirect {
	if len(reqs) == 1 {
		if !isRedirect(reqs[0].reply) {
			return redirect{}
		}
		return parseRedirect(reqs[0].reply)
	}
	// A transaction: only if EXEC did not run (an error: EXECABORT, or
	// EXEC's own MOVED), for a moved slot or a busy one.
	if exec := reqs[len(reqs)-1].reply; len(exec) == 0 || exec[0] != '-' {
		return redirect{}
	}
	for _, r := range reqs {
		if !isRedirect(r.reply) {
			continue
		}
		if rd := parseRedirect(r.reply); rd.kind == redirectMoved || rd.kind == redirectTryAgain {
			return rd
		}
	}
	return redirect{}
}

// followRedirects resends the batch's redirected commands until none is
// left or the budget (or a command's hops) ran out.
func (c *client) followRedirects() (followed bool) {
	rt := c.srv.route
	var budget redirectBudget
	// MOVED and ASK hops per unit, by the index of its first request;
	// made at the first such hop.
	var hops []uint8
	// Nodes a TRYAGAIN unit is resent to in this round.
	var busy []int32
	for round := 0; ; round++ {
		resent, wait := false, false
		spent := round > 0 && budget.spent()
		busy = busy[:0]
		checked := false
		n := c.nreq // ASKING requests added below are not looked at
		for i := 0; i < n; {
			r := c.reqs[i]
			u := int(r.unit)
			if u == 0 {
				i++
				continue
			}
			unit := c.reqs[i : i+u]
			first := i
			i += u
			rd := unitRedirect(unit)
			if rd.kind == noRedirect {
				continue
			}
			if !checked {
				checked = true
				if c.gone() {
					return round > 0
				}
			}
			if !budget.started() {
				budget.start(c.srv.opts.RedirectTimeout)
			}
			if rd.kind == redirectTryAgain {
				if spent {
					rt.redirects.exhausted.Add(1)
					continue
				}
				wait = true
				busy = append(busy, r.node)
			} else {
				if slices.Contains(busy, r.node) {
					// An earlier command on its node is busy: this one
					// waits a round, so that it does not reach the new
					// owner ahead of an earlier command of its slot (a
					// fence answers TRYAGAIN to the commands that
					// waited longest, MOVED to the next ones).
					continue
				}
				if hops == nil {
					hops = make([]uint8, n)
				}
				// A free hop is followed even when the budget is
				// spent: the reply to the last TRYAGAIN resend may be
				// the fence's MOVED, and a hop costs a round trip.
				h := hops[first]
				if h >= maxRedirects || spent && h >= freeHops {
					rt.redirects.exhausted.Add(1)
					continue
				}
				hops[first] = h + 1
				wait = wait || h+1 > freeHops
			}
			c.resend(unit, rd)
			resent = true
		}
		if !resent {
			return round > 0
		}
		if wait {
			budget.backoff(time.Time{})
			if c.gone() {
				// Left during the backoff: drop the resends.
				for i := range c.sends {
					clear(c.sends[i].reqs)
					c.sends[i].reqs = c.sends[i].reqs[:0]
				}
				return true
			}
		}
		c.sendQueued()
		for i := range c.sends {
			c.sends[i].used = false
		}
	}
}

// gone reports whether the client has left or been killed, as far as the
// kernel knows now (rawio.PeerClosed: a FIN or RST not read yet counts),
// and its redirected commands are to be dropped (not so what the proxy
// gives back for it: c.returning).
func (c *client) gone() bool {
	return !c.returning && (c.killed.Load() || rawio.PeerClosed(c.nc))
}

// resend queues a redirected unit for its new node.
func (c *client) resend(unit []*request, rd redirect) {
	rt := c.srv.route
	first := unit[0]
	var n int
	switch rd.kind {
	case redirectMoved:
		n = rt.noteMoved(rd.slot, rd.addr)
	case redirectAsk:
		rt.redirects.ask.Add(1)
		n = rt.poolFor(rd.addr)
	default:
		rt.redirects.tryAgain.Add(1)
		n = int(first.node)
	}
	s := c.sendTo(n)
	if rd.kind == redirectAsk {
		// ASKING's +OK is nobody's reply.
		s.buf = resp.AppendCommand(s.buf, askingCmd)
		s.reqs = append(s.reqs, c.newRequest())
	}
	start := len(s.buf)
	s.buf = append(s.buf, first.cmd...)
	first.cmd = s.buf[start:]
	for _, r := range unit {
		r.node = int32(n)
		s.reqs = append(s.reqs, r)
	}
}

// movedReply reports whether a reply is MOVED and, if so, records the
// slot's new owner (for paths that do not resend: the next command goes
// the right way).
func (s *Server) movedReply(reply []byte) bool {
	if !isRedirect(reply) {
		return false
	}
	rd := parseRedirect(reply)
	if rd.kind != redirectMoved {
		return false
	}
	s.route.noteMoved(rd.slot, rd.addr)
	return true
}
