package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/rawio"
	"github.com/shardgate/shardgate/internal/resp"
)

// request is one command in flight to a node. Its reply arrives as raw
// RESP bytes, copied out of the connection's read buffer.
type request struct {
	reply []byte
	b     *batch

	// Set by forward for a command the proxy may send again elsewhere
	// when the node redirects it (moved.go): cmd is its encoding (valid
	// until the batch ends), node where it went last, and unit the
	// number of requests, from this one, that are one command to resend
	// as a whole (a MULTI ... EXEC block); 0 for requests that are never
	// resent.
	cmd  []byte
	node int32
	unit int32
	// head: it is for the first command of a pipeline (refuse.go).
	head bool
	// info is the reply parsed as INFO's lines, once for every section
	// merged from it (nodeInfoLines).
	info []infoLine
}

// complete stores the reply and counts the request off its batch. A
// reply that would take the client past its output buffer limit is
// dropped instead (the client is then closed).
func (r *request) complete(reply []byte) {
	if r.b.hold(len(reply)) {
		r.reply = append(r.reply[:0], reply...)
	} else {
		r.reply = r.reply[:0]
	}
	r.b.doneOne()
}

// preset gives the request an error reply without sending it anywhere
// (and without counting it off its batch).
func (r *request) preset(msg string) {
	r.reply = append(r.reply[:0], '-')
	r.reply = append(r.reply, msg...)
	r.reply = append(r.reply, '\r', '\n')
	r.cmd, r.node, r.unit = nil, noOwner, 0
}

// failWith completes the request with an error reply.
func (r *request) failWith(msg string) {
	r.reply = append(r.reply[:0], '-')
	r.reply = append(r.reply, msg...)
	r.reply = append(r.reply, '\r', '\n')
	r.b.doneOne()
}

// batch counts the replies a client still waits for; the last one wakes
// the client with a single channel send.
//
// It also keeps the client's output buffer limit as the replies arrive:
// held counts the reply bytes the client has not written yet (those
// before the batch, then each reply kept), and past limit (0: none) the
// replies are dropped and over is set. A pipeline of big reads (300 GETs
// of a 10 MB value) would otherwise hold every reply before the limit is
// checked, where Redis closes the client as soon as it is over.
type batch struct {
	remaining atomic.Int32
	done      chan struct{}
	limit     int64
	held      atomic.Int64
	over      atomic.Bool
}

// newBatch returns a batch for a client with the given output buffer
// limit (0: none).
func newBatch(limit int64) *batch {
	return &batch{done: make(chan struct{}, 1), limit: max(limit, 0)}
}

// start readies the batch for n requests, with pending reply bytes
// already waiting to be written to the client.
func (b *batch) start(n int, pending int) {
	b.held.Store(int64(pending))
	b.over.Store(false)
	b.remaining.Store(int32(n))
}

// hold reports whether a reply of n bytes stays within the limit, and
// counts it if so.
func (b *batch) hold(n int) bool {
	if b.limit == 0 {
		return true
	}
	if b.over.Load() || b.held.Add(int64(n)) > b.limit {
		b.over.Store(true)
		return false
	}
	return true
}

func (b *batch) doneOne() {
	if b.remaining.Add(-1) == 0 {
		b.done <- struct{}{}
	}
}

// nodeConn is one connection to a node, shared by many clients (or, for
// WATCH transactions, borrowed by one). Clients append encoded commands and
// their requests under mu; whichever client finds no write in progress
// writes everything queued, so concurrent clients' commands leave in one
// system call. A reader goroutine matches replies to requests in order.
type nodeConn struct {
	node  *nodePool
	nc    net.Conn
	proto int

	mu      sync.Mutex
	out     []byte     // encoded commands not yet written
	spare   []byte     // the other write buffer, swapped with out
	queue   []*request // requests written or queued, awaiting replies
	head    int        // queue[head:] are outstanding
	writing bool
	broken  error
	// dead mirrors broken != nil for lock-free checks by clients that
	// cache the connection.
	dead atomic.Bool

	// blocking: the outstanding request is a blocking command (a
	// dedicated connection), which the watchdog leaves alone. nodeID is
	// the node's CLIENT ID for the connection: 0 not asked yet, -1 none
	// (blocking.go).
	blocking atomic.Bool
	nodeID   atomic.Int64

	// progress is the stats clock (statClock: one clock read, where
	// time.Now takes two) when bytes last moved on the connection, or
	// when it last went from idle to busy; the watchdog compares it with
	// NodeTimeout.
	progress atomic.Int64

	// idleSince is when a dedicated connection was last released to its
	// pool's idle list (under the pool's lock).
	idleSince time.Time
}

