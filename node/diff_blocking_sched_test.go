package node_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffBlockingSchedule runs a seeded random schedule over four
// connections per server (a real redis-server and the node), any of which
// may send a blocking list command (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP,
// timeout 0, a small one, or an invalid one) or a non-blocking command of
// the generator's 'lists' family, a push, a transaction holding a blocking
// command, a CLIENT UNBLOCK of another connection, or a disconnect while
// blocked. The servers run in lock-step: after each step, every connection
// with a blocking command in flight is, on each server, either answered or
// shown blocked by CLIENT LIST (flags=b) before the next step starts, so
// both servers see the same interleaving. Every reply is compared, in each
// connection's order, including the ones a later push releases; so are the
// lists at the end.
//
// The seed is printed; SHARDGATE_DIFF_SEED replays it and SHARDGATE_DIFF_N
// sets the number of steps:
//
//	SHARDGATE_DIFF_SEED=42 SHARDGATE_DIFF_N=5000 go test ./node -run TestDiffBlockingSchedule
func TestDiffBlockingSchedule(t *testing.T) {
	cfg, err := difftest.RandomConfigFromEnv(difftest.RandomConfig{N: 400})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		cfg.N = min(cfg.N, 150)
	}
	t.Logf("seed %d, %d steps (reproduce with %s=%d)", cfg.Seed, cfg.N, difftest.EnvSeed, cfg.Seed)
	p := difftest.Start(t)
	p.Flush(t)
	s := newSchedule(t, p, cfg.Seed)
	for range cfg.N {
		s.step()
		if t.Failed() {
			return
		}
	}
	s.finish()
	t.Logf("%d commands blocked, %d of them released by another connection", s.blocks, s.released)
}

// schedConn is one connection pair whose replies are read by a goroutine
// per side, so a reply that comes while the schedule goes on (a blocked
// command released by another connection's push) is kept in order.
type schedConn struct {
	name     string
	pair     *difftest.ConnPair
	rid, nid string // CLIENT ID on each server
	rch, nch chan reply
	pending  []string // the blocking command in flight, nil if none
}

type reply struct {
	v   difftest.Value
	err error
}

// blockingKeys are the keys blocking commands wait on: one hash tag, keys
// of the generator's key space (its commands write them too).
var blockingKeys = []string{"{a}1", "{a}2", "{a}3"}

type schedule struct {
	t     *testing.T
	p     *difftest.Pair
	seed  uint64
	rng   *rand.Rand
	gen   *difftest.Gen
	ctl   *difftest.ConnPair
	conns []*schedConn
	hist  []string
	elem  int
	nconn int
	last  *schedConn // the connection of the step, in settle
	// blocks counts commands seen blocked; released, those answered
	// later (served by a push, unblocked, ...).
	blocks, released int
	wasBlocked       map[*schedConn]bool
}

