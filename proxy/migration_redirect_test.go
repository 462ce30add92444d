package proxy_test

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// Redirections during a slot migration, against fake nodes that fence a
// hash tag the way a migrating node does: a command for it waits (up to
// the node's wait bound) and is then answered MOVED when the fence ended
// with a commit, served when it ended with an abort, or TRYAGAIN when the
// wait ran out first. The proxy's client sees none of it unless the
// fence outlasts Options.RedirectTimeout.

// tryAgainText is Redis's TRYAGAIN error.
const tryAgainText = "TRYAGAIN Multiple keys request during rehashing of slot"

// fenceNode is a fake node that serves every command with "served by
// <name>: <command>", except that commands with a key containing tag
// arrive at a fence lasting length (negative: forever) from the first of
// them.
type fenceNode struct {
	name   string
	tag    string
	length time.Duration
	wait   time.Duration // the node's wait bound for a fenced command
	moveTo string        // after the fence, MOVED there; "" serves here

	mu     sync.Mutex
	began  time.Time
	served []string // commands served, in order
}

func (f *fenceNode) start(t *testing.T) string {
	t.Helper()
	return fakeNode(t, func(nc net.Conn) {
		serveCommands(nc, f.answer)
	})
}

func (f *fenceNode) answer(args [][]byte) string {
	cmd := make([]string, len(args))
	fenced := false
	for i, a := range args {
		cmd[i] = string(a)
		fenced = fenced || i > 0 && f.tag != "" && strings.Contains(cmd[i], f.tag)
	}
	if fenced {
		if reply := f.fenceWait(); reply != "" {
			return reply
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.served = append(f.served, strings.Join(cmd, " "))
	return "+served by " + f.name + ": " + strings.Join(cmd, " ") + "\r\n"
}

// fenceWait holds a fenced command as the node would: until the fence
// ends (then MOVED, or "" to serve it) or for the wait bound (then
// TRYAGAIN), whichever is first.
func (f *fenceNode) fenceWait() string {
	f.mu.Lock()
	now := time.Now()
	if f.began.IsZero() {
		f.began = now
	}
	end := f.began.Add(f.length)
	f.mu.Unlock()
	if f.length < 0 || now.Before(end) {
		if f.length < 0 || end.Sub(now) > f.wait {
			time.Sleep(f.wait)
			return "-" + tryAgainText + "\r\n"
		}
		time.Sleep(end.Sub(now))
	}
	if f.moveTo != "" {
		return fmt.Sprintf("-MOVED %d %s\r\n", slots.SlotString(f.tag), f.moveTo)
	}
	return ""
}

func (f *fenceNode) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.served...)
}