// send queues reqs (whose encoded commands are data, in order) and writes
// unless another client is writing. It returns false, queueing nothing,
// when the connection is broken.
func (c *nodeConn) send(reqs []*request, data []byte) bool {
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return false
	}
	if c.head == len(c.queue) {
		c.progress.Store(c.node.srv.statClock())
	}
	c.queue = append(c.queue, reqs...)
	if len(data) >= directWriteMin && !c.writing && len(c.out) == 0 {
		// A big value goes out from the client's buffer as it is:
		// copying it into c.out would cost its size again.
		c.writing = true
		c.mu.Unlock()
		c.writeOut(data)
		c.mu.Lock()
	} else {
		c.out = append(c.out, data...)
		if c.writing {
			c.mu.Unlock()
			return true
		}
		c.writing = true
		// Let the other clients that are ready run first: their
		// commands join this write. At -P 1 with 50 clients this cuts
		// the proxy's CPU per request by about a fifth (fewer, larger
		// writes to the node, which reads and answers them as one
		// batch). One yield, not more: yielding again while the write
		// kept growing (up to 8 times) held the commands already
		// gathered for as many turns of the run queue; with one yield
		// the median p99 at -P 1 was 6-10% lower for the same requests
		// per second (A/B, 18 interleaved rounds of GET and SET,
		// bench/RESULTS.md).
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	for len(c.out) > 0 && c.broken == nil {
		buf := c.out
		c.out = c.spare[:0]
		c.mu.Unlock()
		ok := c.writeOut(buf)
		c.mu.Lock()
		if cap(buf) <= 1<<20 {
			c.spare = buf[:0]
		} else {
			c.spare = nil // don't keep a huge value's buffer around
		}
		if !ok {
			break
		}
	}
	c.writing = false
	c.mu.Unlock()
	return true
}

// directWriteMin is the size from which a client's commands are written
// without being copied into the connection's buffer.
const directWriteMin = 256 << 10

// writeOut writes b to the node; on failure it closes the socket, and the
// reader then fails everything queued. A big write goes in pieces, each
// one noted as progress, so that the watchdog does not take a 512 MB
// value still moving at the node's pace for a node that stopped (a big
// value may also come in several writes, as the client sends it). Small
// writes are not progress: a stopped process's kernel keeps taking them
// into its socket buffer, and counting them let a steady trickle of
// commands keep a stopped node's connection alive for as long as the
// trickle lasted; big ones soon fill that buffer and block.
func (c *nodeConn) writeOut(b []byte) bool {
	big := len(b) >= directWriteMin
	for len(b) > 0 {
		n := min(len(b), writePiece)
		if _, err := c.nc.Write(b[:n]); err != nil {
			c.nc.Close()
			return false
		}
		b = b[n:]
		if big {
			c.progress.Store(c.node.srv.statClock())
		}
	}
	return true
}

// writePiece is the most writeOut sends before noting progress.
const writePiece = 1 << 20

// outstanding is the number of requests awaiting replies.
func (c *nodeConn) outstanding() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) - c.head
}

func (c *nodeConn) isBroken() bool { return c.dead.Load() }

// failMsg is the error reply of a command that could not be sent on the
// broken connection: the node's maxclients refusal, or CLUSTERDOWN.
func (c *nodeConn) failMsg() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.broken, errNodeFull) {
		return resp.ErrMaxClients
	}
	return resp.ErrClusterDownSlot
}

