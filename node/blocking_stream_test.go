package node_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestStreamBlockStress races producers (XADD, alone or a few in a
// transaction) on two streams against consumers of one group (XREADGROUP
// BLOCK with short timeouts over both streams, COUNT 1-3, then XACK) and
// plain readers (XREAD BLOCK from their last seen ids), while a chaos
// client keeps CLIENT UNBLOCKing consumers. Every entry must reach the
// group exactly once (no entry taken by a reader that timed out or was
// unblocked, none twice) and every plain reader must see every entry of
// each stream once, in order. Nothing stays pending or blocked.
func TestStreamBlockStress(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	const (
		producers = 4
		perProd   = 250
		consumers = 6
		readers   = 2
		total     = producers * perProd
	)
	keys := []string{"{s}a", "{s}b"}
	dial := func() *difftest.Conn { return connDial(t, addr, 2) }
	setup := dial()
	for _, k := range keys {
		if v, err := setup.DoStrings("XGROUP", "CREATE", k, "g", "$", "MKSTREAM"); err != nil || v.IsError() {
			t.Fatalf("XGROUP CREATE: %v %v", v, err)
		}
	}

	var delivered atomic.Int64
	var mu sync.Mutex
	got := map[string]int{} // entry value -> deliveries to the group
	errs := make(chan error, producers+consumers+readers+1)
	var wg sync.WaitGroup

	var idList []int64
	for i := range consumers {
		c := dial()
		v, err := c.DoStrings("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		idList = append(idList, v.Int)
		if i%2 == 1 {
			c.DoStrings("HELLO", "3")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 5))
			name := fmt.Sprintf("c%d", i)
			for delivered.Load() < total {
				count := fmt.Sprint(1 + rng.IntN(3))
				timeout := fmt.Sprint(5 + rng.IntN(30))
				v, err := c.DoStrings("XREADGROUP", "GROUP", "g", name, "COUNT", count, "BLOCK", timeout,
					"STREAMS", keys[0], keys[1], ">", ">")
				if err != nil {
					errs <- err
					return
				}
				if isNullReply(v) || (v.IsError() && strings.HasPrefix(string(v.Str), "UNBLOCKED client unblocked")) {
					continue
				}
				streams, err := streamsOf(v)
				if err != nil {
					errs <- fmt.Errorf("XREADGROUP: %v", err)
					return
				}
				for key, entries := range streams {
					ack := []string{"XACK", key, "g"}
					for _, e := range entries {
						mu.Lock()
						got[e.val]++
						mu.Unlock()
						delivered.Add(1)
						ack = append(ack, e.id)
					}
					if v, err := c.DoStrings(ack...); err != nil || v.Int != int64(len(entries)) {
						errs <- fmt.Errorf("%q: %v %v", ack, v, err)
						return
					}
				}
			}
		}()
	}

	// Plain readers: every entry of each stream, once, in id order.
	seen := make([]map[string][]string, readers)
	for r := range readers {
		c := dial()
		seen[r] = map[string][]string{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := []string{"0", "0"}
			n := 0
			for n < total {
				v, err := c.DoStrings("XREAD", "BLOCK", "50", "STREAMS", keys[0], keys[1], last[0], last[1])
				if err != nil {
					errs <- err
					return
				}
				if isNullReply(v) {
					continue
				}
				streams, err := streamsOf(v)
				if err != nil {
					errs <- fmt.Errorf("XREAD: %v", err)
					return
				}
				for key, entries := range streams {
					for _, e := range entries {
						seen[r][key] = append(seen[r][key], e.val)
						n++
					}
					last[slicesIndex(keys, key)] = entries[len(entries)-1].id
				}
			}
		}()
	}

	for p := range producers {
		c := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 13))
			for n := 0; n < perProd; {
				k := min(1+rng.IntN(3), perProd-n)
				if k > 1 {
					c.DoStrings("MULTI")
				}
				for range k {
					v, err := c.DoStrings("XADD", keys[rng.IntN(len(keys))], "*", "v", fmt.Sprintf("p%d-%d", p, n))
					if err != nil || v.IsError() {
						errs <- fmt.Errorf("XADD: %v %v", v, err)
						return
					}
					n++
				}
				if k > 1 {
					if v, err := c.DoStrings("EXEC"); err != nil || len(v.Elems) != k {
						errs <- fmt.Errorf("EXEC: %v %v", v, err)
						return
					}
				}
				if rng.IntN(2) == 0 {
					time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond) // let consumers block
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
			args := []string{"CLIENT", "UNBLOCK", fmt.Sprint(idList[rng.IntN(len(idList))])}
			if rng.IntN(2) == 0 {
				args = append(args, "ERROR")
			}
			if _, err := chaos.DoStrings(args...); err != nil {
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
	case <-time.After(90 * time.Second):
		t.Fatalf("stuck: %d of %d entries delivered", delivered.Load(), total)
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
			if e := fmt.Sprintf("p%d-%d", p, n); got[e] != 1 {
				t.Errorf("entry %s delivered %d times", e, got[e])
			}
		}
	}
	if len(got) != total {
		t.Errorf("%d distinct entries delivered, want %d", len(got), total)
	}
	c := dial()
	for _, k := range keys {
		v, err := c.DoStrings("XRANGE", k, "-", "+")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range v.Elems {
			want = append(want, string(e.Elems[1].Elems[1].Str))
		}
		for r := range readers {
			if strings.Join(seen[r][k], " ") != strings.Join(want, " ") {
				t.Errorf("reader %d saw %d entries of %s, not the stream's %d in order", r, len(seen[r][k]), k, len(want))
			}
		}
		if v, err := c.DoStrings("XPENDING", k, "g"); err != nil || v.Elems[0].Int != 0 {
			t.Errorf("XPENDING %s g: %v %v", k, v, err)
		}
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

type streamEntry struct{ id, val string }

// streamsOf reads an XREAD/XREADGROUP reply (RESP2 array of [key,
// entries] or RESP3 map) whose entries have one field: key -> entries.
func streamsOf(v difftest.Value) (map[string][]streamEntry, error) {
	out := map[string][]streamEntry{}
	var pairs [][2]difftest.Value
	switch v.Kind {
	case difftest.Array:
		for _, kv := range v.Elems {
			if kv.Kind != difftest.Array || len(kv.Elems) != 2 {
				return nil, fmt.Errorf("bad element %s", kv)
			}
			pairs = append(pairs, [2]difftest.Value{kv.Elems[0], kv.Elems[1]})
		}
	case difftest.Map:
		for i := 0; i+1 < len(v.Elems); i += 2 {
			pairs = append(pairs, [2]difftest.Value{v.Elems[i], v.Elems[i+1]})
		}
	default:
		return nil, fmt.Errorf("unexpected reply %s", v)
	}
	for _, p := range pairs {
		key := string(p[0].Str)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %s twice", key)
		}
		if len(p[1].Elems) == 0 {
			return nil, fmt.Errorf("no entries for %s in %s", key, v)
		}
		for _, e := range p[1].Elems {
			if len(e.Elems) != 2 || len(e.Elems[1].Elems) != 2 {
				return nil, fmt.Errorf("bad entry %s", e)
			}
			out[key] = append(out[key], streamEntry{string(e.Elems[0].Str), string(e.Elems[1].Elems[1].Str)})
		}
	}
	return out, nil
}