// TestMigrationFenceFollowed: a client of the proxy sends commands while
// their slot is fenced; it gets the final reply (in its order, each
// multi-key command whole on one node) as long as the fence ends within
// the redirect budget, and the node's TRYAGAIN, after the budget and not
// before, when it does not.
func TestMigrationFenceFollowed(t *testing.T) {
	const tag = "{mig}"
	served := func(node string, cmd ...string) string { return "served by " + node + ": " + strings.Join(cmd, " ") }
	for _, tc := range []struct {
		name    string
		length  time.Duration // of the fence; negative: forever
		wait    time.Duration // the node's wait bound
		moved   bool          // the fence ends with MOVED to B (else A serves)
		budget  time.Duration // Options.RedirectTimeout; 0: the default
		cmds    [][]string
		want    []string
		min     time.Duration // the replies take at least
		max     time.Duration // and at most
		onB     []string      // commands B served, in order
		notOnA  bool          // A served no command of the tag
		backoff bool          // TRYAGAIN was followed several times
	}{{
		name:   "TRYAGAIN for 600ms then served",
		length: 600 * time.Millisecond,
		cmds:   [][]string{{"SET", tag + "k", "v"}},
		want:   []string{served("A", "SET", tag+"k", "v")},
		min:    600 * time.Millisecond, max: 1300 * time.Millisecond,
		backoff: true,
	}, {
		name:   "fence held 100ms at a time, then MOVED",
		length: 600 * time.Millisecond, wait: 100 * time.Millisecond, moved: true,
		cmds: [][]string{{"SET", tag + "k", "v"}},
		want: []string{served("B", "SET", tag+"k", "v")},
		min:  600 * time.Millisecond, max: 1300 * time.Millisecond,
		onB: []string{"SET " + tag + "k v"}, notOnA: true,
	}, {
		name:   "TRYAGAIN forever: the client gets it after the budget",
		length: -1, budget: time.Second,
		cmds: [][]string{{"SET", tag + "k", "v"}},
		want: []string{tryAgainText},
		min:  time.Second, max: 1600 * time.Millisecond,
		notOnA: true, backoff: true,
	}, {
		name:   "TRYAGAIN forever, each held by the node: the holds count",
		length: -1, wait: 300 * time.Millisecond, budget: time.Second,
		cmds: [][]string{{"SET", tag + "k", "v"}},
		want: []string{tryAgainText},
		min:  time.Second, max: 2500 * time.Millisecond,
		notOnA: true,
	}, {
		// TRYAGAIN at 500ms starts the budget (200ms); the resend is
		// held past it and answered MOVED at 800ms: one more hop costs
		// a round trip, and is made.
		name:   "MOVED answering the last resend after the budget is followed",
		length: 800 * time.Millisecond, wait: 500 * time.Millisecond, moved: true, budget: 200 * time.Millisecond,
		cmds: [][]string{{"SET", tag + "k", "v"}},
		want: []string{served("B", "SET", tag+"k", "v")},
		min:  800 * time.Millisecond, max: 1500 * time.Millisecond,
		onB: []string{"SET " + tag + "k v"}, notOnA: true,
	}, {
		name:   "a pipeline keeps its order, multi-key commands whole",
		length: 300 * time.Millisecond, wait: 50 * time.Millisecond, moved: true,
		cmds: [][]string{
			{"SET", "x", "1"},
			{"MSET", tag + "a", "1", tag + "b", "2"},
			{"INCR", tag + "a"},
			{"GET", "y"},
			{"DEL", tag + "a", tag + "b"},
		},
		want: []string{
			served("A", "SET", "x", "1"),
			served("B", "MSET", tag+"a", "1", tag+"b", "2"),
			served("B", "INCR", tag+"a"),
			served("A", "GET", "y"),
			served("B", "DEL", tag+"a", tag+"b"),
		},
		min: 300 * time.Millisecond, max: 1000 * time.Millisecond,
		onB:    []string{"MSET " + tag + "a 1 " + tag + "b 2", "INCR " + tag + "a", "DEL " + tag + "a " + tag + "b"},
		notOnA: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := &fenceNode{name: "B"}
			bAddr := b.start(t)
			a := &fenceNode{name: "A", tag: tag, length: tc.length, wait: tc.wait}
			if tc.moved {
				a.moveTo = bAddr
			}
			aAddr := a.start(t)
			topo, err := proxy.NewStaticTopology([]string{aAddr})
			if err != nil {
				t.Fatal(err)
			}
			_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, RedirectTimeout: tc.budget})
			c := dial(t, addr, 2)
			start := time.Now()
			if err := c.WriteRaw(pipeline(len(tc.cmds), func(i int) []string { return tc.cmds[i] })); err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				v, err := c.Receive()
				if err != nil {
					t.Fatal(err)
				}
				if v.Text() != w {
					t.Errorf("reply %d = %v, want %q", i, v, w)
				}
			}
			d := time.Since(start)
			if d < tc.min || d > tc.max {
				t.Errorf("the replies took %v, want %v to %v", d, tc.min, tc.max)
			}
			if got := b.log(); strings.Join(got, "\n") != strings.Join(tc.onB, "\n") {
				t.Errorf("B served %q, want %q", got, tc.onB)
			}
			if tc.notOnA {
				for _, cmd := range a.log() {
					if strings.Contains(cmd, tag) {
						t.Errorf("A served %q", cmd)
					}
				}
			}
			if n := redirects(t, c, "tryagain"); tc.backoff && n < 4 {
				t.Errorf("TRYAGAIN followed %d times: the test proves no backoff", n)
			}
		})
	}
}

// TestMigrationMovedPingPong: two nodes that send a command to each other
// (their tables disagree) keep it for a bounded number of hops, within
// the budget: the client gets the last MOVED.
func TestMigrationMovedPingPong(t *testing.T) {
	const key = "pingpong"
	for _, tc := range []struct {
		name     string
		budget   time.Duration
		min, max int64 // commands sent for the key
		maxTime  time.Duration
	}{
		// 1 + 16 hops, the later ones after a backoff (about 2s in all).
		{"bounded by hops", 0, 17, 17, 4 * time.Second},
		{"bounded by the budget", 300 * time.Millisecond, 4, 16, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a, b string
			moved := func(to *string) func(int, [][]byte) string {
				return func(int, [][]byte) string {
					return fmt.Sprintf("-MOVED %d %s\r\n", slots.SlotString(key), *to)
				}
			}
			a, na := redirector(t, moved(&b))
			b, nb := redirector(t, moved(&a))
			topo, err := proxy.NewStaticTopology([]string{a})
			if err != nil {
				t.Fatal(err)
			}
			_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, RedirectTimeout: tc.budget})
			c := dial(t, addr, 2)
			start := time.Now()
			v := do(t, c, "GET", key)
			d := time.Since(start)
			if !strings.HasPrefix(v.Text(), "MOVED ") {
				t.Errorf("reply %v, want MOVED", v)
			}
			if d > tc.maxTime {
				t.Errorf("took %v, want at most %v", d, tc.maxTime)
			}
			if sent := na.Load() + nb.Load(); sent < tc.min || sent > tc.max {
				t.Errorf("sent %d times, want %d to %d", sent, tc.min, tc.max)
			}
			want(t, "exhausted", difftest.Int(int64(redirects(t, c, "exhausted"))), difftest.Int(1))
		})
	}
}