// readLoop reads replies until the connection fails, then fails every
// request still waiting.
func (c *nodeConn) readLoop() {
	buf := make([]byte, 0, 64*1024)
	var (
		done []*request
		lens []int // lengths of the replies cut from buf; pushes negative
		err  error
	)
	for {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		var n int
		n, err = c.nc.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			c.progress.Store(c.node.srv.statClock())
		}
		if err != nil {
			break
		}
		buf = buf[:len(buf)+n]
		// Cut out every complete reply and hand each to its request.
		pos := 0
		lens = lens[:0]
		for pos < len(buf) {
			l, perr := resp.ReplyLen(buf[pos:])
			if perr != nil {
				err = fmt.Errorf("bad reply from node: %w", perr)
				break
			}
			if l == 0 {
				break
			}
			if buf[pos] != '>' { // push messages are not replies
				lens = append(lens, l)
			} else {
				lens = append(lens, -l)
			}
			pos += l
		}
		if err != nil {
			break
		}
		if len(lens) > 0 {
			done = done[:0]
			c.mu.Lock()
			off := 0
			for _, l := range lens {
				if l < 0 {
					off -= l
					continue
				}
				if c.head == len(c.queue) {
					err = errors.New("reply without a request")
					if refusedFull(buf[off : off+l]) {
						// A node at its maxclients refused the
						// connection before anything was sent on it.
						err = errNodeFull
					}
					break
				}
				off += l
				done = append(done, c.queue[c.head])
				c.queue[c.head] = nil
				c.head++
			}
			if c.head == len(c.queue) {
				c.queue, c.head = c.queue[:0], 0
			}
			c.mu.Unlock()
			p, i := 0, 0
			for _, l := range lens {
				if l < 0 {
					p -= l
					continue
				}
				if i < len(done) {
					reply := buf[p : p+l]
					if reply[0] == '-' {
						if bytes.HasPrefix(reply, loadingReply) {
							// Its slots are not served yet, as a Redis
							// Cluster says of a master that is not
							// back: one Redis never answers part of a
							// pipeline LOADING, and a client that reads
							// LOADING as a lost connection (redis-py)
							// would send the commands that did run
							// again.
							c.node.noteLoading()
							reply = clusterDownReply
						} else if bytes.HasPrefix(reply, noAuthReply) && c.node.srv.opts.NodePassword == "" {
							// No AUTH of the client's could cure it
							// (the proxy answers AUTH): the node is
							// unreachable, as with a wrong password.
							reply = clusterDownReply
							err = errWantsPassword
						}
					}
					done[i].complete(reply)
					i++
				}
				p += l
			}
			clear(done)
			if err != nil {
				break
			}
		}
		// Keep the partial reply at the front; give back a buffer that
		// grew for one big reply.
		rest := copy(buf, buf[pos:])
		buf = buf[:rest]
		if cap(buf) > 1<<20 && rest < 64*1024 {
			nb := make([]byte, rest, 64*1024)
			copy(nb, buf)
			buf = nb
		}
	}
	c.fail(err)
	if errors.Is(err, errWantsPassword) {
		p := c.node
		p.mu.Lock()
		p.markDown(err)
		p.mu.Unlock()
	}
}

// noAuthReply starts a node's reply to a command sent on a connection that
// has not authenticated; errWantsPassword is the node's error then, with
// no --node-password.
var (
	noAuthReply      = []byte("-NOAUTH ")
	clusterDownReply = []byte("-" + resp.ErrClusterDownSlot + "\r\n")
	errWantsPassword = errors.New("the node wants a password (--node-password)")
)

// fail marks the connection broken, closes it and fails every waiting
// request with an error naming the node.
func (c *nodeConn) fail(err error) {
	c.mu.Lock()
	if c.broken == nil {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		c.broken = err
		c.dead.Store(true)
	}
	cause := c.broken // why it broke first: the watchdog's cut-off, say
	waiting := c.queue[c.head:]
	c.queue, c.head = nil, 0
	c.mu.Unlock()
	c.nc.Close()
	// The proxy closing its own connections at shutdown is no loss to
	// report (a blocked client's request is still waiting then), and the
	// watchdog has logged its own cut-off.
	if len(waiting) > 0 && !c.node.srv.isClosed() {
		c.node.noteError()
		if !errors.Is(cause, errNotAnswering) {
			c.node.srv.log.Warn("node connection lost", "node", c.node.addr, "err", cause, "requests", len(waiting))
		}
	}
	msg := fmt.Sprintf(resp.ErrNodeConnLost, c.node.addr)
	for _, r := range waiting {
		r.failWith(msg)
	}
}

// nodePool holds a node's connections: the shared pipelined ones per
// protocol version, and idle dedicated ones for WATCH transactions.
type nodePool struct {
	srv  *Server
	idx  int
	addr string

	mu     sync.Mutex
	shared [2][]*nodeConn // [proto-2][i]
	idle   [2][]*nodeConn // dedicated connections not in use, per protocol
	all    map[*nodeConn]struct{}
	// down is set from a failed dial, or a connection the watchdog cut
	// off, until the recoverer reaches the node (recoverLoop).
	down       atomic.Bool
	probing    atomic.Bool // the watchdog's connection attempt is running
	recovering atomic.Bool // recoverLoop runs
	verifying  atomic.Bool // verifyDead's check runs
	lastErr    error
	// viewDead: the last cluster view says the node is dead (stored
	// under routing.mu); doubted: the proxy reached it since, so it is
	// served all the same (see verifyDead; guarded by routing.mu).
	viewDead atomic.Bool
	doubted  bool
	// state is the pool's poolState (dynamic.go): anything but live
	// fails commands at once with CLUSTERDOWN.
	state atomic.Uint32
	// ownsSlots: some slot in the table points at the node (set with
	// the table). One that owns none holds no key a client can see, so
	// whole-keyspace commands need not wait for it, nor fail while it
	// cannot be reached: a drained node stopped before it retires.
	ownsSlots atomic.Bool

	// loadingUntil (Unix ns) is loadingHold after the node last answered
	// LOADING: until then it counts as down for pipeline refusals
	// (routing.someDown), though its commands still go to it.
	loadingUntil atomic.Int64

	requests atomic.Int64 // commands sent
	errors   atomic.Int64 // failed dials and lost connections
	latency  latencyStats
}

