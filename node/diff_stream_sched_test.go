package node_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffStreamBlockingSchedule runs a seeded random schedule of stream
// commands from four connections per server (RESP2 and RESP3) against a
// real redis-server and the node, in lock-step as difftest's list
// schedule does: a connection may send a blocking XREAD or XREADGROUP
// (BLOCK 0 or a few ms, '$', '>' or an explicit id, COUNT, NOACK, one to
// three keys), or an XADD (explicit ids), XDEL, XTRIM, DEL, SET over a
// stream, RENAME, XGROUP CREATE/DESTROY/SETID, XACK, a non-blocking read,
// a transaction holding a blocking read, CLIENT UNBLOCK, a disconnect
// while blocked, or (rarely) FLUSHALL. After each step every connection
// with a read in flight is, on each server, answered or counted in INFO
// blocked_clients before the next step, and every reply is compared in
// each connection's order; the streams, groups and PEL summaries too at
// the end.
//
//	SHARDGATE_DIFF_SEED=42 SHARDGATE_DIFF_N=3000 go test ./node -run TestDiffStreamBlockingSchedule
func TestDiffStreamBlockingSchedule(t *testing.T) {
	cfg, err := difftest.RandomConfigFromEnv(difftest.RandomConfig{N: 500})
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		cfg.N = min(cfg.N, 150)
	}
	t.Logf("seed %d, %d steps (reproduce with %s=%d)", cfg.Seed, cfg.N, difftest.EnvSeed, cfg.Seed)
	p := difftest.Start(t)
	s := &xsched{t: t, p: p, rng: rand.New(rand.NewPCG(cfg.Seed, 0x57ea)), ctl: p.NewConn(t), wasBlocked: map[*xconn]bool{}}
	for range 4 {
		s.conns = append(s.conns, s.dial())
	}
	for range cfg.N {
		s.step()
	}
	s.finish()
	t.Logf("%d reads blocked, %d of them released by another connection", s.blocks, s.released)
	if s.released == 0 {
		t.Errorf("no blocked read was ever released: the schedule tests nothing")
	}
}

// xconn is one connection pair whose replies are read by a goroutine per
// side, so a reply released later is kept in order.
type xconn struct {
	name     string
	pair     *difftest.ConnPair
	rid, nid string
	rch, nch chan xreply
	pending  []string // the blocking read in flight
}

type xreply struct {
	v   difftest.Value
	err error
}

type xsched struct {
	t                *testing.T
	p                *difftest.Pair
	rng              *rand.Rand
	ctl              *difftest.ConnPair
	conns            []*xconn
	nconn            int
	nextMs           int // the ms part of the next XADD id
	hist             []string
	blocks, released int
	wasBlocked       map[*xconn]bool
}

var xschedKeys = []string{"{x}1", "{x}2", "{x}3"}

func (s *xsched) dial() *xconn {
	proto := 2 + s.nconn%2
	c := &xconn{name: fmt.Sprintf("c%d", s.nconn), pair: s.p.NewConnProto(s.t, proto)}
	s.nconn++
	r, n := c.pair.Both(s.t, "CLIENT", "ID")
	c.rid, c.nid = fmt.Sprint(r.Int), fmt.Sprint(n.Int)
	c.rch, c.nch = make(chan xreply, 16), make(chan xreply, 16)
	for _, side := range []struct {
		conn *difftest.Conn
		ch   chan xreply
	}{{c.pair.Redis, c.rch}, {c.pair.Node, c.nch}} {
		side.conn.Timeout = time.Hour
		go func() {
			for {
				v, err := side.conn.Receive()
				side.ch <- xreply{v, err}
				if err != nil {
					close(side.ch)
					return
				}
			}
		}()
	}
	return c
}

func (s *xsched) fail(format string, a ...any) {
	s.t.Helper()
	h := s.hist
	if len(h) > 60 {
		h = h[len(h)-60:]
	}
	s.t.Fatalf("%s\nlast steps:\n%s", fmt.Sprintf(format, a...), strings.Join(h, "\n"))
}

func (s *xsched) log(c *xconn, args []string) {
	s.hist = append(s.hist, c.name+": "+difftest.FormatCommand(args))
}

func (s *xsched) send(c *xconn, args []string) {
	s.t.Helper()
	s.log(c, args)
	b := toArgs(args)
	if err := c.pair.Redis.Send(b...); err != nil {
		s.fail("send: %v", err)
	}
	if err := c.pair.Node.Send(b...); err != nil {
		s.fail("send: %v", err)
	}
}

