package proxy

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Blocking commands (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP, XREAD/XREADGROUP with BLOCK, and WAIT for replicas,
// wait.go) may hold a node connection for as long as they block, so they
// never go on the shared pipelined connections. Each one is a barrier:
// the client's earlier commands are answered and written first; then the
// command goes to the slot's node on a dedicated connection and its reply
// is passed on as it is. Inside MULTI they are queued like any command
// (the node does not block inside a transaction).
//
// While the command waits, a goroutine keeps reading the client's socket:
// commands the client pipelines meanwhile are parsed and kept for later
// (a blocked Redis client processes nothing until it is unblocked; a QUIT
// among them, as in Redis 7.0, waits too and is answered once the command
// has its reply). A client that disconnects (or is killed, or overflows
// its query buffer) is unblocked on the node (CLIENT UNBLOCK, asked again
// until the node has the command), and what a pop the node had already
// served took goes back to its list (returnPopped); a node that ignores
// the unblock has the dedicated connection closed. A node that dies fails
// the command at once (its connection's reader fails it,
// ErrNodeConnLost). The watchdog (NodeTimeout) leaves a blocked connection
// alone; instead, a command with a finite timeout whose reply has not come
// NodeTimeout after that timeout is cut off the same way.
//
// When the command ends normally the dedicated connection goes back to
// the node's pool. Its node-side client id (CLIENT ID, asked before the
// connection's first blocking command) maps the proxy's client id for
// CLIENT UNBLOCK.

// blockState is a client blocked on a node, as other clients see it
// (CLIENT UNBLOCK, INFO).
type blockState struct {
	node  int
	conn  *nodeConn
	timed bool // the command has a timeout (clients_in_timeout_table)

	mu   sync.Mutex
	done bool // the command has finished
	// unblocking: a CLIENT UNBLOCK naming conn's node-side id was sent;
	// it may still be in flight after the command finishes, so conn is
	// not reused.
	unblocking bool
	// unblockReq carries another client's CLIENT UNBLOCK (its mode: nil
	// for TIMEOUT) to the blocked client, which asks its node until the
	// command ends: the node may not have blocked it yet.
	unblockReq chan unblockMode
	// ended is closed with done set: the node has answered the command,
	// so nothing pushed from then on can be served to it.
	ended chan struct{}
}

// unblockMode is a CLIENT UNBLOCK's TIMEOUT|ERROR argument (nil: TIMEOUT).
type unblockMode struct{ mode []byte }

// requestUnblock hands a CLIENT UNBLOCK to the blocked client; false if
// its command has finished. The caller waits for st.ended (awaitEnded)
// before it answers, as Redis answers once the client is unblocked.
func (st *blockState) requestUnblock(mode []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done {
		return false
	}
	if mode != nil {
		mode = append([]byte(nil), mode...) // it lives in the caller's read buffer
	}
	select {
	case st.unblockReq <- unblockMode{mode}:
	default: // one is pending already: the command ends either way
	}
	return true
}

// awaitEnded waits until the blocked command has ended on its node, for
// at most NodeTimeout: a CLIENT UNBLOCK or CLIENT KILL answers then, so
// that what another client pushes after that reply goes to the next
// waiter, as in Redis, and not to the command being ended.
func (s *Server) awaitEnded(st *blockState) {
	t := time.NewTimer(s.opts.NodeTimeout)
	defer t.Stop()
	select {
	case <-st.ended:
	case <-t.C:
	}
}

// clientEvent is what the client did while blocked.
type clientEvent uint8

const (
	clientGone clientEvent = iota + 1 // disconnected, killed, or over its query buffer limit
	clientQuit                        // sent QUIT
)

// clientIDCmd asks a dedicated connection's node-side id.
var clientIDCmd = [][]byte{[]byte("CLIENT"), []byte("ID")}

// blocksOnNode reports whether a command flagged blocking may block: XREAD
// and XREADGROUP only with BLOCK (streams.go).
func blocksOnNode(cmd *slots.Command, args [][]byte) bool {
	if cmd.FullName != "xread" && cmd.FullName != "xreadgroup" {
		return true
	}
	_, ok := xreadBlock(cmd, args)
	return ok
}

// blockTimeout is the command's own timeout, in whole milliseconds; 0
// means none (forever, or a timeout the node will refuse).
func blockTimeout(cmd *slots.Command, args [][]byte) time.Duration {
	i, unit := timeoutArg(cmd, args)
	f, err := strconv.ParseFloat(string(args[i]), 64)
	if err != nil || f <= 0 || f > float64(1<<62)/float64(unit) {
		return 0
	}
	// Redis counts whole milliseconds: a positive timeout under one is 0,
	// which blocks forever.
	return time.Duration(math.Trunc(f*float64(unit/time.Millisecond))) * time.Millisecond
}

// timeoutArg returns the index of a blocking command's timeout argument
// and its unit: BLMPOP's and BZMPOP's first, XREAD's and XREADGROUP's
// (last) BLOCK milliseconds, the others' last, in seconds.
func timeoutArg(cmd *slots.Command, args [][]byte) (int, time.Duration) {
	switch cmd.FullName {
	case "blmpop", "bzmpop":
		return 1, time.Second
	case "xread", "xreadgroup":
		i, _ := xreadBlock(cmd, args)
		return i, time.Millisecond
	case "wait":
		return 2, time.Millisecond
	}
	return len(args) - 1, time.Second
}

// plainTimeout reports whether a timeout argument is one the node surely
// accepts and reads as the proxy does, so that the proxy may act on it
// (run the non-blocking form first, rewrite what is left of it after a
// redirect): seconds as at most 15 digits, a dot and more digits (Redis
// refuses a timeout whose milliseconds overflow, as negative or out of
// range), milliseconds as at most 18 digits without a leading zero.
// Anything else (signs, exponents, inf, "." alone, more digits) may be
// refused or read differently by the node, and is passed on as the
// client wrote it.
func plainTimeout(b []byte, unit time.Duration) bool {
	if unit == time.Millisecond {
		return len(b) > 0 && len(b) <= 18 && (b[0] != '0' || len(b) == 1) && allDigits(b)
	}
	whole, frac, _ := bytes.Cut(b, []byte("."))
	// A second dot is in frac, which allDigits refuses.
	return len(whole) <= 15 && len(whole)+len(frac) > 0 && allDigits(whole) && allDigits(frac)
}

// allDigits reports whether b holds decimal digits only.
func allDigits(b []byte) bool {
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

// formatTimeout writes a remaining timeout (positive) in unit, rounded up
// to the millisecond the node counts in, so that it never reads as 0
// (forever).
func formatTimeout(left, unit time.Duration) []byte {
	ms := (left + time.Millisecond - 1) / time.Millisecond
	if unit == time.Millisecond {
		return strconv.AppendInt(nil, int64(ms), 10)
	}
	return fmt.Appendf(nil, "%d.%03d", ms/1000, ms%1000)
}

// blockingCall runs a blocking command on a dedicated connection to node
// n, after the batch so far has been answered, and adds its reply.
//
// A node that redirects it (nothing ran) has it sent again: to the new
// owner after MOVED (the slot moved before or while the command blocked),
// to the same node after TRYAGAIN and a backoff. A finite timeout goes
// with what is left of it, so that the client waits no longer than it
// asked in all; when nothing is left the reply is the timeout's null
// array, as from Redis. Redirections are bounded as in moved.go, by
// Options.RedirectTimeout and maxRedirects hops, counted from the first
// redirection; an attempt that stayed on its node for RedirectTimeout or
// longer was blocked, not bounced, and the redirections after it count
// afresh (a BLPOP 0 may outlive any number of migrations).
func (c *client) blockingCall(n int, cmd *slots.Command, args [][]byte) {
	if c.tryWithoutBlocking(n, cmd, args) {
		return
	}
	if cmd.FullName == "xread" {
		args = c.lastIDsForDollar(n, args)
	}
	// The commands before it first: one of them may refuse the
	// pipeline (refuse.go).
	c.finishBatch()
	if c.refused.on {
		c.localError(resp.ErrClusterDown)
		return
	}
	c.countBlocked()
	if !c.flush() {
		c.closing = true
		c.addLocal(len(c.local.B))
		return
	}
	// Copied: the watcher reads into the buffer args point to, and a
	// redirected command is sent again.
	args = cloneArgs(args)
	// The node starts the command's timeout when it gets it: now.
	start := time.Now()
	var end time.Time // zero: no timeout
	ti, unit := timeoutArg(cmd, args)
	if d := blockTimeout(cmd, args); d > 0 {
		end = start.Add(d)
		if ti == 0 || !plainTimeout(args[ti], unit) {
			ti = 0 // not rewritten
		}
	}
	rs := blockRedirects{end: end}
	for {
		if n < 0 {
			if c.readHead {
				c.refused.begin()
			}
			c.localError(resp.ErrClusterDownSlot)
			return
		}
		sent := time.Now()
		asking := rs.asking
		rs.asking = false
		reply, quit, cut, failMsg := c.blockOn(n, cmd, args, asking)
		if failMsg != "" {
			if c.readHead && refusesOn(failMsg) {
				c.refused.begin()
			}
			c.localError(failMsg)
			return
		}
		if c.closing || rawio.PeerClosed(c.nc) {
			// Gone, noticed or not yet (or let go by Close, which woke
			// the watcher): no reply, as Redis frees a client whose
			// close it reads without one, even one that only shut its
			// writing side. Nothing it was given is kept from the node
			// (returnPopped).
			c.closing = true
			c.returnPopped(n, cmd, args, reply)
			c.addLocal(len(c.local.B))
			return
		}
		if c.redirectBlocking(&rs, &n, reply, sent) {
			if !end.IsZero() {
				left := time.Until(end)
				if left <= 0 {
					mark := len(c.local.B)
					c.local.NullArray()
					c.addLocal(mark)
					return
				}
				if ti > 0 {
					args[ti] = formatTimeout(left, unit)
				}
			}
			continue
		}
		mark := len(c.local.B)
		if quit && cut && len(reply) > 0 && reply[0] == '-' {
			// Cancelled for QUIT without the node's word: as if timed
			// out (Redis answers every blocking command's timeout with
			// a null array, BLMOVE's too; WAIT's with the replicas
			// reached, none).
			if cmd.FullName == "wait" {
				c.local.Int(0)
			} else {
				c.local.NullArray()
			}
		} else {
			c.local.Raw(reply)
		}
		c.addLocal(mark)
		return
	}
}

// returnPopped puts back what a blocking pop took for a client that has
// gone meanwhile. The node serves the proxy's connection for the client,
// which the proxy closes only once it has read the client's close, so a
// push that arrives in between hands the element to nobody; Redis, which
// reads the close first, would have kept it. BLPOP's and BRPOP's element
// and BLMPOP's go back to the end they came from, in their order. What
// BLMOVE and BRPOPLPUSH moved stays in the destination (a processing
// list, where a reliable queue's recovery finds it), and XREADGROUP's
// entries stay pending for the consumer (XAUTOCLAIM), or with NOACK are
// gone, as NOACK's at-most-once allows.
func (c *client) returnPopped(n int, cmd *slots.Command, args [][]byte, reply []byte) {
	if len(reply) == 0 || reply[0] != '*' {
		return
	}
	v := decodeReply(reply)
	if v.Null || len(v.Elems) != 2 {
		return
	}
	key := v.Elems[0].Str
	var elems [][]byte
	front := false
	switch cmd.Name {
	case "blpop", "brpop":
		front = cmd.Name == "blpop"
		elems = [][]byte{v.Elems[1].Str}
	case "blmpop": // BLMPOP timeout numkeys key [key ...] LEFT|RIGHT ...
		nk, ok := resp.ParseInt(args[2])
		if !ok || nk < 1 || 3+nk >= int64(len(args)) {
			return
		}
		front = slots.EqualFold("left", slots.CString(args[3+nk]))
		for _, e := range v.Elems[1].Elems {
			elems = append(elems, e.Str)
		}
	default:
		return
	}
	if len(elems) == 0 {
		return
	}
	push := [][]byte{[]byte("RPUSH"), key}
	if front {
		push[0] = []byte("LPUSH")
	}
	// The first popped goes back last, so that it ends where it was.
	for i := len(elems) - 1; i >= 0; i-- {
		push = append(push, elems[i])
	}
	// Followed through MOVED, ASK and TRYAGAIN like a client's command:
	// the slot may have moved since the pop.
	c.returning = true
	r := c.roundTrip([]int{n}, [][][]byte{c.srv.unlogged(push)})[0]
	c.returning = false
	if r.IsError() {
		c.srv.log.Warn("could not return what a blocking pop took for a client that had gone",
			"client", c.id, "key", string(key), "elements", len(elems), "err", string(r.Str))
	}
}

// giveBack undoes what the non-blocking form of a blocking command took
// for a client killed meanwhile (tryWithoutBlocking), reply in the
// blocking command's shape: a pop's elements go back to their end
// (returnPopped), a move's element moves back to the end it came from.
func (c *client) giveBack(n int, cmd *slots.Command, args [][]byte, reply []byte) {
	var back [][]byte
	switch cmd.FullName {
	case "brpoplpush": // RPOPLPUSH src dst: from src's right to dst's left
		back = [][]byte{[]byte("LMOVE"), args[2], args[1], []byte("LEFT"), []byte("RIGHT")}
	case "blmove": // LMOVE src dst wherefrom whereto
		back = [][]byte{[]byte("LMOVE"), args[2], args[1], args[4], args[3]}
	default:
		c.returnPopped(n, cmd, args, reply)
		return
	}
	if len(reply) == 0 || reply[0] != '$' || bytes.HasPrefix(reply, []byte("$-1")) {
		return // nothing moved
	}
	c.returning = true
	r := c.roundTrip([]int{n}, [][][]byte{c.srv.unlogged(back)})[0]
	c.returning = false
	if r.IsError() {
		c.srv.log.Warn("could not move back what a blocking move took for a killed client",
			"client", c.id, "source", string(args[1]), "err", string(r.Str))
	}
}

// blockRedirects is a blocking command's following of redirections.
type blockRedirects struct {
	budget redirectBudget
	hops   int       // MOVED and ASK hops since the budget started
	end    time.Time // the command's timeout; zero: none
	// asking: the last reply was ASK, so the next attempt goes after
	// ASKING (once: the slot's owner has not changed).
	asking bool
}

// redirectBlocking follows a blocking command's MOVED, ASK or TRYAGAIN reply
// to the attempt sent at sent, within the budget and hops: it sets *n to
// the node to send it to next, after a backoff if one is due (never past
// the command's timeout), and reports whether to send it again.
func (c *client) redirectBlocking(rs *blockRedirects, n *int, reply []byte, sent time.Time) bool {
	if !isRedirect(reply) {
		return false
	}
	rd := parseRedirect(reply)
	if rd.kind == noRedirect {
		return false
	}
	rt := c.srv.route
	if !rs.budget.started() || time.Since(sent) >= c.srv.opts.RedirectTimeout {
		rs.budget.start(c.srv.opts.RedirectTimeout)
		rs.hops = 0
	}
	spent := rs.budget.spent()
	if rd.kind == redirectTryAgain {
		if spent {
			rt.redirects.exhausted.Add(1)
			return false
		}
		rt.redirects.tryAgain.Add(1)
		rs.budget.backoff(rs.end)
		return true
	}
	if rs.hops >= maxRedirects || spent && rs.hops >= freeHops {
		rt.redirects.exhausted.Add(1)
		return false
	}
	rs.hops++
	if rd.kind == redirectAsk {
		rt.redirects.ask.Add(1)
		*n, rs.asking = rt.poolFor(rd.addr), true
	} else {
		*n = rt.noteMoved(rd.slot, rd.addr)
	}
	if rs.hops > freeHops {
		rs.budget.backoff(rs.end)
	}
	return true
}

// cloneArgs copies a command's arguments out of the client's read buffer.
func cloneArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}

// blockOn sends a blocking command to node n on a dedicated connection
// and waits for its reply, watching the client meanwhile. quit reports
// that the client sent QUIT, cut that the proxy closed the connection;
// failMsg is the error to answer if no connection to the node could be
// had. asking sends ASKING first (the command follows an ASK).
func (c *client) blockOn(n int, cmd *slots.Command, args [][]byte, asking bool) (reply []byte, quit, cut bool, failMsg string) {
	p := c.srv.route.pool(n)
	conn, err := p.dedicatedConn(c.w.Proto)
	if err != nil {
		return nil, false, false, connFailMsg(err)
	}
	p.requests.Add(1)
	if conn.nodeID.Load() == 0 {
		// Known before the client shows as blocked, for CLIENT UNBLOCK.
		// The watchdog covers this round trip.
		idReq := &request{b: newBatch(0)}
		idReq.b.remaining.Store(1)
		if !conn.send([]*request{idReq}, resp.AppendCommand(nil, c.srv.unlogged(clientIDCmd))) {
			// Broken already: a refusal at maxclients can arrive
			// before anything is sent.
			p.noteError()
			return nil, false, false, conn.failMsg()
		}
		<-idReq.b.done
		if refusedFull(idReq.reply) {
			// A new connection the node refused at its maxclients.
			conn.nc.Close()
			p.noteError()
			return nil, false, false, resp.ErrMaxClients
		}
		conn.storeNodeID(idReq.reply)
	}

	r := c.newRequest()
	c.b.start(1, len(c.w.B))
	st := &blockState{node: n, conn: conn, timed: blockTimeout(cmd, args) > 0,
		unblockReq: make(chan unblockMode, 1), ended: make(chan struct{})}
	conn.blocking.Store(true)
	c.blocked.Store(st)
	if c.killed.Load() {
		// CLIENT KILL set killed before it could see st (it stores
		// killed, then loads blocked; here the reverse): it will not
		// wait for this command, so the command must not start, or it
		// could take what the killer pushes after the kill's reply.
		st.mu.Lock()
		st.done = true
		st.mu.Unlock()
		close(st.ended)
		c.blocked.Store(nil)
		conn.blocking.Store(false)
		p.release(conn)
		c.closing = true
		c.nreq = 0
		c.refused.batchReset()
		return nil, false, false, ""
	}
	reqs, data := []*request{r}, resp.AppendCommand(nil, args)
	if asking {
		// ASKING's +OK is nobody's reply: its request has a batch of
		// its own.
		ask := &request{b: newBatch(0)}
		ask.b.remaining.Store(1)
		reqs, data = []*request{ask, r}, append(resp.AppendCommand(nil, askingCmd), data...)
	}
	if !conn.send(reqs, data) {
		r.failWith(conn.failMsg())
	}

	var deadline <-chan time.Time
	if d := blockTimeout(cmd, args); d > 0 {
		t := time.NewTimer(d + c.srv.opts.NodeTimeout)
		defer t.Stop()
		deadline = t.C
	}
	events, stopWatch := c.watchClient()
	var (
		unblocked <-chan struct{} // the pending CLIENT UNBLOCK's reply
		unblockR  *request
		retry     <-chan time.Time
		backoff   = unblockRetryMin
		mode      []byte // of a CLIENT UNBLOCK from another client
	)
wait:
	for {
		select {
		case <-c.b.done:
			break wait
		case <-unblocked:
			unblocked = nil
			// 0: the node has not blocked the command yet (the unblock
			// overtook it on the shared connection) or has just served
			// it. Ask again shortly, until its reply comes: a command
			// left blocked for a gone client would take the next
			// element pushed.
			if v := decodeReply(unblockR.reply); v.Type == ':' && v.Int == 0 {
				retry = time.After(backoff)
				backoff = min(2*backoff, unblockRetryMax)
			}
		case <-retry:
			retry = nil
			if r, ok := c.unblockOnNode(st, mode); ok {
				unblockR, unblocked = r, r.b.done
			}
		case u := <-st.unblockReq:
			// Another client's CLIENT UNBLOCK, asked again (retry)
			// until the command's reply comes.
			mode = u.mode
			if r, ok := c.unblockOnNode(st, mode); ok {
				unblockR, unblocked = r, r.b.done
			}
		case ev := <-events:
			if ev == clientQuit {
				// Redis leaves a client that sent QUIT blocked: the
				// QUIT waits in its query buffer until the command is
				// served or times out, then answers OK.
				quit = true
				continue
			}
			events = nil
			c.closing = true
			// Unblock rather than cut: the node may have served the
			// client already, and its reply, read off the connection,
			// can be given back (returnPopped). A node that ignores
			// the unblock is cut off.
			r, ok := c.unblockOnNode(st, nil)
			if !ok {
				conn.nc.Close()
				cut = true
			} else if unblockR, unblocked = r, r.b.done; deadline == nil {
				t := time.NewTimer(c.srv.opts.NodeTimeout)
				defer t.Stop()
				deadline = t.C
			}
		case <-deadline:
			deadline = nil
			if !cut {
				c.srv.log.Warn("node did not answer a blocking command after its timeout; connection closed",
					"node", p.addr, "client", c.id, "timeout", c.srv.opts.NodeTimeout)
				abandon(conn.nc)
				cut = true
			}
		}
	}
	stopWatch()

	st.mu.Lock()
	st.done = true
	reuse := !st.unblocking && !cut
	st.mu.Unlock()
	close(st.ended)
	c.blocked.Store(nil)
	conn.blocking.Store(false)
	if reuse {
		p.release(conn)
	} else {
		conn.nc.Close()
	}
	reply = append([]byte(nil), r.reply...)
	c.nreq = 0
	c.refused.batchReset()
	return reply, quit, cut, ""
}

// storeNodeID records the node-side client id from CLIENT ID's reply; -1
// means the node has none to give.
func (c *nodeConn) storeNodeID(reply []byte) {
	v := decodeReply(reply)
	if v.Type == ':' && v.Int > 0 {
		c.nodeID.Store(v.Int)
	} else {
		c.nodeID.Store(-1)
	}
}

// unblockOnNode sends CLIENT UNBLOCK for st's node-side client on the
// client's shared connection to st's node and returns its request, whose
// reply (1 or 0) may be waited for; the blocked command's reply says what
// happened. mode is nil (TIMEOUT) or the client's TIMEOUT|ERROR argument.
// It returns false if it could not be sent.
func (c *client) unblockOnNode(st *blockState, mode []byte) (*request, bool) {
	args, ok := st.unblockArgs(mode)
	if !ok {
		return nil, false
	}
	args = c.srv.unlogged(args)
	conn, err := c.srv.route.pool(st.node).sharedConn(c.w.Proto, c.connIdx())
	if err != nil {
		return nil, false
	}
	r := &request{b: newBatch(0)}
	r.b.remaining.Store(1)
	return r, conn.send([]*request{r}, resp.AppendCommand(nil, args))
}

// unblockRetryMin and unblockRetryMax bound the pause before asking a
// node again to unblock a gone client's command that it had not blocked
// yet.
const (
	unblockRetryMin = 2 * time.Millisecond
	unblockRetryMax = 50 * time.Millisecond
)

// unblockArgs returns the CLIENT UNBLOCK command for the node, marking st
// as being unblocked; false if st has finished or its node-side id is not
// known.
func (st *blockState) unblockArgs(mode []byte) ([][]byte, bool) {
	id := st.conn.nodeID.Load()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.done || id <= 0 {
		return nil, false
	}
	st.unblocking = true
	// Unlogged: the node's slow log holds the clients' commands only.
	args := [][]byte{[]byte("CLIENT"), []byte("UNBLOCK"), strconv.AppendInt(nil, id, 10)}
	if mode != nil {
		args = append(args, mode)
	}
	return args, true
}

// watchClient reads the client's socket while it is blocked, until stop
// is called. Complete commands are parsed into c.pending (served after
// the blocking command, in order); QUIT and the connection's end are
// reported on the channel. Between watchClient and stop, c.rd and
// c.pending belong to the watching goroutine.
func (c *client) watchClient() (events <-chan clientEvent, stop func()) {
	ev := make(chan clientEvent, 2)
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		parse := true
		for {
			before := c.rd.Buffered()
			err := c.rd.Fill()
			select {
			case <-quit:
				return
			default:
			}
			if err != nil {
				ev <- clientGone
				return
			}
			c.srv.stats.netInput.Add(int64(c.rd.Buffered() - before))
			c.srv.stats.reads.Add(1)
			for parse {
				buffered := c.rd.Buffered()
				args, ok, err := c.rd.Next()
				if err != nil {
					// Served (refused) after the blocking command.
					parse = false
					break
				}
				if !ok {
					break
				}
				// Redis's query buffer holds the requests as they came,
				// framing and all, while their client is blocked.
				raw := buffered - c.rd.Buffered()
				c.pendingSize += raw
				c.pendingRaw = append(c.pendingRaw, raw)
				cp := make([][]byte, len(args))
				for i, a := range args {
					cp[i] = append([]byte(nil), a...)
				}
				c.pending = append(c.pending, cp)
				if slots.EqualFold("quit", args[0]) {
					// Nothing after QUIT is served.
					parse = false
					ev <- clientQuit
				}
			}
			if n := int64(c.rd.Buffered() + c.pendingSize); n > c.srv.opts.QueryBufferLimit {
				c.srv.log.Warn("Closing client that reached max query buffer length",
					"client", c.id, "addr", c.raddr, "qbuf", n, "limit", c.srv.opts.QueryBufferLimit)
				// Closed at once, as Redis closes it: the blocked
				// command's end (a timeout's nil) is never written.
				c.nc.Close()
				ev <- clientGone
				return
			}
		}
	}()
	stop = func() {
		close(quit)
		c.nc.SetReadDeadline(time.Unix(1, 0))
		<-exited
		c.nc.SetReadDeadline(time.Time{})
	}
	return ev, stop
}