// loadingReply starts a node's reply while it loads its data.
var loadingReply = []byte("-LOADING ")

// loadingHold is how long a node counts as loading after its last LOADING
// reply: longer than clients wait between their retries (go-redis backs
// off up to 512 ms), so that a load reads as one outage.
const loadingHold = time.Second

// noteLoading records a LOADING reply from the node.
func (p *nodePool) noteLoading() {
	p.loadingUntil.Store(time.Now().Add(loadingHold).UnixNano())
}

// loading reports whether the node answered LOADING within loadingHold.
func (p *nodePool) loading() bool {
	u := p.loadingUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

func newNodePool(s *Server, idx int, addr string) *nodePool {
	p := &nodePool{srv: s, idx: idx, addr: addr, all: map[*nodeConn]struct{}{}}
	for i := range p.shared {
		p.shared[i] = make([]*nodeConn, s.opts.ConnsPerNode)
	}
	return p
}

func (p *nodePool) noteError() { p.errors.Add(1) }

func (p *nodePool) getState() poolState { return poolState(p.state.Load()) }

// served reports whether commands may go to the node: the cluster view
// does not say it is dead. A retired node is still sent the odd command
// that was routed just before it left (it answers, MOVED if need be, or
// its connection fails like any other).
func (p *nodePool) served() bool { return p.state.Load() != uint32(poolDead) }

// live reports whether the node is a serving member (not dead, not
// retired): the nodes fan-outs and keyless commands go to.
func (p *nodePool) live() bool { return p.state.Load() == uint32(poolLive) }

// neededByAll reports whether a command for the whole keyspace must reach
// the node: it is not retired, and it owns slots or is believed reachable
// (a reachable node that owns nothing is asked all the same; it answers
// for none of its keys, and a flush empties what it may be importing).
func (p *nodePool) neededByAll() bool {
	st := p.getState()
	if st == poolRetired {
		return false
	}
	return p.ownsSlots.Load() || (st == poolLive && !p.down.Load())
}

// errNodeDown is returned while a node is being answered with CLUSTERDOWN.
var errNodeDown = errors.New("node down")

// errNodeFull is returned when the node refused a new connection at its
// maxclients: it is up, so its slots are not reported down and dialing
// goes on; the command that needed the connection gets the node's error.
var errNodeFull = errors.New(resp.ErrMaxClients)

// connFailMsg is the error reply of a command that found no connection to
// its node (err from sharedConn or dedicatedConn).
func connFailMsg(err error) string {
	if errors.Is(err, errNodeFull) {
		return resp.ErrMaxClients
	}
	return resp.ErrClusterDownSlot
}

// refusedFull reports whether reply is the error a node at its maxclients
// sends a connection it accepts and then closes.
func refusedFull(reply []byte) bool {
	return len(reply) > 0 && reply[0] == '-' && bytes.HasPrefix(reply[1:], []byte(resp.ErrMaxClients))
}

// sharedConn returns the shared connection i for protocol proto, dialing
// it if needed. While the node is down it fails fast with errNodeDown.
func (p *nodePool) sharedConn(proto, i int) (*nodeConn, error) {
	if !p.served() {
		return nil, errNodeDown
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.shared[proto-2][i]
	if c != nil && !c.isBroken() {
		return c, nil
	}
	c, err := p.dialLocked(proto)
	if err != nil {
		return nil, err
	}
	p.shared[proto-2][i] = c
	return c, nil
}

// Dedicated connections (blocking commands, WATCH) are kept for reuse once
// released: as many as were in use together, so that 200 workers looping
// on BLMOVE reuse 200 connections instead of dialing one per call (with
// at most 8 kept, a helper counted 12,000 connections opened for 50,000
// jobs, a third of Redis's throughput and dials timing out under the
// load). The idle list is a stack, so connections a smaller load leaves
// unused sink to its bottom, where those idle for dedicatedIdleTime are
// closed, down to dedicatedKeep.
const (
	dedicatedKeep     = 8
	dedicatedMaxIdle  = 4096
	dedicatedIdleTime = 30 * time.Second
)

// dedicatedConn returns a connection for one client's exclusive use: an
// idle one, or a new one dialed without holding the pool's lock, so that
// many clients blocking at once do not wait on each other's dials.
func (p *nodePool) dedicatedConn(proto int) (*nodeConn, error) {
	if !p.served() {
		return nil, errNodeDown
	}
	p.mu.Lock()
	if p.down.Load() {
		p.srv.recover(p)
		p.mu.Unlock()
		return nil, errNodeDown
	}
	idle := &p.idle[proto-2]
	for len(*idle) > 0 {
		c := (*idle)[len(*idle)-1]
		(*idle)[len(*idle)-1] = nil
		*idle = (*idle)[:len(*idle)-1]
		if !c.isBroken() {
			p.mu.Unlock()
			return c, nil
		}
	}
	p.mu.Unlock()
	return p.dial(proto)
}

// release returns a dedicated connection whose node-side state is clean
// (no WATCH, no MULTI) to the idle list, closing those idle too long.
func (p *nodePool) release(c *nodeConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idle := &p.idle[c.proto-2]
	if c.isBroken() || len(*idle) >= dedicatedMaxIdle {
		c.nc.Close()
		return
	}
	now := time.Now()
	c.idleSince = now
	*idle = append(*idle, c)
	p.closeStaleLocked(now)
}

// closeStaleLocked closes the idle dedicated connections unused for
// dedicatedIdleTime, down to dedicatedKeep per protocol. release calls it,
// and the watchdog, for a pool whose blocking traffic has stopped (no
// release would come). p.mu is held.
func (p *nodePool) closeStaleLocked(now time.Time) {
	for i := range p.idle {
		idle := &p.idle[i]
		stale := 0
		for stale < len(*idle)-dedicatedKeep && now.Sub((*idle)[stale].idleSince) >= dedicatedIdleTime {
			(*idle)[stale].nc.Close()
			stale++
		}
		if stale > 0 {
			n := copy(*idle, (*idle)[stale:])
			clear((*idle)[n:])
			*idle = (*idle)[:n]
		}
	}
}

// dial is dialLocked without holding p.mu while connecting: the checks
// and the attachment take the lock, the handshake does not.
func (p *nodePool) dial(proto int) (*nodeConn, error) {
	if !p.served() {
		return nil, errNodeDown
	}
	nc, err := p.handshake(context.Background(), proto, false)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.afterHandshakeLocked(nc, err, proto)
}

// dialLocked connects, authenticates and switches protocol, then starts
// the reader. p.mu is held, so concurrent clients wait for one dial. A
// node that is down (its last dial failed, or the watchdog cut it off) is
// not dialed here: its slots answer CLUSTERDOWN at once while the
// recoverer tries it in the background (see recoverLoop).
func (p *nodePool) dialLocked(proto int) (*nodeConn, error) {
	// Checked under p.mu too: setPoolState stores the state before
	// closeAll takes the lock, so no connection outlives a pool's end.
	if !p.served() {
		return nil, errNodeDown
	}
	if p.down.Load() {
		p.srv.recover(p)
		return nil, errNodeDown
	}
	nc, err := p.handshake(context.Background(), proto, false)
	return p.afterHandshakeLocked(nc, err, proto)
}

// afterHandshakeLocked attaches a connection handshake made, or records
// why it failed. p.mu is held.
func (p *nodePool) afterHandshakeLocked(nc net.Conn, err error, proto int) (*nodeConn, error) {
	if err == nil && (!p.served() || p.down.Load()) {
		// The pool ended, or another dial found the node down, while
		// this one connected: as if it had been checked first.
		nc.Close()
		if p.down.Load() {
			p.srv.recover(p)
		}
		return nil, errNodeDown
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// The proxy, not the node, is out of descriptors (each client
		// blocked or holding a WATCH has a node connection of its
		// own): the command fails as at maxclients, the node stays up.
		p.srv.log.Warn("cannot open a node connection: out of file descriptors (raise ulimit -n or lower --maxclients)", "node", p.addr, "err", err)
		return nil, errNodeFull
	}
	if errors.Is(err, errNodeFull) {
		p.errors.Add(1)
		return nil, err
	}
	if err != nil {
		p.markDown(err)
		return nil, errNodeDown
	}
	return p.attachLocked(nc, proto)
}

// markDown records a failed dial, or with err nil a connection the
// watchdog cut off, and starts the recoverer. p.mu is held.
func (p *nodePool) markDown(err error) {
	p.down.Store(true)
	if p.viewDead.Load() {
		// Served only because it answered when gossip declared it
		// dead: the verdict is checked again, and followed now.
		p.srv.verifyDead(p)
	}
	if err != nil {
		p.markDownAgain(err)
	} else if p.lastErr == nil {
		p.lastErr = errNotAnswering
	}
	// Idle dedicated connections would take the next WATCH into a
	// NodeTimeout wait each; the node's slots answer CLUSTERDOWN now.
	for i := range p.idle {
		for _, c := range p.idle[i] {
			c.nc.Close()
		}
		clear(p.idle[i])
		p.idle[i] = p.idle[i][:0]
	}
	p.srv.recover(p)
}

// errNotAnswering is the pool's last error after the watchdog cut off a
// connection whose node left requests unanswered, and that connection's.
var errNotAnswering = errors.New("node not answering")

// cutOff closes a connection whose node left requests unanswered; its
// reader fails them (see fail).
func (c *nodeConn) cutOff() {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = errNotAnswering
		c.dead.Store(true)
	}
	c.mu.Unlock()
	abandon(c.nc)
}

// abandon closes a connection to a node that stopped answering with a
// reset, so that the kernel drops what it has not delivered yet: closed
// gracefully, a partitioned node got the commands the proxy had failed
// ("may or may not have run") when the network healed, after later
// acknowledged writes to the same keys, and undid them. What the node's
// kernel already has may still run (a stopped process's).
func abandon(nc net.Conn) {
	if l, ok := nc.(interface{ SetLinger(int) error }); ok {
		l.SetLinger(0)
	}
	nc.Close()
}

// attachLocked makes nc, a handshaken connection, one of the pool's and
// starts its reader; the node is up again if it was down. p.mu is held.
func (p *nodePool) attachLocked(nc net.Conn, proto int) (*nodeConn, error) {
	if p.srv.nodesClosed.Load() {
		// Close may have closed the pool's connections while this one
		// was being made (a watchdog probe started just before it):
		// under p.mu, either this sees them closed or closeAll sees
		// the connection. During the shutdown grace before that, the
		// clients' commands already read still get connections.
		nc.Close()
		return nil, errNodeDown
	}
	p.markUp()
	c := &nodeConn{node: p, nc: rawio.Wrap(nc), proto: proto}
	p.all[c] = struct{}{}
	p.srv.bg.Add(1)
	go func() {
		defer p.srv.bg.Done()
		c.readLoop()
		p.mu.Lock()
		delete(p.all, c)
		p.mu.Unlock()
	}()
	return c, nil
}

// markUp records that the node answered. p.mu is held.
func (p *nodePool) markUp() {
	p.down.Store(false)
	if p.lastErr != nil {
		p.srv.log.Info("node reachable again", "node", p.addr)
		p.lastErr = nil
	}
}

// adoptLocked takes nc, a connection that has just proved the node
// answers (PING), as the pool's first shared one, or closes it if that one
// is healthy; the node is up either way. p.mu is held.
func (p *nodePool) adoptLocked(nc net.Conn) {
	if c := p.shared[0][0]; c != nil && !c.isBroken() {
		nc.Close()
		p.markUp()
		return
	}
	if c, err := p.attachLocked(nc, 2); err == nil {
		p.shared[0][0] = c
	}
}

// recover starts the pool's recoverer unless it runs. A retired pool
// gets none: nothing is routed to it, and a node removed for good would
// be dialed for ever. A command that reaches it while it is down fails at
// once; a view or a MOVED that names it again makes it live (and not down).
// A pool the cluster view made dead gets one too (setPoolState), so that a
// node that answers again is served before gossip says it is alive.
func (s *Server) recover(p *nodePool) {
	if !p.live() && !p.viewDeadPool() {
		return
	}
	s.goUnlessRunning(&p.recovering, func() { s.recoverLoop(p) })
}

// viewDeadPool reports whether the pool is dead by the cluster view's
// verdict (not retired, not merely down).
func (p *nodePool) viewDeadPool() bool {
	return p.getState() == poolDead && p.viewDead.Load()
}

// goUnlessRunning runs f in a background goroutine Close waits for,
// unless the server is closed or running marks an f still running.
func (s *Server) goUnlessRunning(running *atomic.Bool, f func()) {
	if s.isClosed() || !running.CompareAndSwap(false, true) {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer running.Store(false)
		f()
	}()
}

// recoverLoop dials a node that is down every RedialBackoff until it
// answers PING, then makes that connection the pool's first shared one
// and marks the node up. A node the cluster view says is dead is served
// again once it answers (reviveDead), as verifyDead keeps serving one
// that answers: the node serves its own slots whatever gossip says of it,
// and a node killed and restarted within seconds may get its dead
// verdict after it is back, seconds before gossip sees it alive.
//
// It runs without p.mu, so that the clients of the node's slots get
// CLUSTERDOWN at once meanwhile rather than wait on a dial: a stopped
// (SIGSTOP) process's kernel still completes connections, and without the
// PING each new connection looked healthy until its first request had
// waited NodeTimeout again.
func (s *Server) recoverLoop(p *nodePool) {
	t := time.NewTimer(s.opts.RedialBackoff)
	defer t.Stop()
	// Close must not wait out a handshake with a stopped node.
	ctx, cancel := s.untilClose(context.Background())
	defer cancel()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		dead := p.viewDeadPool()
		if !dead && (!p.live() || !p.down.Load()) {
			return // the cluster view has taken over, or a dial got through
		}
		nc, err := p.handshake(ctx, 2, true)
		if dead && (err == nil || errors.Is(err, errNodeFull)) {
			s.reviveDead(p, nc)
			return
		}
		p.mu.Lock()
		if err == nil {
			p.adoptLocked(nc)
			p.mu.Unlock()
			return
		}
		if errors.Is(err, errNodeFull) {
			// The node answers, at its maxclients: it is up, and the
			// commands that need a connection get its refusal.
			p.markUp()
			p.mu.Unlock()
			return
		}
		if s.isClosed() {
			p.mu.Unlock()
			return // Close aborted the handshake; the node did not fail it
		}
		p.markDownAgain(err)
		p.mu.Unlock()
		t.Reset(s.opts.RedialBackoff)
	}
}

