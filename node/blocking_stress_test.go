package node_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestBlockingStress races producers (LPUSH of 1-3 elements) against
// consumers (BRPOP over three keys, BLMOVE into a done list) with short
// timeouts, while a chaos client keeps CLIENT UNBLOCKing consumers. Every
// element pushed must be received exactly once: no loss (an element
// taken by a waiter that timed out or was unblocked) and no duplicate.
func TestBlockingStress(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	const (
		producers = 4
		perProd   = 300
		consumers = 6
		total     = producers * perProd
	)
	keys := []string{"{s}q0", "{s}q1", "{s}q2"}
	dial := func() *difftest.Conn { return connDial(t, addr, 2) }

	var received atomic.Int64
	var mu sync.Mutex
	got := map[string]int{}    // element -> times received
	moved := map[string]bool{} // received through BLMOVE
	note := func(elem string, viaMove bool) {
		mu.Lock()
		got[elem]++
		if viaMove {
			moved[elem] = true
		}
		mu.Unlock()
		received.Add(1)
	}

	errs := make(chan error, producers+consumers+1)
	var wg sync.WaitGroup
	ids := make(chan int64, consumers)
	for i := range consumers {
		c := dial()
		v, err := c.DoStrings("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		ids <- v.Int
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for received.Load() < total {
				timeout := fmt.Sprintf("0.0%d", 1+rng.IntN(4))
				if i%2 == 0 {
					v, err := c.DoStrings("BRPOP", keys[0], keys[1], keys[2], timeout)
					if err != nil {
						errs <- err
						return
					}
					if v.Kind == difftest.Array && len(v.Elems) == 2 {
						note(string(v.Elems[1].Str), false)
					} else if !isNullReply(v) {
						errs <- fmt.Errorf("BRPOP: %s", v)
						return
					}
					continue
				}
				src := keys[rng.IntN(len(keys))]
				v, err := c.DoStrings("BLMOVE", src, "{s}done", "RIGHT", "LEFT", timeout)
				if err != nil {
					errs <- err
					return
				}
				switch {
				case v.Kind == difftest.Bulk:
					note(string(v.Str), true)
				case !isNullReply(v):
					errs <- fmt.Errorf("BLMOVE: %s", v)
					return
				}
			}
		}()
	}
	close(ids)
	var idList []int64
	for id := range ids {
		idList = append(idList, id)
	}

	for p := range producers {
		c := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 11))
			for n := 0; n < perProd; {
				k := min(1+rng.IntN(3), perProd-n)
				args := []string{"LPUSH", keys[rng.IntN(len(keys))]}
				for range k {
					args = append(args, fmt.Sprintf("p%d-%d", p, n))
					n++
				}
				if v, err := c.DoStrings(args...); err != nil || v.Kind != difftest.Integer {
					errs <- fmt.Errorf("LPUSH: %v %v", v, err)
					return
				}
				if rng.IntN(2) == 0 {
					// let the consumers block, so most elements go to waiters
					time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
				}
			}
		}()
	}

	chaos := dial()
	stop := make(chan struct{})
	var chaosWG sync.WaitGroup
	chaosWG.Add(1)
	go func() {
		defer chaosWG.Done()
		rng := rand.New(rand.NewPCG(3, 3))
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := idList[rng.IntN(len(idList))]
			if _, err := chaos.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(id)); err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
	}()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(60 * time.Second):
		t.Fatalf("stuck: %d of %d elements received", received.Load(), total)
	}
	close(stop)
	chaosWG.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	for p := range producers {
		for n := range perProd {
			e := fmt.Sprintf("p%d-%d", p, n)
			if got[e] != 1 {
				t.Errorf("element %s received %d times", e, got[e])
			}
		}
	}
	if len(got) != total {
		t.Errorf("%d distinct elements received, want %d", len(got), total)
	}
	c := dial()
	v, err := c.DoStrings("LRANGE", "{s}done", "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Elems) != len(moved) {
		t.Errorf("done list has %d elements, BLMOVE replied %d", len(v.Elems), len(moved))
	}
	for _, e := range v.Elems {
		if !moved[string(e.Str)] {
			t.Errorf("done list holds %q, which no BLMOVE replied", e.Str)
		}
	}
	v, err = c.DoStrings("EXISTS", keys[0], keys[1], keys[2])
	if err != nil || v.Int != 0 {
		t.Errorf("queues not empty: %v %v", v, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := c.DoStrings("INFO", "clients")
		if blockedLine(string(v.Str)) == "blocked_clients:0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocked clients left: %s", blockedLine(string(v.Str)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isNullReply(v difftest.Value) bool {
	return v.Kind == difftest.NullArray || v.Kind == difftest.NullBulk || v.Kind == difftest.Null
}

func blockedLine(info string) string {
	for len(info) > 0 {
		line := info
		if i := indexCRLF(info); i >= 0 {
			line, info = info[:i], info[i+2:]
		} else {
			info = ""
		}
		if len(line) > 16 && line[:16] == "blocked_clients:" {
			return line
		}
	}
	return ""
}

func indexCRLF(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\r' && s[i+1] == '\n' {
			return i
		}
	}
	return -1
}

// TestBlockingClose: closing the node releases clients blocked forever
// (their connections close) without waiting for a push.
func TestBlockingClose(t *testing.T) {
	_, addr, stop := nodetest.Start(t, node.Options{}, nil)
	var conns []*difftest.Conn
	for range 3 {
		c, err := difftest.Dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Send([]byte("BLMOVE"), []byte("a"), []byte("b"), []byte("LEFT"), []byte("LEFT"), []byte("0")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// BLMOVE a b is CROSSSLOT: the replies come back at once; block for real.
	for _, c := range conns {
		if v, err := c.Receive(); err != nil || !v.IsError() {
			t.Fatalf("BLMOVE a b: %v %v", v, err)
		}
		if err := c.Send([]byte("BLPOP"), []byte("a"), []byte("{a}b"), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	ctl, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := ctl.DoStrings("INFO", "clients")
		if blockedLine(string(v.Str)) == "blocked_clients:3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("clients not blocked: %s", blockedLine(string(v.Str)))
		}
		time.Sleep(2 * time.Millisecond)
	}
	v, err := ctl.DoStrings("CLIENT", "LIST")
	if err != nil || strings.Count(string(v.Str), " flags=b ") != 3 || strings.Count(string(v.Str), " cmd=blpop ") != 3 {
		t.Errorf("CLIENT LIST does not show three clients blocked in BLPOP (flags=b cmd=blpop):\n%s %v", v.Str, err)
	}
	closed := make(chan struct{})
	go func() { stop(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs with blocked clients")
	}
	for _, c := range conns {
		if v, err := c.Receive(); err == nil {
			t.Errorf("blocked client got %s after Close, want the connection closed", v)
		}
	}
}

// TestBlockedQueryBufferLimit: a client that keeps sending while blocked
// is closed once its waiting commands pass QueryBufferLimit (Redis's
// client-query-buffer-limit), and leaves no waiter.
func TestBlockedQueryBufferLimit(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{QueryBufferLimit: 1 << 20}, nil)
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send([]byte("BLPOP"), []byte("q"), []byte("0")); err != nil {
		t.Fatal(err)
	}
	ctl, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	waitInfo := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			v, _ := ctl.DoStrings("INFO", "clients")
			if blockedLine(string(v.Str)) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("want %s, have %s", want, blockedLine(string(v.Str)))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	waitInfo("blocked_clients:1")
	// 2 MB of pipelined SETs (incomplete: never runnable while blocked).
	chunk := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1024\r\n" + strings.Repeat("x", 1024) + "\r\n")
	var big []byte
	for len(big) < 2<<20 {
		big = append(big, chunk...)
	}
	c.NetConn().SetWriteDeadline(time.Now().Add(5 * time.Second))
	c.WriteRaw(big) // the node may close the connection while we write
	waitInfo("blocked_clients:0")
	if v, err := ctl.DoStrings("EXISTS", "k"); err != nil || v.Int != 0 {
		t.Errorf("a command sent while blocked ran: EXISTS k = %v %v", v, err)
	}
}

// TestUnblockAsSoonAsCounted: once INFO counts a client in blocked_clients,
// CLIENT UNBLOCK must find it blocked (Redis blocks a client in one step).
// The node once counted the waiter before publishing it on its client, so
// an UNBLOCK right after the count could answer 0; the window is narrow,
// hence many rounds of a list and a stream wait.
func TestUnblockAsSoonAsCounted(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	dial := func() *difftest.Conn { return connDial(t, addr, 2) }
	waiter, ctl := dial(), dial()
	v, err := waiter.DoStrings("CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(v.Int)
	blockers := [][]string{
		{"BLPOP", "nolist", "0"},
		{"XREAD", "BLOCK", "0", "STREAMS", "nostream", "$"},
	}
	for i := range 400 {
		cmd := blockers[i%len(blockers)]
		if err := waiter.Send(bytesArgs(cmd)...); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			info, err := ctl.DoStrings("INFO", "clients")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(info.Str), "blocked_clients:1\r\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %v never counted as blocked", i, cmd)
			}
		}
		r, err := ctl.DoStrings("CLIENT", "UNBLOCK", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Int != 1 {
			t.Fatalf("round %d: CLIENT UNBLOCK right after blocked_clients:1 answered %s, want 1 (%v)", i, r, cmd)
		}
		if _, err := waiter.Receive(); err != nil {
			t.Fatal(err)
		}
	}
}

func bytesArgs(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestQueryBufferLimitHugeArgument: a request whose argument alone is
// over QueryBufferLimit closes the client without a reply, as Redis does
// (its query buffer holds the argument while it arrives), and does not
// run; one under the limit runs.
func TestQueryBufferLimitHugeArgument(t *testing.T) {
	const limit = 1 << 20
	_, addr, _ := nodetest.Start(t, node.Options{QueryBufferLimit: limit}, nil)
	ok, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if v, _ := ok.DoStrings("SET", "under", strings.Repeat("u", limit-100)); v.Text() != "OK" {
		t.Fatalf("SET under the limit: %v", v)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	go func() {
		fmt.Fprintf(nc, "*3\r\n$3\r\nSET\r\n$4\r\nover\r\n$%d\r\n", 2*limit)
		nc.Write([]byte(strings.Repeat("o", 2*limit) + "\r\n"))
	}()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(nc)
	if len(got) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("a request over the limit got %q (%v), want the connection closed without a reply", got, err)
	}
	if v, _ := ok.DoStrings("EXISTS", "over"); v.Int != 0 {
		t.Errorf("the request over the limit ran: EXISTS over = %v", v)
	}
}

// TestDiffQueryBufferLimit: client-query-buffer-limit closes what Redis
// closes, however the bytes arrive (difftest.QueryBufferScenario).
func TestDiffQueryBufferLimit(t *testing.T) {
	p := difftest.StartTarget(t, func(t testing.TB) (string, func()) {
		_, addr, stop := nodetest.Start(t, node.Options{QueryBufferLimit: difftest.QueryBufLimit}, nil)
		return addr, stop
	})
	difftest.QueryBufferScenario(t, p)
}

// blockOnKeys sends BLPOP over n keys of one slot from c and waits until
// the node counts it blocked.
func blockOnKeys(tb testing.TB, c, ctl *difftest.Conn, n int) {
	tb.Helper()
	args := []string{"BLPOP"}
	for i := range n {
		args = append(args, fmt.Sprintf("{b}k%d", i))
	}
	bs := make([][]byte, 0, len(args)+1)
	for _, a := range append(args, "0") {
		bs = append(bs, []byte(a))
	}
	if err := c.Send(bs...); err != nil {
		tb.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		v, err := ctl.DoStrings("INFO", "clients")
		if err != nil {
			tb.Fatal(err)
		}
		if strings.Contains(v.Text(), "\r\nblocked_clients:1\r\n") {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the BLPOP over %d keys never blocked", n)
		}
	}
}

// TestFlushallWithManyWaitedKeys: FLUSHALL notes every waited key as ready
// (a stream reader's key may be gone); a client waiting on thousands of
// list keys stays blocked through it and is served by the next push.
func TestFlushallWithManyWaitedKeys(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c, ctl := connDial(t, addr, 2), connDial(t, addr, 2)
	blockOnKeys(t, c, ctl, 5000)
	if v, err := ctl.DoStrings("SET", "{b}x", "1"); err != nil || v.Text() != "OK" {
		t.Fatalf("SET: %v %v", v, err)
	}
	if v, err := ctl.DoStrings("FLUSHALL"); err != nil || v.Text() != "OK" {
		t.Fatalf("FLUSHALL: %v %v", v, err)
	}
	if v, err := ctl.DoStrings("RPUSH", "{b}k4321", "x"); err != nil || v.Int != 1 {
		t.Fatalf("RPUSH: %v %v", v, err)
	}
	v, err := c.Receive()
	if err != nil || len(v.Elems) != 2 || v.Elems[0].Text() != "{b}k4321" || v.Elems[1].Text() != "x" {
		t.Fatalf("BLPOP after FLUSHALL and a push: %v %v", v, err)
	}
}

// BenchmarkFlushallWithWaitedKeys is FLUSHALL while one client waits on
// 10,000 keys of a slot that holds a key (each waited key is noted ready
// once, not by a walk of the keys noted before it).
func BenchmarkFlushallWithWaitedKeys(b *testing.B) {
	_, addr, _ := nodetest.Start(b, node.Options{}, nil)
	dialB := func() *difftest.Conn {
		c, err := difftest.DialProto(addr, 2)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	c, ctl := dialB(), dialB()
	blockOnKeys(b, c, ctl, 10000)
	b.ResetTimer()
	for range b.N {
		// A key in the slot: flushing it notes the slot's waited keys.
		if v, err := ctl.DoStrings("SET", "{b}x", "1"); err != nil || v.Text() != "OK" {
			b.Fatalf("SET: %v %v", v, err)
		}
		if v, err := ctl.DoStrings("FLUSHALL"); err != nil || v.Text() != "OK" {
			b.Fatalf("FLUSHALL: %v %v", v, err)
		}
	}
}
