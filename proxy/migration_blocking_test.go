package proxy_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
	"github.com/shardgate/shardgate/slots"
)

// A blocking command whose slot moves while it waits (the node wakes it
// with MOVED) is sent again to the new owner with what is left of its
// timeout, so that the client waits no longer than it asked in all.

// blockingNames are the commands a fake node blocks on (XREAD and
// XREADGROUP only with BLOCK).
var blockingNames = map[string]bool{
	"BLPOP": true, "BRPOP": true, "BLMOVE": true, "BRPOPLPUSH": true, "BLMPOP": true,
}

func blocks(args [][]byte) bool {
	name := strings.ToUpper(string(args[0]))
	if name == "XREAD" || name == "XREADGROUP" {
		for _, a := range args {
			if strings.EqualFold(string(a), "block") {
				return true
			}
		}
		return false
	}
	return blockingNames[name]
}

// TestMigrationBlockingTimeoutRewritten: for every blocking command form,
// a node that answers MOVED after holding the command 300ms has it sent
// to the new owner with its timeout argument (seconds or BLOCK
// milliseconds) cut by the time spent; no timeout (0), or one the proxy
// does not read as the node would, is sent as it was; a timeout used up
// answers as the command's own timeout does. TRYAGAIN is retried within
// the redirect budget.
func TestMigrationBlockingTimeoutRewritten(t *testing.T) {
	const held = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		args    []string
		key     string // whose slot moves
		ti      int    // index of the timeout argument
		ms      bool   // in milliseconds
		orig    time.Duration
		rewrite bool // the new owner gets orig minus the time spent
		proto   int
		timeout bool // the timeout is over before MOVED: the client gets null
		// tryAgain is how many times the old owner answers TRYAGAIN (at
		// once) before it holds the command and answers MOVED; -1:
		// always, and the client gets TRYAGAIN after budget.
		tryAgain int
		budget   time.Duration
	}{
		{name: "BLPOP", args: []string{"BLPOP", "{k}a", "{k}b", "2"}, key: "{k}a", ti: 3, orig: 2 * time.Second, rewrite: true},
		{name: "BRPOP fraction", args: []string{"BRPOP", "k", "2.5"}, key: "k", ti: 2, orig: 2500 * time.Millisecond, rewrite: true},
		{name: "BLPOP leading dot", args: []string{"BLPOP", "k", ".8"}, key: "k", ti: 2, orig: 800 * time.Millisecond, rewrite: true},
		{name: "BLMOVE", args: []string{"BLMOVE", "{k}a", "{k}b", "LEFT", "RIGHT", "2"}, key: "{k}a", ti: 5, orig: 2 * time.Second, rewrite: true},
		{name: "BRPOPLPUSH", args: []string{"BRPOPLPUSH", "{k}a", "{k}b", "2"}, key: "{k}a", ti: 3, orig: 2 * time.Second, rewrite: true},
		{name: "BLMPOP", args: []string{"BLMPOP", "2", "2", "{k}a", "{k}b", "LEFT", "COUNT", "3"}, key: "{k}a", ti: 1, orig: 2 * time.Second, rewrite: true},
		{name: "BLMPOP fraction", args: []string{"BLMPOP", "1.75", "1", "k", "RIGHT"}, key: "k", ti: 1, orig: 1750 * time.Millisecond, rewrite: true},
		{name: "XREAD BLOCK", args: []string{"XREAD", "COUNT", "1", "BLOCK", "2000", "STREAMS", "k", "$"}, key: "k", ti: 4, ms: true, orig: 2 * time.Second, rewrite: true},
		{name: "XREADGROUP BLOCK", args: []string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "2000", "STREAMS", "k", ">"}, key: "k", ti: 5, ms: true, orig: 2 * time.Second, rewrite: true},
		{name: "BLPOP 0 stays 0", args: []string{"BLPOP", "k", "0"}, key: "k", ti: 2},
		{name: "XREAD BLOCK 0 stays 0", args: []string{"XREAD", "BLOCK", "0", "STREAMS", "k", "$"}, key: "k", ti: 2, ms: true},
		{name: "an exponent is not rewritten", args: []string{"BLPOP", "k", "2e0"}, key: "k", ti: 2},
		{name: "BLOCK with a leading zero is not rewritten", args: []string{"XREAD", "BLOCK", "02000", "STREAMS", "k", "$"}, key: "k", ti: 2, ms: true},
		{name: "BLPOP timed out before MOVED", args: []string{"BLPOP", "k", "0.2"}, key: "k", timeout: true},
		{name: "BLMOVE timed out before MOVED, RESP3", args: []string{"BLMOVE", "{k}a", "{k}b", "LEFT", "RIGHT", "0.2"}, key: "{k}a", proto: 3, timeout: true},
		{name: "XREAD timed out before MOVED", args: []string{"XREAD", "BLOCK", "200", "STREAMS", "k", "$"}, key: "k", timeout: true},
		{name: "BLPOP after TRYAGAIN", args: []string{"BLPOP", "k", "2"}, key: "k", ti: 2, orig: 2 * time.Second, rewrite: true, tryAgain: 3},
		{name: "BLPOP 0 and TRYAGAIN forever", args: []string{"BLPOP", "k", "0"}, key: "k", tryAgain: -1, budget: 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got [][]string // blocking commands the new owner got
			b, _ := redirector(t, func(_ int, args [][]byte) string {
				switch {
				case strings.EqualFold(string(args[0]), "client"):
					return ":8\r\n"
				case !blocks(args):
					return "*-1\r\n"
				}
				cmd := make([]string, len(args))
				for i, a := range args {
					cmd[i] = string(a)
				}
				mu.Lock()
				got = append(got, cmd)
				mu.Unlock()
				return "+served\r\n"
			})
			tryAgains := 0
			a, _ := redirector(t, func(_ int, args [][]byte) string {
				switch {
				case strings.EqualFold(string(args[0]), "client"):
					return ":7\r\n"
				case !blocks(args):
					// The forms without blocking find nothing.
					return "*-1\r\n"
				}
				mu.Lock()
				busy := tc.tryAgain < 0 || tryAgains < tc.tryAgain
				if busy {
					tryAgains++
				}
				mu.Unlock()
				if busy {
					return "-" + tryAgainText + "\r\n"
				}
				time.Sleep(held)
				return fmt.Sprintf("-MOVED %d %s\r\n", slots.SlotString(tc.key), b)
			})
			topo, err := proxy.NewStaticTopology([]string{a})
			if err != nil {
				t.Fatal(err)
			}
			_, addr, _ := proxytest.StartProxy(t, proxy.Options{Topology: topo, RedirectTimeout: tc.budget})
			proto := max(tc.proto, 2)
			c := dial(t, addr, proto)
			start := time.Now()
			v := do(t, c, tc.args...)
			spent := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if tc.tryAgain < 0 {
				want(t, "reply", v, difftest.Err(tryAgainText))
				if spent < tc.budget || tryAgains < 3 || len(got) != 0 {
					t.Errorf("TRYAGAIN after %v, %d tries, the new owner got %q", spent, tryAgains, got)
				}
				return
			}
			if tc.timeout {
				nullKind := difftest.NullArray
				if proto == 3 {
					nullKind = difftest.Null
				}
				want(t, "reply", v, difftest.Value{Kind: nullKind})
				if len(got) != 0 {
					t.Errorf("the new owner got %q", got)
				}
				return
			}
			want(t, "reply", v, difftest.Simple("served"))
			if len(got) != 1 {
				t.Fatalf("the new owner got %q", got)
			}
			for i, arg := range got[0] {
				if i == tc.ti && tc.rewrite {
					continue
				}
				if arg != tc.args[i] {
					t.Errorf("argument %d = %q, want %q (all: %q)", i, arg, tc.args[i], got[0])
				}
			}
			if !tc.rewrite {
				return
			}
			unit := time.Second
			if tc.ms {
				unit = time.Millisecond
			}
			f, err := strconv.ParseFloat(got[0][tc.ti], 64)
			if err != nil {
				t.Fatalf("timeout argument %q: %v", got[0][tc.ti], err)
			}
			left := time.Duration(f * float64(unit))
			// At most what is left after the hold (rounded up to the
			// millisecond), at least what is left after the whole call.
			if hi, lo := tc.orig-held+time.Millisecond, tc.orig-spent; left > hi || left < lo {
				t.Errorf("timeout sent again %v (%q), want %v to %v", left, got[0][tc.ti], lo, hi)
			}
		})
	}
}