// reviveDead serves again a pool the cluster view made dead, whose node
// answers the proxy (nc proved it; nil for a node at its maxclients),
// until the proxy's own failure detection finds it down again (markDown,
// verifyDead) or a view changes the verdict.
func (s *Server) reviveDead(p *nodePool, nc net.Conn) {
	r := s.route
	r.mu.Lock()
	defer r.mu.Unlock()
	if !p.viewDeadPool() || s.isClosed() {
		if nc != nil {
			nc.Close()
		}
		return // a later view decided, or the proxy is closing
	}
	s.log.Info("the cluster view says the node is dead, but it answers the proxy again", "node", p.addr)
	p.doubted = true
	r.setPoolState(p, poolLive)
	p.mu.Lock()
	if nc != nil {
		p.adoptLocked(nc)
	} else {
		p.markUp()
	}
	p.mu.Unlock()
}

// untilClose returns a context that also ends when the server closes, so
// that Close never waits out a dial or a handshake made under it.
func (s *Server) untilClose(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// markDownAgain records another failed attempt to reach the node. An
// outage logs one warning, at its first failure, and "node reachable
// again" at its end: the attempts in between fail in ways that vary
// without news (a timeout names a new local port each time, and a host
// that is gone answers "no route to host" and timeouts by turns). INFO's
// nodes section counts them. p.mu is held.
func (p *nodePool) markDownAgain(err error) {
	p.errors.Add(1)
	if p.lastErr == nil {
		p.srv.log.Warn("node unreachable", "node", p.addr, "err", err)
	}
	p.lastErr = err
}

// handshake dials the node and sends AUTH and HELLO as needed, and PING
// if ping is set (the recoverer's proof that the node answers), reading
// their replies before the connection is shared. Ending ctx aborts it.
func (p *nodePool) handshake(ctx context.Context, proto int, ping bool) (net.Conn, error) {
	o := p.srv.opts
	d := net.Dialer{Timeout: o.DialTimeout}
	nc, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	var cmds [][][]byte
	if o.NodePassword != "" {
		cmds = append(cmds, [][]byte{[]byte("AUTH"), []byte(o.NodePassword)})
	}
	if proto == 3 {
		cmds = append(cmds, [][]byte{[]byte("HELLO"), []byte("3")})
	}
	if ping {
		cmds = append(cmds, [][]byte{[]byte("PING")})
	}
	if len(cmds) == 0 {
		return nc, nil
	}
	var out []byte
	for _, c := range cmds {
		out = resp.AppendCommand(out, c)
	}
	nc.SetDeadline(time.Now().Add(o.DialTimeout + o.NodeTimeout))
	defer nc.SetDeadline(time.Time{})
	defer context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })()
	if _, err := nc.Write(out); err != nil {
		nc.Close()
		return nil, err
	}
	br := bufio.NewReader(nc)
	var buf []byte
	for i := range cmds {
		v, err := readValue(br, &buf)
		if err != nil {
			nc.Close()
			return nil, err
		}
		if ping && i == len(cmds)-1 && v.IsError() && bytes.HasPrefix(v.Str, []byte("LOADING ")) {
			// A node loading its data is up: its commands answer
			// LOADING, which clients retry, until it is in.
			p.noteLoading()
			continue
		}
		if v.IsError() {
			nc.Close()
			if bytes.HasPrefix(v.Str, []byte(resp.ErrMaxClients)) {
				return nil, errNodeFull
			}
			if bytes.HasPrefix(v.Str, noAuthReply[1:]) {
				return nil, fmt.Errorf("%w: %s", errWantsPassword, v.Str)
			}
			return nil, fmt.Errorf("node refused the handshake: %s", v.Str)
		}
	}
	if br.Buffered() > 0 {
		nc.Close()
		return nil, errors.New("unexpected bytes after the handshake")
	}
	return nc, nil
}