func slicesIndex(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// TestStreamGroupWakeAsksOnlyTheServed: with n consumers of one group
// blocked on a stream, each XADD serves one of them; whether a client has
// gone (a system call) is asked only of the one about to be served, not
// of every blocked consumer at every XADD (n² questions, which made 4000
// consumers take 8 s to serve against redis-server's 0.5).
func TestStreamGroupWakeAsksOnlyTheServed(t *testing.T) {
	srv, addr, _ := nodetest.Start(t, node.Options{}, nil)
	const n = 200
	ctl := connDial(t, addr, 2)
	if v, err := ctl.DoStrings("XGROUP", "CREATE", "st", "g", "$", "MKSTREAM"); err != nil || v.IsError() {
		t.Fatalf("XGROUP CREATE: %v %v", v, err)
	}
	consumers := make([]*difftest.Conn, n)
	for i := range consumers {
		consumers[i] = connDial(t, addr, 2)
		if err := consumers[i].Send([]byte("XREADGROUP"), []byte("GROUP"), []byte("g"), []byte(fmt.Sprint("c", i)),
			[]byte("BLOCK"), []byte("0"), []byte("STREAMS"), []byte("st"), []byte(">")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := ctl.DoStrings("INFO", "clients")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(v.Str), fmt.Sprintf("blocked_clients:%d\r\n", n)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers not all blocked:\n%s", v.Str)
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := node.PeerChecksForTest(srv)
	for range n {
		if err := ctl.Send([]byte("XADD"), []byte("st"), []byte("*"), []byte("f"), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if v, err := ctl.Receive(); err != nil || v.IsError() {
			t.Fatalf("XADD: %v %v", v, err)
		}
	}
	for i, c := range consumers {
		if v, err := c.Receive(); err != nil || v.IsError() || isNullReply(v) {
			t.Fatalf("consumer %d: %v %v", i, v, err)
		}
	}
	if asked := node.PeerChecksForTest(srv) - before; asked > 2*n {
		t.Errorf("serving %d consumers asked %d times whether a client had gone, want at most %d", n, asked, 2*n)
	}
}