// next returns the next command: those read while the client was blocked
// first, then the reader's.
func (c *client) next() ([][]byte, bool, error) {
	if len(c.pending) > 0 {
		args := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.pendingSize -= c.pendingRaw[0]
		c.pendingRaw = c.pendingRaw[1:]
		if len(c.pending) == 0 {
			c.pending, c.pendingRaw = nil, nil
		}
		return args, true, nil
	}
	return c.rd.Next()
}

// cmdClientUnblock is CLIENT UNBLOCK <proxy client id> [TIMEOUT|ERROR]:
// the proxy's client id names a client blocked on a node, which the node
// unblocks by its own id for that connection. A client the proxy shows as
// blocked (INFO, CLIENT LIST) gets 1 and the unblock is handed to it: it
// asks its node until the command ends, since the node may not have
// blocked the command yet. A client not blocked (or not known) gets 0,
// as from Redis.
func cmdClientUnblock(c *client, args [][]byte) {
	c.answerHere()
	mark := len(c.local.B)
	reply := func() { c.addLocal(mark) }
	if len(args) > 4 {
		c.local.Error(fmt.Sprintf(resp.ErrSubcommandSyntax, resp.CString(args[1], 128), "CLIENT"))
		reply()
		return
	}
	var mode []byte
	if len(args) == 4 {
		if !slots.EqualFold("timeout", slots.CString(args[3])) && !slots.EqualFold("error", slots.CString(args[3])) {
			c.local.Error(resp.ErrUnblockReason)
			reply()
			return
		}
		mode = args[3]
	}
	id, ok := resp.ParseInt(args[2])
	if !ok {
		c.local.Error(resp.ErrNotInteger)
		reply()
		return
	}
	if cl, ok := c.srv.lookupClient(id); ok {
		if st := cl.blocked.Load(); st != nil && st.requestUnblock(mode) {
			// The blocked client has its node unblock the command
			// (blockOn), asking again if the node has not blocked it
			// yet; its reply then comes from the node.
			c.srv.awaitEnded(st)
			c.local.Int(1)
			reply()
			// Redis counts a CLIENT UNBLOCK ... ERROR that unblocks
			// as failed: the error it writes to the other client is
			// in its one error count (commandstats).
			c.ops[len(c.ops)-1].unblockError = mode != nil && slots.EqualFold("error", slots.CString(mode))
			return
		}
	}
	c.local.Int(0)
	reply()
}