// readValue reads one reply from br into *buf and decodes it.
func readValue(br *bufio.Reader, buf *[]byte) (resp.Value, error) {
	*buf = (*buf)[:0]
	for {
		n, err := resp.ReplyLen(*buf)
		if err != nil {
			return resp.Value{}, err
		}
		if n > 0 {
			v, _, err := resp.ParseValue((*buf)[:n])
			return v, err
		}
		b, err := br.ReadByte()
		if err != nil {
			return resp.Value{}, err
		}
		// Byte by byte: the bytes after this reply belong to the next
		// one (AUTH's +OK is followed by HELLO's map).
		*buf = append(*buf, b)
	}
}

// watchdog cuts off connections whose node has left requests unanswered,
// with nothing moving, for longer than NodeTimeout.
func (s *Server) watchdog() {
	t := time.NewTicker(s.opts.NodeTimeout / 4)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			limit := s.statClock() - int64(s.opts.NodeTimeout)
			for _, p := range s.route.all() {
				if p.getState() == poolRetired {
					p.closeIdle()
				}
				// A dial holds p.mu for up to DialTimeout+NodeTimeout:
				// look at this pool next tick rather than hold up the
				// others' cut-offs.
				if !p.mu.TryLock() {
					continue
				}
				p.closeStaleLocked(time.Now())
				conns := make([]*nodeConn, 0, len(p.all))
				for c := range p.all {
					conns = append(conns, c)
				}
				p.mu.Unlock()
				if len(conns) == 0 && p.getState() == poolLive {
					s.probe(p)
				}
				silent, waiting, heard := false, false, false
				for _, c := range conns {
					if c.blocking.Load() {
						// A blocked command may rightly wait for ever.
						waiting = waiting || c.progress.Load() < limit
						continue
					}
					if c.progress.Load() >= limit {
						heard = true
					}
					if c.outstanding() == 0 {
						continue
					}
					heard = true // its own timeout tells
					if c.progress.Load() < limit {
						s.log.Warn("node not answering; connection closed", "node", p.addr, "timeout", s.opts.NodeTimeout)
						// A stopped process's kernel still accepts
						// connections: without this every request
						// would wait NodeTimeout again. Its slots
						// answer CLUSTERDOWN until the recoverer
						// has its PONG.
						p.mu.Lock()
						p.markDown(nil)
						p.mu.Unlock()
						c.cutOff()
						silent = true
					}
				}
				switch {
				case silent:
					// The blocked commands on the node wait on a node
					// that does not answer: their clients get the
					// connection error now, not never (a timeout of 0).
					for _, c := range conns {
						if c.blocking.Load() {
							c.cutOff()
						}
					}
				case waiting && !heard:
					// Only blocked commands, and nothing heard from
					// the node for NodeTimeout: a PING tells a node
					// that stopped answering (the next ticks find it
					// unanswered) from one with nothing to send.
					s.pingShared(p)
				}
			}
		}
	}
}