func (s *xsched) recv(c *xconn, args []string) (a, b difftest.Value) {
	s.t.Helper()
	for i, ch := range []chan xreply{c.rch, c.nch} {
		select {
		case r, ok := <-ch:
			if !ok || r.err != nil {
				s.fail("%s: reading the reply to %s: %v", c.name, difftest.FormatCommand(args), r.err)
			}
			if i == 0 {
				a = r.v
			} else {
				b = r.v
			}
		case <-time.After(10 * time.Second):
			s.fail("%s: no reply to %s after 10 s", c.name, difftest.FormatCommand(args))
		}
	}
	return a, b
}

func (s *xsched) compare(c *xconn, args []string, a, b difftest.Value) {
	s.t.Helper()
	if !difftest.Equal(a, b) {
		s.fail("%s", difftest.Mismatch(args, c.pair.Proto, a, b))
	}
}

// do runs one command that does not block on c.
func (s *xsched) do(c *xconn, args ...string) {
	s.t.Helper()
	s.send(c, args)
	a, b := s.recv(c, args)
	s.compare(c, args, a, b)
}

func (s *xsched) pick(xs ...string) string { return xs[s.rng.IntN(len(xs))] }
func (s *xsched) key() string              { return xschedKeys[s.rng.IntN(len(xschedKeys))] }
func (s *xsched) group() string            { return s.pick("g", "g", "h") }

// id is an explicit id near the ones XADD uses, for XDEL, SETID and reads.
func (s *xsched) id() string {
	return strconv.Itoa(s.rng.IntN(s.nextMs+2)) + "-" + s.pick("0", "1")
}

func (s *xsched) idle() []*xconn {
	var out []*xconn
	for _, c := range s.conns {
		if c.pending == nil {
			out = append(out, c)
		}
	}
	return out
}

func (s *xsched) blocked() []*xconn {
	var out []*xconn
	for _, c := range s.conns {
		if c.pending != nil {
			out = append(out, c)
		}
	}
	return out
}

// readCmd returns a read (blocking when timeout is not "") on one to
// three keys.
func (s *xsched) readCmd(timeout string) []string {
	n := 1 + s.rng.IntN(3)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = s.key()
	}
	var args []string
	group := s.rng.IntN(2) == 0
	if group {
		args = []string{"XREADGROUP", "GROUP", s.group(), s.pick("alice", "bob", "carol")}
		if s.rng.IntN(5) == 0 {
			args = append(args, "NOACK")
		}
	} else {
		args = []string{"XREAD"}
	}
	if s.rng.IntN(3) == 0 {
		args = append(args, "COUNT", s.pick("1", "2", "5"))
	}
	if timeout != "" {
		args = append(args, "BLOCK", timeout)
	}
	args = append(args, "STREAMS")
	args = append(args, keys...)
	for range keys {
		switch {
		case group && s.rng.IntN(8) > 0:
			args = append(args, ">")
		case group:
			args = append(args, s.pick("0", s.id()))
		case s.rng.IntN(3) > 0:
			args = append(args, "$")
		default:
			args = append(args, s.id())
		}
	}
	return args
}

func (s *xsched) xadd(c *xconn) {
	s.nextMs++
	k := s.key()
	args := []string{"XADD", k}
	if s.rng.IntN(6) == 0 {
		args = append(args, "MAXLEN", s.pick("1", "3"))
	}
	args = append(args, strconv.Itoa(s.nextMs)+"-1", "f", strconv.Itoa(s.nextMs))
	s.do(c, args...)
}