// blockedClients counts the clients waiting in a blocking command on a
// node (INFO's blocked_clients), and those of them whose command has a
// timeout (clients_in_timeout_table).
func (s *Server) blockedClients() (blocked, timed int) {
	for _, cl := range s.snapshotClients() {
		if st := cl.blocked.Load(); st != nil {
			blocked++
			if st.timed {
				timed++
			}
		} else if cl.paused.Load() {
			blocked++ // held by CLIENT PAUSE, without a timeout
		}
	}
	return blocked, timed
}

// tryWithoutBlocking first runs the non-blocking form of a blocking list
// command (LMPOP for BLPOP/BRPOP/BLMPOP, LMOVE, RPOPLPUSH) or of a
// blocking stream read (XREAD/XREADGROUP without BLOCK) on the shared
// connection: when the list has an element (the stream an entry to read)
// the reply is the same, and the dedicated connection, its goroutine and
// its deadlines are spared. This never takes an element ahead of a
// blocked client: a node serves its waiters in the same step as the push
// that wakes them, so a list is never left non-empty (nor a stream with
// entries a blocked reader would take) while someone waits on it.
// Anything unusual (nothing to read, an error, an odd timeout) goes the
// blocking way, which gives the exact reply.
func (c *client) tryWithoutBlocking(n int, cmd *slots.Command, args [][]byte) bool {
	fast, pair := nonBlockingForm(cmd, args)
	if fast == nil {
		return false
	}
	// The node does not log the form the proxy made up; if it serves the
	// command, the proxy logs the client's own (as a Redis logs a
	// blocking command that did not block).
	var start time.Time
	if c.curCmd != 0 && c.srv.slowlog.Threshold() >= 0 && !c.srv.opts.PlainRedisNodes {
		start = time.Now()
	}
	if c.killed.Load() {
		c.closing = true // CLIENT KILL: nothing more of it runs
		return true
	}
	v := c.roundTrip([]int{n}, [][][]byte{c.srv.unlogged(fast)})[0]
	mark := len(c.local.B)
	if v.IsError() && nodeFailure(v.Str) {
		// The node is down or did not answer: so much for blocking.
		c.local.B = resp.AppendValue(c.local.B, v)
		c.addLocal(mark)
		return true
	}
	if v.Null || v.IsError() || (pair && (len(v.Elems) != 2 || len(v.Elems[1].Elems) != 1)) {
		return false
	}
	if pair {
		// LMPOP's [key, [element]] is BLPOP's [key, element].
		c.local.Array(2)
		c.local.Bulk(v.Elems[0].Str)
		c.local.Bulk(v.Elems[1].Elems[0].Str)
	} else {
		c.local.B = resp.AppendValue(c.local.B, v)
	}
	if c.killed.Load() {
		// Killed by CLIENT KILL while the pop was on its way: in Redis
		// nothing a killed client sent runs after the kill's reply, and
		// the killer's next push may be what was popped. It goes back
		// where it was; nobody can read it here.
		c.giveBack(n, cmd, args, c.local.B[mark:])
		c.local.B = c.local.B[:mark]
		c.closing = true
		return true
	}
	// A client that has gone (or only shut its writing side) meanwhile
	// keeps what the pop took, as from Redis, which runs every command it
	// has read before it reads the close: one that only half-closed reads
	// the reply.
	c.addLocal(mark)
	if !start.IsZero() {
		c.logLocal(args, time.Since(start))
	}
	return true
}