// movingPair is two shardgate nodes sharing an ownership table the test
// changes (slots 0-8191 on the first, the rest on the second at first),
// and a proxy whose cluster view keeps the first table: it learns of
// moves from the nodes' MOVED.
type movingPair struct {
	tab   *ownerTable
	nodes []string
	addr  string // the proxy's
}

func startMovingPair(t *testing.T) *movingPair {
	t.Helper()
	m := &movingPair{tab: &ownerTable{ch: make(chan struct{})}}
	for range 2 {
		m.nodes = append(m.nodes, freeAddr(t))
	}
	m.tab.set(0, 8191, m.nodes[0])
	m.tab.set(8192, slots.Count-1, m.nodes[1])
	for _, a := range m.nodes {
		proxytest.StartNodeAt(t, a, node.Options{Ownership: &nodeOwnership{t: m.tab, self: a}})
	}
	self := proxytest.ID(100)
	members := []cluster.Member{
		proxyMember(self, "127.0.0.1:7379", cluster.StateAlive),
		nodeMember(proxytest.ID(1), m.nodes[0], cluster.StateAlive),
		nodeMember(proxytest.ID(2), m.nodes[1], cluster.StateAlive),
	}
	var vt proxytest.Slots
	vt.Assign(0, 8191, proxytest.ID(1), 1)
	vt.Assign(8192, slots.Count-1, proxytest.ID(2), 1)
	_, m.addr, _ = proxytest.StartProxy(t, proxy.Options{Cluster: proxytest.NewSource(proxytest.View(self, members, &vt))})
	return m
}