// probe connects to a node the proxy holds no connection to, in the
// background, so that its state (INFO nodes, CLUSTER INFO, the node_up
// metric, the "unreachable" and "reachable again" log lines) follows the
// node even while no client sends it anything: a node that died idle
// showed up, and one that came back showed down, until a client's command
// happened to try it. The connection made is kept as a shared one.
func (s *Server) probe(p *nodePool) {
	s.goUnlessRunning(&p.probing, func() {
		p.sharedConn(2, 0) // the outcome is recorded in p
	})
}

// pingShared sends PING on one of p's shared connections, in the
// background (the watchdog must not wait on a dial), for the watchdog to
// see answered or not.
func (s *Server) pingShared(p *nodePool) {
	s.goUnlessRunning(&p.probing, func() {
		c, err := p.sharedConn(2, 0)
		if err != nil {
			return // recorded in p
		}
		r := &request{b: newBatch(0)}
		r.b.remaining.Store(1)
		c.send([]*request{r}, resp.AppendCommand(nil, s.unlogged([][]byte{[]byte("PING")})))
	})
}

// closeIdle closes the pool's connections that wait for nothing (a
// retired pool's, so that stragglers in flight are still answered).
func (p *nodePool) closeIdle() {
	p.mu.Lock()
	conns := make([]*nodeConn, 0, len(p.all))
	for c := range p.all {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.closeIfIdle()
	}
}

// errConnRetired marks a connection closed because its node was retired.
var errConnRetired = errors.New("node retired")

// closeIfIdle closes the connection if nothing is queued, being written
// or awaited on it, and no blocking command holds it; it is marked broken
// first, under the lock send queues under, so that no request can slip
// in: a client that finds it broken takes a fresh connection.
func (c *nodeConn) closeIfIdle() {
	c.mu.Lock()
	if c.broken != nil || c.head != len(c.queue) || c.writing || len(c.out) > 0 || c.blocking.Load() {
		c.mu.Unlock()
		return
	}
	c.broken = errConnRetired
	c.dead.Store(true)
	c.mu.Unlock()
	c.nc.Close()
}

// closeAll closes every connection of the pool.
func (p *nodePool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.all {
		c.nc.Close()
	}
}