func newSchedule(t *testing.T, p *difftest.Pair, seed uint64) *schedule {
	gen, err := difftest.NewGen(seed, []string{"lists"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s := &schedule{t: t, p: p, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed)), gen: gen, ctl: p.NewConn(t),
		wasBlocked: map[*schedConn]bool{}}
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
	c.rch, c.nch = make(chan reply, 16), make(chan reply, 16)
	for _, side := range []struct {
		conn *difftest.Conn
		ch   chan reply
	}{{c.pair.Redis, c.rch}, {c.pair.Node, c.nch}} {
		side.conn.Timeout = time.Hour // a blocked command may wait long
		go func() {
			for {
				v, err := side.conn.Receive()
				side.ch <- reply{v, err}
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
	s.t.Fatalf("seed %d (%s=%d): %s\nlast steps:\n  %s", s.seed, difftest.EnvSeed, s.seed,
		fmt.Sprintf(format, a...), strings.Join(h, "\n  "))
}

func (s *schedule) log(c *schedConn, args []string) {
	s.hist = append(s.hist, fmt.Sprintf("%d %s: %s", len(s.hist), c.name, difftest.FormatCommand(args)))
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
func (s *schedule) recv(c *schedConn, what []string) (a, b difftest.Value) {
	s.t.Helper()
	get := func(ch chan reply, side string) difftest.Value {
		select {
		case r, ok := <-ch:
			if !ok || r.err != nil {
				s.fail("%s: %s: reading the reply to %s: %v", c.name, side, difftest.FormatCommand(what), r.err)
			}
			return r.v
		case <-time.After(10 * time.Second):
			s.fail("%s: %s: no reply to %s in 10 s", c.name, side, difftest.FormatCommand(what))
		}
		return difftest.Value{}
	}
	return get(c.rch, "redis"), get(c.nch, "node")
}

func (s *schedule) compare(c *schedConn, args []string, st difftest.Step, a, b difftest.Value) {
	s.t.Helper()
	st.Args = args
	if !difftest.Same(st, a, b) {
		s.fail("%s", difftest.Mismatch(args, c.pair.Proto, a, b))
	}
}

// do runs one non-blocking command on c.
func (s *schedule) do(c *schedConn, st difftest.Step) {
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
	s.last = c
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
			s.compare(c, args, difftest.Step{}, a, b)
		}
	case r < 55: // a push on a key someone may wait on
		s.do(c, difftest.Step{Args: append([]string{s.pick("LPUSH", "RPUSH", "LPUSHX", "RPUSHX"), s.key()}, s.elems(1+s.rng.IntN(3))...)})
	case r < 68: // empty a key, so the next blocking command blocks
		if s.rng.IntN(2) == 0 {
			s.do(c, difftest.Step{Args: []string{"DEL", s.key()}})
		} else {
			s.do(c, difftest.Step{Args: []string{s.pick("LPOP", "RPOP"), s.key(), "1000000"}})
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
			s.compare(c, a, difftest.Step{}, ra, rb)
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
		s.compare(c, ra, difftest.Step{}, a, b)
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
		// Wait until both servers have dropped the client (and its
		// waiter) before anything else happens.
		s.waitGone(s.ctl.Redis, victim.rid)
		s.waitGone(s.ctl.Node, victim.nid)
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

// settle waits until every connection with a blocking command in flight
// is, on each server, blocked or answered, and compares.
func (s *schedule) settle() {
	s.t.Helper()
	// The connection that just sent a blocking command goes first: until
	// a server has run it, the others' states say nothing.
	order := append([]*schedConn{}, s.conns...)
	if s.last != nil {
		order = append([]*schedConn{s.last}, order...)
	}
	for _, c := range order {
		if c.pending == nil {
			continue
		}
		ra, rBlocked := s.outcome(s.ctl.Redis, c.rch, c.rid, c)
		na, nBlocked := s.outcome(s.ctl.Node, c.nch, c.nid, c)
		switch {
		case rBlocked && nBlocked:
			if !s.wasBlocked[c] {
				s.wasBlocked[c] = true
				s.blocks++
			}
			continue
		case rBlocked != nBlocked:
			s.fail("%s: %s: redis blocked=%v %s, node blocked=%v %s", c.name, difftest.FormatCommand(c.pending),
				rBlocked, ra, nBlocked, na)
		}
		s.compare(c, c.pending, difftest.Step{}, ra, na)
		s.hist = append(s.hist, fmt.Sprintf("   %s <- %s", c.name, ra))
		c.pending = nil
		if s.wasBlocked[c] {
			s.released++
			delete(s.wasBlocked, c)
		}
	}
	// Both servers count the same blocked clients.
	want := fmt.Sprint("blocked_clients:", len(s.blocked()))
	for _, side := range []*difftest.Conn{s.ctl.Redis, s.ctl.Node} {
		v, err := side.DoStrings("INFO", "clients")
		if err != nil {
			s.fail("INFO: %v", err)
		}
		if !strings.Contains(v.Text(), want+"\r\n") {
			s.fail("INFO clients does not say %s:\n%s", want, v.Text())
		}
	}
}

// outcome returns the reply to c's pending command on one server, or
// blocked=true when CLIENT LIST flags the client 'b'. A client neither
// answered nor flagged has not run the command yet, or has been served
// and its reply is on the way: wait.
func (s *schedule) outcome(ctl *difftest.Conn, ch chan reply, id string, c *schedConn) (difftest.Value, bool) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case r, ok := <-ch:
			if !ok || r.err != nil {
				s.fail("%s: reading the reply to %s: %v", c.name, difftest.FormatCommand(c.pending), r.err)
			}
			return r.v, false
		default:
		}
		v, err := ctl.DoStrings("CLIENT", "LIST", "ID", id)
		if err != nil {
			s.fail("CLIENT LIST: %v", err)
		}
		for _, f := range strings.Fields(v.Text()) {
			if flags, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(flags, "b") {
				return difftest.Value{}, true
			}
		}
		if time.Now().After(deadline) {
			s.fail("%s: %s neither answered nor blocked after 10 s: %s", c.name, difftest.FormatCommand(c.pending), v.Text())
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// waitGone waits until CLIENT LIST no longer shows client id.
func (s *schedule) waitGone(ctl *difftest.Conn, id string) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := ctl.DoStrings("CLIENT", "LIST", "ID", id)
		if err != nil {
			s.fail("CLIENT LIST: %v", err)
		}
		if v.Text() == "" {
			return
		}
		if time.Now().After(deadline) {
			s.fail("client %s still listed 10 s after it disconnected: %s", id, v.Text())
		}
		time.Sleep(time.Millisecond)
	}
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
			s.compare(&schedConn{pair: s.ctl}, args, difftest.Step{}, a, b)
		}
	}
}
