package difftest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RunBlockingSchedule runs a seeded random schedule of n steps over four
// connections per server (the oracle and the server under test: a node,
// or the proxy in front of nodes), any of which may send a blocking list
// command (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP, timeout 0, a small one,
// or an invalid one) or a non-blocking command of the 'lists' family, a
// push, an emptying DEL or pop, a transaction holding a blocking command,
// a CLIENT UNBLOCK of another connection, or a disconnect while blocked.
//
// The servers run in lock-step: after each step, every connection with a
// blocking command in flight is, on each server, either answered or
// counted blocked before the next step starts, so both servers see the
// same interleaving. "Counted" means: the replies read so far leave as
// many commands unanswered as INFO blocked_clients says (for a proxy, the
// sum over the nodes in its INFO nodes section); the two only agree once
// the step's command has run and every client it released has its reply.
// Every reply is compared, in each connection's order, including the ones
// a later push releases; so are the lists at the end. It returns how many
// commands blocked and how many of them another connection released.
func RunBlockingSchedule(t *testing.T, p *Pair, seed uint64, n int) (blocks, released int) {
	t.Helper()
	p.Flush(t)
	s := newSchedule(t, p, seed)
	for range n {
		s.step()
		if t.Failed() {
			return s.blocks, s.released
		}
	}
	s.finish()
	return s.blocks, s.released
}

// schedConn is one connection pair whose replies are read by a goroutine
// per side, so a reply that comes while the schedule goes on (a blocked
// command released by another connection's push) is kept in order.
type schedConn struct {
	name     string
	pair     *ConnPair
	rid, nid string // CLIENT ID on each server
	rch, nch chan schedReply
	pending  []string // the blocking command in flight, nil if none
}

type schedReply struct {
	v   Value
	err error
}

// blockingKeys are the keys blocking commands wait on: one hash tag, keys
// of the generator's key space (its commands write them too).
var blockingKeys = []string{"{a}1", "{a}2", "{a}3"}

type schedule struct {
	t     *testing.T
	p     *Pair
	seed  uint64
	rng   *rand.Rand
	gen   *Gen
	ctl   *ConnPair
	conns []*schedConn
	hist  []string
	elem  int
	nconn int
	nodes []*Conn // the nodes behind the server under test, if a proxy
	// blocks counts commands seen blocked; released, those answered
	// later (served by a push, unblocked, ...).
	blocks, released int
	wasBlocked       map[*schedConn]bool
}