func (s *xsched) step() {
	s.t.Helper()
	idle := s.idle()
	c := idle[s.rng.IntN(len(idle))]
	switch r := s.rng.IntN(100); {
	case r < 35 && len(idle) > 1: // a blocking read; one connection stays free
		timeout := "0"
		if s.rng.IntN(5) == 0 {
			timeout = s.pick("1", "5", "20")
		}
		args := s.readCmd(timeout)
		s.send(c, args)
		c.pending = args
		if timeout != "0" {
			// A short timeout: the reply comes by itself.
			a, b := s.recv(c, args)
			c.pending = nil
			s.compare(c, args, a, b)
		}
	case r < 58:
		s.xadd(c)
	case r < 62:
		s.do(c, "XDEL", s.key(), s.id())
	case r < 64:
		s.do(c, "XTRIM", s.key(), "MAXLEN", s.pick("0", "1"))
	case r < 67:
		s.do(c, "DEL", s.key())
	case r < 68:
		s.do(c, "SET", s.key(), "str")
	case r < 69:
		s.do(c, "RENAME", s.key(), s.key())
	case r < 76:
		s.do(c, "XGROUP", "CREATE", s.key(), s.group(), s.pick("$", "0", s.id()), "MKSTREAM")
	case r < 79:
		s.do(c, "XGROUP", "DESTROY", s.key(), s.group())
	case r < 81:
		s.do(c, "XGROUP", "SETID", s.key(), s.group(), s.pick("$", "0", s.id()))
	case r < 84:
		s.do(c, "XACK", s.key(), s.group(), s.id(), s.id())
	case r < 89:
		s.do(c, s.readCmd("")...)
	case r < 92: // a transaction: nothing blocks inside MULTI
		s.nextMs++
		cmds := [][]string{{"MULTI"}, s.readCmd("0"), {"XADD", s.key(), strconv.Itoa(s.nextMs) + "-1", "f", "v"}, {"EXEC"}}
		if s.rng.IntN(2) == 0 {
			cmds[1], cmds[2] = cmds[2], cmds[1]
		}
		for _, a := range cmds {
			s.send(c, a)
		}
		for _, a := range cmds {
			ra, rb := s.recv(c, a)
			s.compare(c, a, ra, rb)
		}
	case r < 96: // CLIENT UNBLOCK, mostly of a blocked connection
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
		s.log(c, append(ra, "("+target.name+")"))
		if err := c.pair.Redis.Send(toArgs(ra)...); err != nil {
			s.fail("send: %v", err)
		}
		if err := c.pair.Node.Send(toArgs(na)...); err != nil {
			s.fail("send: %v", err)
		}
		a, b := s.recv(c, ra)
		s.compare(c, ra, a, b)
	case r < 99: // a blocked client disconnects; a new connection replaces it
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
		for j, x := range s.conns {
			if x == victim {
				s.conns[j] = s.dial()
			}
		}
	default:
		s.do(c, "FLUSHALL")
	}
	s.settle()
}

// settle waits until each server has answered or counts blocked every
// read in flight, then compares the answers.
func (s *xsched) settle() {
	s.t.Helper()
	rgot := s.settleSide(s.ctl.Redis, func(c *xconn) chan xreply { return c.rch })
	ngot := s.settleSide(s.ctl.Node, func(c *xconn) chan xreply { return c.nch })
	for _, c := range s.conns {
		if c.pending == nil {
			continue
		}
		ra, rok := rgot[c]
		na, nok := ngot[c]
		switch {
		case !rok && !nok:
			if !s.wasBlocked[c] {
				s.wasBlocked[c] = true
				s.blocks++
			}
			continue
		case rok != nok:
			s.fail("%s: %s: redis answered=%v %s, node answered=%v %s", c.name, difftest.FormatCommand(c.pending), rok, ra, nok, na)
		}
		s.compare(c, c.pending, ra, na)
		s.hist = append(s.hist, fmt.Sprintf("   %s <- %s", c.name, ra))
		c.pending = nil
		if s.wasBlocked[c] {
			s.released++
			delete(s.wasBlocked, c)
		}
	}
}

func (s *xsched) settleSide(ctl *difftest.Conn, ch func(*xconn) chan xreply) map[*xconn]difftest.Value {
	s.t.Helper()
	got := map[*xconn]difftest.Value{}
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
						s.fail("%s: reading the reply to %s: %v", c.name, difftest.FormatCommand(c.pending), r.err)
					}
					got[c] = r.v
					continue
				default:
				}
				unanswered++
			}
		}
		v, err := ctl.DoStrings("INFO", "clients")
		if err != nil {
			s.fail("INFO clients: %v", err)
		}
		if blockedLine(v.Text()) == "blocked_clients:"+strconv.Itoa(unanswered) {
			return got
		}
		if time.Now().After(deadline) {
			s.fail("after 10 s, %d reads unanswered, %s", unanswered, blockedLine(v.Text()))
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// finish releases the clients still blocked and compares the streams.
func (s *xsched) finish() {
	s.t.Helper()
	for _, c := range s.blocked() {
		if _, err := s.ctl.Redis.DoStrings("CLIENT", "UNBLOCK", c.rid); err != nil {
			s.fail("CLIENT UNBLOCK: %v", err)
		}
		if _, err := s.ctl.Node.DoStrings("CLIENT", "UNBLOCK", c.nid); err != nil {
			s.fail("CLIENT UNBLOCK: %v", err)
		}
	}
	s.settle()
	ctl := &xconn{name: "ctl", pair: s.ctl}
	for _, k := range xschedKeys {
		for _, args := range [][]string{{"TYPE", k}, {"XRANGE", k, "-", "+"}, {"XINFO", "GROUPS", k},
			{"XPENDING", k, "g"}, {"XPENDING", k, "h"}} {
			a, b := s.ctl.Both(s.t, args...)
			s.compare(ctl, args, a, b)
		}
	}
}