// TestMigrationBlockedMovedMidWait: a client blocked on the first node
// has its slot moved to the second 600ms into its wait: it blocks there
// with the rest of its timeout, is served by a push there, and otherwise
// times out when its own timeout says (about 2s after it was sent, not
// 2.8s). The timeouts leave the re-issued command 1.2s on the new owner,
// so that a loaded machine still sees it blocked there.
func TestMigrationBlockedMovedMidWait(t *testing.T) {
	const moveAt = 800 * time.Millisecond
	m := startMovingPair(t)
	c := dial(t, m.addr, 2)
	for i, tc := range []struct {
		name string
		cmd  func(key string) []string
		push func(key string) []string // nil: nothing is pushed
		want func(key string) difftest.Value
	}{{
		name: "BLPOP served by a push on the new owner",
		cmd:  func(k string) []string { return []string{"BLPOP", k, "5"} },
		push: func(k string) []string { return []string{"RPUSH", k, "e"} },
		want: func(k string) difftest.Value { return arr(k, "e") },
	}, {
		name: "XREAD BLOCK served by an XADD on the new owner",
		cmd:  func(k string) []string { return []string{"XREAD", "BLOCK", "5000", "STREAMS", k, "$"} },
		push: func(k string) []string { return []string{"XADD", k, "1-1", "f", "v"} },
		want: func(k string) difftest.Value {
			return difftest.ArrayOf(difftest.ArrayOf(difftest.BulkOf(k),
				difftest.ArrayOf(difftest.ArrayOf(difftest.BulkOf("1-1"), arr("f", "v")))))
		},
	}, {
		name: "BLPOP 2 times out at 2s",
		cmd:  func(k string) []string { return []string{"BLPOP", k, "2"} },
	}, {
		name: "BLMOVE 2 times out at 2s",
		cmd: func(k string) []string {
			return []string{"BLMOVE", "{" + k + "}a", "{" + k + "}b", "LEFT", "RIGHT", "2"}
		},
	}, {
		name: "BLMPOP 2 times out at 2s",
		cmd:  func(k string) []string { return []string{"BLMPOP", "2", "1", k, "LEFT"} },
	}, {
		name: "XREAD BLOCK 2000 times out at 2s",
		cmd:  func(k string) []string { return []string{"XREAD", "BLOCK", "2000", "STREAMS", k, "$"} },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// A slot range of its own, on the first node until moved.
			first := 200 * i
			k := keyIn(fmt.Sprint("m", i, ":"), first, first+199)
			moved := redirects(t, c, "moved")
			blocked := dial(t, m.addr, 2)
			start := time.Now()
			send(t, blocked, tc.cmd(k)...)
			got := receiveAsync(blocked)
			waitBlocked(t, m.nodes[0], 1)
			time.Sleep(moveAt - time.Since(start))
			m.tab.set(first, first+199, m.nodes[1])
			waitBlocked(t, m.nodes[1], 1)
			if tc.push != nil {
				do(t, c, tc.push(k)...)
				want(t, "reply", recvWithin(t, tc.name, got, promptly), tc.want(k))
			} else {
				v := recvWithin(t, tc.name, got, promptly)
				d := time.Since(start)
				want(t, "reply", v, difftest.Value{Kind: difftest.NullArray})
				if d < 2*time.Second || d > 2600*time.Millisecond {
					t.Errorf("timed out after %v, want about 2s (2.8s: the whole timeout again on the new owner)", d)
				}
			}
			if redirects(t, c, "moved") == moved {
				t.Error("nothing was redirected: the test proves nothing")
			}
		})
	}
}