func newSchedule(t *testing.T, p *Pair, seed uint64) *schedule {
	gen, err := NewGen(seed, []string{"lists"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := &schedule{t: t, p: p, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), gen: gen, ctl: p.NewConn(t),
		wasBlocked: map[*schedConn]bool{}}
	s.nodes = proxyNodes(t, s.ctl.Node)
	for range 4 {
		s.conns = append(s.conns, s.dial())
	}
	return s
}

// dial opens a connection pair (RESP2 or RESP3 alternately) and starts its
// readers.
func (s *schedule) dial() *schedConn {
	t := s.t
	proto := 2 + s.nconn%2
	c := &schedConn{name: fmt.Sprintf("c%d", s.nconn), pair: s.p.NewConnProto(t, proto)}
	s.nconn++
	r, n := c.pair.Both(t, "CLIENT", "ID")
	c.rid, c.nid = fmt.Sprint(r.Int), fmt.Sprint(n.Int)
	c.rch, c.nch = make(chan schedReply, 16), make(chan schedReply, 16)
	for _, side := range []struct {
		conn *Conn
		ch   chan schedReply
	}{{c.pair.Redis, c.rch}, {c.pair.Node, c.nch}} {
		side.conn.Timeout = time.Hour // a blocked command may wait long
		go func() {
			for {
				v, err := side.conn.Receive()
				side.ch <- schedReply{v, err}
				if err != nil {
					close(side.ch)
					return
				}
			}
		}()
	}
	return c
}

func (s *schedule) fail(format string, a ...any) {
	s.t.Helper()
	h := s.hist
	if len(h) > 80 {
		h = h[len(h)-80:]
	}
	s.t.Fatalf("seed %d (%s=%d): %s\nlast steps:\n  %s", s.seed, EnvSeed, s.seed,
		fmt.Sprintf(format, a...), strings.Join(h, "\n  "))
}

func (s *schedule) log(c *schedConn, args []string) {
	s.hist = append(s.hist, fmt.Sprintf("%d %s: %s", len(s.hist), c.name, FormatCommand(args)))
}

// send writes args on both sides of c.
func (s *schedule) send(c *schedConn, args []string) {
	s.t.Helper()
	s.log(c, args)
	b := schedArgs(args)
	if err := c.pair.Redis.Send(b...); err != nil {
		s.fail("%s: send to redis: %v", c.name, err)
	}
	if err := c.pair.Node.Send(b...); err != nil {
		s.fail("%s: send to node: %v", c.name, err)
	}
}

// recv waits for c's next reply on both sides.
func (s *schedule) recv(c *schedConn, what []string) (a, b Value) {
	s.t.Helper()
	get := func(ch chan schedReply, side string) Value {
		select {
		case r, ok := <-ch:
			if !ok || r.err != nil {
				s.fail("%s: %s: reading the reply to %s: %v", c.name, side, FormatCommand(what), r.err)
			}
			return r.v
		case <-time.After(10 * time.Second):
			s.fail("%s: %s: no reply to %s in 10 s", c.name, side, FormatCommand(what))
		}
		return Value{}
	}
	return get(c.rch, "redis"), get(c.nch, "node")
}

func (s *schedule) compare(c *schedConn, args []string, st Step, a, b Value) {
	s.t.Helper()
	st.Args = args
	if !Same(st, a, b) {
		s.fail("%s", Mismatch(args, c.pair.Proto, a, b))
	}
}

// do runs one non-blocking command on c.
func (s *schedule) do(c *schedConn, st Step) {
	s.t.Helper()
	s.send(c, st.Args)
	a, b := s.recv(c, st.Args)
	s.compare(c, st.Args, st, a, b)
}

func (s *schedule) idle() []*schedConn {
	var out []*schedConn
	for _, c := range s.conns {
		if c.pending == nil {
			out = append(out, c)
		}
	}
	return out
}

func (s *schedule) blocked() []*schedConn {
	var out []*schedConn
	for _, c := range s.conns {
		if c.pending != nil {
			out = append(out, c)
		}
	}
	return out
}

func (s *schedule) pick(xs ...string) string { return xs[s.rng.IntN(len(xs))] }

func (s *schedule) key() string {
	if s.rng.IntN(40) == 0 {
		return s.pick("{b}1", "k1") // another slot: CROSSSLOT with the others
	}
	return blockingKeys[s.rng.IntN(len(blockingKeys))]
}

func (s *schedule) side() string { return s.pick("LEFT", "RIGHT") }

// timeout is mostly 0 (block forever); sometimes short, so the command
// times out; rarely invalid, or valid in strtold's eyes (0x10: 16 s).
func (s *schedule) timeout() string {
	switch r := s.rng.IntN(100); {
	case r < 80:
		return "0"
	case r < 94:
		return s.pick("0.01", "0.02", "0.05", "0.001")
	default:
		return s.pick("-1", "-0.5", "x", "1e30", "inf", "nan", "0x10", "", " 1")
	}
}

func (s *schedule) elems(n int) []string {
	out := make([]string, n)
	for i := range out {
		s.elem++
		out[i] = fmt.Sprint("j", s.elem)
	}
	return out
}

// blockingCmd returns a blocking command and its timeout argument.
func (s *schedule) blockingCmd() (args []string, timeout string) {
	timeout = s.timeout()
	switch s.rng.IntN(6) {
	case 0, 1:
		args = []string{s.pick("BLPOP", "BRPOP")}
		for range 1 + s.rng.IntN(3) {
			args = append(args, s.key())
		}
		return append(args, timeout), timeout
	case 2, 3:
		return []string{"BLMOVE", s.key(), s.key(), s.side(), s.side(), timeout}, timeout
	case 4:
		return []string{"BRPOPLPUSH", s.key(), s.key(), timeout}, timeout
	default:
		n := 1 + s.rng.IntN(3)
		args = []string{"BLMPOP", timeout, fmt.Sprint(n)}
		for range n {
			args = append(args, s.key())
		}
		args = append(args, s.side())
		if s.rng.IntN(2) == 0 {
			args = append(args, "COUNT", s.pick("1", "2", "3", "10"))
		}
		return args, timeout
	}
}

func (s *schedule) step() {
	s.t.Helper()
	idle := s.idle()
	c := idle[s.rng.IntN(len(idle))]
	switch r := s.rng.IntN(100); {
	case r < 35 && len(idle) > 1: // leave one connection free for the rest
		args, timeout := s.blockingCmd()
		s.send(c, args)
		c.pending = args
		if strings.HasPrefix(timeout, "0.") {
			// A short timeout: the reply comes by itself (nothing
			// else happens meanwhile).
			a, b := s.recv(c, args)
			c.pending = nil
			s.compare(c, args, Step{}, a, b)
		}
	case r < 55: // a push on a key someone may wait on
		s.do(c, Step{Args: append([]string{s.pick("LPUSH", "RPUSH", "LPUSHX", "RPUSHX"), s.key()}, s.elems(1+s.rng.IntN(3))...)})
	case r < 68: // empty a key, so the next blocking command blocks
		if s.rng.IntN(2) == 0 {
			s.do(c, Step{Args: []string{"DEL", s.key()}})
		} else {
			s.do(c, Step{Args: []string{s.pick("LPOP", "RPOP"), s.key(), "1000000"}})
		}
	case r < 88: // the generator's list commands, on the whole key space
		st, err := s.gen.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		s.do(c, st)
	case r < 92: // a transaction: nothing blocks inside MULTI
		args, _ := s.blockingCmd()
		cmds := [][]string{{"MULTI"}, args,
			append([]string{s.pick("LPUSH", "RPUSH"), s.key()}, s.elems(1+s.rng.IntN(2))...), {"EXEC"}}
		if s.rng.IntN(2) == 0 {
			cmds[1], cmds[2] = cmds[2], cmds[1]
		}
		for _, a := range cmds {
			s.send(c, a)
		}
		for _, a := range cmds {
			ra, rb := s.recv(c, a)
			s.compare(c, a, Step{}, ra, rb)
		}
	case r < 97: // CLIENT UNBLOCK, mostly of a blocked connection
		target := s.conns[s.rng.IntN(len(s.conns))]
		if b := s.blocked(); len(b) > 0 && s.rng.IntN(4) > 0 {
			target = b[s.rng.IntN(len(b))]
		}
		mode := s.pick("TIMEOUT", "ERROR", "")
		ra := []string{"CLIENT", "UNBLOCK", target.rid, mode}
		na := []string{"CLIENT", "UNBLOCK", target.nid, mode}
		if mode == "" {
			ra, na = ra[:3], na[:3]
		}
		s.log(c, append(ra, "(redis id; node "+target.nid+", "+target.name+")"))
		if err := c.pair.Redis.Send(schedArgs(ra)...); err != nil {
			s.fail("send: %v", err)
		}
		if err := c.pair.Node.Send(schedArgs(na)...); err != nil {
			s.fail("send: %v", err)
		}
		a, b := s.recv(c, ra)
		s.compare(c, ra, Step{}, a, b)
	default: // a blocked client disconnects; a new connection replaces it
		b := s.blocked()
		if len(b) == 0 {
			return
		}
		victim := b[s.rng.IntN(len(b))]
		s.log(victim, []string{"(disconnects)"})
		victim.pair.Redis.Close()
		victim.pair.Node.Close()
		for range victim.rch {
		}
		for range victim.nch {
		}
		// settle waits until both servers have dropped the client's
		// waiter.
		for j, c := range s.conns {
			if c == victim {
				s.conns[j] = s.dial()
				s.log(s.conns[j], []string{"(connects)"})
			}
		}
	}
	s.settle()
}

func schedArgs(args []string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

// settle waits until each server is settled (see RunBlockingSchedule),
// then compares: a command answered on one server must be answered on
// the other, with the same reply.
func (s *schedule) settle() {
	s.t.Helper()
	rgot := s.settleSide(s.ctl.Redis, nil, func(c *schedConn) chan schedReply { return c.rch })
	ngot := s.settleSide(s.ctl.Node, s.nodes, func(c *schedConn) chan schedReply { return c.nch })
	for _, c := range s.conns {
		if c.pending == nil {
			continue
		}
		ra, rAnswered := rgot[c]
		na, nAnswered := ngot[c]
		switch {
		case !rAnswered && !nAnswered:
			if !s.wasBlocked[c] {
				s.wasBlocked[c] = true
				s.blocks++
			}
			continue
		case rAnswered != nAnswered:
			s.fail("%s: %s: redis blocked=%v %s, server under test blocked=%v %s", c.name, FormatCommand(c.pending),
				!rAnswered, ra, !nAnswered, na)
		}
		s.compare(c, c.pending, Step{}, ra, na)
		s.hist = append(s.hist, fmt.Sprintf("   %s <- %s", c.name, ra))
		c.pending = nil
		if s.wasBlocked[c] {
			s.released++
			delete(s.wasBlocked, c)
		}
	}
}

// settleSide reads the replies to pending commands on one server until
// as many are unanswered as the server counts blocked clients (on nodes,
// for a proxy), and returns the replies read.
func (s *schedule) settleSide(ctl *Conn, nodes []*Conn, ch func(*schedConn) chan schedReply) map[*schedConn]Value {
	s.t.Helper()
	got := map[*schedConn]Value{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		unanswered := 0
		for _, c := range s.conns {
			if c.pending == nil {
				continue
			}
			if _, ok := got[c]; !ok {
				select {
				case r, ok := <-ch(c):
					if !ok || r.err != nil {
						s.fail("%s: reading the reply to %s: %v", c.name, FormatCommand(c.pending), r.err)
					}
					got[c] = r.v
					continue
				default:
				}
				unanswered++
			}
		}
		blocked := 0
		if nodes == nil {
			blocked = s.blockedClients(ctl)
		}
		for _, n := range nodes {
			blocked += s.blockedClients(n)
		}
		if blocked == unanswered {
			return got
		}
		if time.Now().After(deadline) {
			s.fail("after 10 s, %d commands unanswered and %d clients blocked", unanswered, blocked)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// blockedClients reads INFO's blocked_clients.
func (s *schedule) blockedClients(c *Conn) int {
	s.t.Helper()
	v, err := c.DoStrings("INFO", "clients")
	if err != nil {
		s.fail("INFO clients: %v", err)
	}
	_, rest, _ := strings.Cut(v.Text(), "blocked_clients:")
	n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		s.fail("INFO clients without blocked_clients: %q", v.Text())
	}
	return n
}

// proxyNodes returns connections to the nodes behind the server under
// test if it is a shardgate proxy (INFO's shardgate_role), else nil.
func proxyNodes(t *testing.T, c *Conn) []*Conn {
	t.Helper()
	v, err := c.DoStrings("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Text(), "shardgate_role:proxy") {
		return nil
	}
	v, err = c.DoStrings("INFO", "nodes")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*Conn
	for _, line := range strings.Split(v.Text(), "\n") {
		_, rest, ok := strings.Cut(line, ":addr=")
		if !ok {
			continue
		}
		addr, _, _ := strings.Cut(rest, ",")
		n, err := Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		t.Fatalf("a proxy without nodes in INFO nodes: %q", v.Text())
	}
	return nodes
}

// finish releases the clients still blocked and compares the key space.
func (s *schedule) finish() {
	s.t.Helper()
	for _, c := range s.blocked() {
		s.log(c, []string{"(released with CLIENT UNBLOCK)"})
		if _, err := s.ctl.Redis.DoStrings("CLIENT", "UNBLOCK", c.rid); err != nil {
			s.fail("CLIENT UNBLOCK: %v", err)
		}
		if _, err := s.ctl.Node.DoStrings("CLIENT", "UNBLOCK", c.nid); err != nil {
			s.fail("CLIENT UNBLOCK: %v", err)
		}
	}
	s.settle()
	for _, k := range []string{"{a}1", "{a}2", "{a}3", "{b}1", "{b}2", "{b}3", "k1", "k2"} {
		for _, args := range [][]string{{"TYPE", k}, {"LRANGE", k, "0", "-1"}} {
			a, b := s.ctl.Both(s.t, args...)
			s.compare(&schedConn{pair: s.ctl}, args, Step{}, a, b)
		}
	}
}