// nodeFailure reports whether an error reply is the proxy's own for a node
// it cannot reach (CLUSTERDOWN, connection lost) rather than the node's.
func nodeFailure(msg []byte) bool {
	return bytes.HasPrefix(msg, []byte(resp.ErrClusterDownSlot)) ||
		bytes.HasPrefix(msg, []byte(resp.ErrClusterDown)) ||
		bytes.HasPrefix(msg, []byte(strings.SplitN(resp.ErrNodeConnLost, "%", 2)[0]))
}

// nonBlockingForm returns the command that answers like the blocking one
// when it has an element, or nil; pair reports a BLPOP/BRPOP reply shape.
func nonBlockingForm(cmd *slots.Command, args [][]byte) (fast [][]byte, pair bool) {
	// A timeout the node may refuse or read differently goes the
	// blocking way, which gives the exact reply.
	plainSeconds := func(b []byte) bool { return plainTimeout(b, time.Second) }
	switch cmd.FullName {
	case "blpop", "brpop":
		if len(args) < 3 || !plainSeconds(args[len(args)-1]) {
			return nil, false
		}
		keys := args[1 : len(args)-1]
		fast = append(fast, []byte("LMPOP"), []byte(strconv.Itoa(len(keys))))
		fast = append(fast, keys...)
		dir := "LEFT"
		if cmd.FullName == "brpop" {
			dir = "RIGHT"
		}
		return append(fast, []byte(dir)), true
	case "brpoplpush":
		if len(args) != 4 || !plainSeconds(args[3]) {
			return nil, false
		}
		return [][]byte{[]byte("RPOPLPUSH"), args[1], args[2]}, false
	case "blmove":
		if len(args) != 6 || !plainSeconds(args[5]) {
			return nil, false
		}
		return [][]byte{[]byte("LMOVE"), args[1], args[2], args[3], args[4]}, false
	case "blmpop":
		if len(args) < 5 || !plainSeconds(args[1]) {
			return nil, false
		}
		fast = append(fast, []byte("LMPOP"))
		return append(fast, args[2:]...), false
	case "xread", "xreadgroup":
		return xreadWithoutBlock(cmd, args), false
	}
	return nil, false
}
