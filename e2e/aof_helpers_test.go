package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Helpers of the crash test (TestAOFCrash): a standalone node with an
// append-only log that can be killed with SIGKILL and restarted on the
// same port from the same --dir, and a load of blocked consumers served by
// pushes (BLMOVE woken by LPUSH, XREADGROUP BLOCK woken by XADD), the
// writes the node logs as effects rather than as the command that ran.

// crashNode is one standalone `shardgate node --dir` across restarts.
type crashNode struct {
	killable
	dir   string
	addr  string   // fixed after the first start
	extra []string // the flags of every start besides --addr and --dir
}

// crashNodeStartWait bounds a start, the log's replay included.
const crashNodeStartWait = 30 * time.Second

// aofLoadedRE finds the replay's line, with its record and key counts and
// how long it took; aofTornRE the line of a torn tail cut at start.
var (
	aofLoadedRE = regexp.MustCompile(`msg="append-only log loaded" (?:snapshot_keys=\d+ )?records=(\d+) bytes=(\d+) keys=(\d+) took=(\S+)`)
	aofTornRE   = regexp.MustCompile(`msg="aof: cut a torn record off the end of the log.*dropped_bytes=(\d+)`)
)

// startCrashNode starts a node on a free port with its data in dir.
func startCrashNode(t *testing.T, bin, dir string, extra ...string) *crashNode {
	t.Helper()
	n := &crashNode{killable: killable{bin: bin}, dir: dir, addr: "127.0.0.1:0", extra: extra}
	if err := n.start(t); err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	return n
}

// start runs the process once on n's address and waits until it listens
// (it replays its log before it listens) or exits.
func (n *crashNode) start(t *testing.T) error {
	args := append([]string{"node", "--addr", n.addr, "--dir", n.dir}, n.extra...)
	m, err := n.launch(t, args, crashNodeStartWait, "listening", listeningRE)
	if err != nil {
		return err
	}
	n.addr = m[0]
	return nil
}

// kill9 kills the node with SIGKILL and waits for it. It fails the test
// if the node had already exited on its own.
func (n *crashNode) kill9(t *testing.T) {
	t.Helper()
	select {
	case <-n.exited:
		t.Fatalf("the node exited on its own before the kill: %v\n%s", n.proc.ProcessState, n.logText())
	default:
	}
	if err := n.proc.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-n.exited
}

// restart starts the node again with the same flags, port and --dir. A
// port taken meanwhile by another socket is retried for a while.
func (n *crashNode) restart(t *testing.T) {
	t.Helper()
	if err := retryStart(func() error { return n.start(t) }); err != nil {
		t.Fatalf("restarting the node: %v\n%s", err, n.logText())
	}
}

// submatch returns the submatches of the first line that matches re, or
// nil.
func (l *lineLog) submatch(re *regexp.Regexp) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if m := re.FindStringSubmatch(line); m != nil {
			return m
		}
	}
	return nil
}

// logText is every start's log, oldest first.
func (n *crashNode) logText() string { return n.logsText(n.addr) }

// The blocked load: pairs of a consumer blocked on an empty key and a
// producer that wakes it. scaleload's workers never block (one client per
// key group, so nobody would wake them), but a blocked pop served by a
// push is logged as the pop it amounts to (LMOVE, an XREADGROUP with ">")
// rather than as the command that ran, a path of its own to prove.
//
// Each cycle of a pair starts the blocking command on the consumer's
// connection, waits until CLIENT LIST shows the consumer blocked (flag b;
// at most blockedWait), then pushes one job on the producer's connection
// and waits for both replies. A reply that is an error (a broken
// connection, a refused dial while the node is down) makes the command
// ambiguous: it may or may not have happened.

const (
	blockedListPairs   = 2
	blockedStreamPairs = 2
	// blockedWait bounds a cycle's wait for its consumer to block (it
	// does not when the node is down or the key is not empty).
	blockedWait = 100 * time.Millisecond
	// blockedTimeout is the blocking commands' timeout: long enough to be
	// served by the push, short enough that a lost push costs little.
	blockedTimeout = 2 * time.Second
	// blockedGroup and blockedConsumer name the streams' group and reader.
	blockedGroup    = "g"
	blockedConsumer = "c"
)

// outcome of one command of the blocked load.
type blockedOutcome uint8

const (
	blockedAcked blockedOutcome = iota
	blockedAmbiguous
)

// listPair is a queue whose consumer BLMOVEs from src to dst (RIGHT to
// LEFT) while blocked, woken by the producer's LPUSH. Jobs are numbered
// in push order, so with moves always taking the oldest job, LRANGE src
// followed by LRANGE dst is strictly descending whatever happened.
type listPair struct {
	src, dst string
	pushes   map[int]blockedOutcome // job number → its LPUSH
	moved    []int                  // jobs acknowledged by BLMOVE, in order
	ambMoves int                    // BLMOVEs without a reply
	// servedBlocked counts acknowledged BLMOVEs seen blocked that returned
	// the job pushed after that: served by the push while blocked.
	servedBlocked int
	mismatch      []string // replies that contradicted what was acknowledged
}

// streamPair is a stream whose consumer reads with XREADGROUP BLOCK ">"
// while blocked, woken by the producer's XADD, and XACKs some of what it
// got.
type streamPair struct {
	key       string
	added     map[string]string         // acknowledged XADD: value → id
	ambAdded  map[string]bool           // values of XADDs without a reply
	delivered []string                  // ids acknowledged by XREADGROUP, in order
	acks      map[string]blockedOutcome // XACKed ids
	ambReads  int
	ackNext   int // the index in delivered of the next entry to XACK
	// servedBlocked counts acknowledged XREADGROUPs seen blocked that
	// returned the entry added after that.
	servedBlocked int
	mismatch      []string
}

// blockedLoad runs the pairs until stopped.
type blockedLoad struct {
	rdb     *redis.Client // for setup and the final check
	lists   []*listPair
	streams []*streamPair
	stop    atomic.Bool
	wg      sync.WaitGroup
	clients []*redis.Client
	cycles  atomic.Int64
}

// blockedClient is a client of one connection; name, if set, is the
// connection's name (CLIENT SETNAME at every dial).
func blockedClient(addr, name string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ClientName: name, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 3 * time.Second, WriteTimeout: time.Second, PoolSize: 1, DisableIdentity: true})
}

// pairClients are a pair's consumer and producer.
type pairClients struct {
	cons, prod *redis.Client
	name       string // the consumer's connection name
}

func (b *blockedLoad) newPair(addr, name string) *pairClients {
	pc := &pairClients{cons: blockedClient(addr, name), prod: blockedClient(addr, ""), name: name}
	b.clients = append(b.clients, pc.cons, pc.prod)
	return pc
}

// waitBlocked polls CLIENT LIST until the consumer shows as blocked, for
// at most blockedWait, and reports whether it did.
func (pc *pairClients) waitBlocked(ctx context.Context) bool {
	deadline := time.Now().Add(blockedWait)
	for {
		list, err := pc.prod.ClientList(ctx).Result()
		if err != nil {
			return false
		}
		for _, line := range strings.Split(list, "\n") {
			var name, flags string
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "name":
					name = v
				case "flags":
					flags = v
				}
			}
			if name == pc.name && strings.Contains(flags, "b") {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// startBlockedLoad creates the streams' groups (acknowledged before the
// load starts) and starts the pairs; prefix makes the keys.
func startBlockedLoad(ctx context.Context, addr, prefix string) (*blockedLoad, error) {
	b := &blockedLoad{rdb: redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 3 * time.Second, WriteTimeout: time.Second, DisableIdentity: true})}
	for i := range blockedListPairs {
		tag := "{" + prefix + ".l" + strconv.Itoa(i) + "}"
		b.lists = append(b.lists, &listPair{src: tag + ":src", dst: tag + ":dst", pushes: map[int]blockedOutcome{}})
	}
	for i := range blockedStreamPairs {
		key := "{" + prefix + ".s" + strconv.Itoa(i) + "}:s"
		if err := b.rdb.XGroupCreateMkStream(ctx, key, blockedGroup, "$").Err(); err != nil {
			b.rdb.Close()
			return nil, fmt.Errorf("XGROUP CREATE %s: %w", key, err)
		}
		b.streams = append(b.streams, &streamPair{key: key, added: map[string]string{}, ambAdded: map[string]bool{},
			acks: map[string]blockedOutcome{}})
	}
	for i, p := range b.lists {
		pc := b.newPair(addr, prefix+"-list"+strconv.Itoa(i))
		b.wg.Go(func() { b.runList(p, pc) })
	}
	for i, p := range b.streams {
		pc := b.newPair(addr, prefix+"-stream"+strconv.Itoa(i))
		b.wg.Go(func() { b.runStream(p, pc) })
	}
	return b, nil
}

// finish stops the pairs and waits for their last cycle. Idempotent.
func (b *blockedLoad) finish() {
	if b.stop.Swap(true) {
		return
	}
	b.wg.Wait()
	for _, c := range b.clients {
		c.Close()
	}
}

// pause ends a cycle: a millisecond, so that the pairs leave most of the
// node to scaleload's load, or 20 after a failed cycle, so that a node
// that is down is not dialed in a tight loop.
func (b *blockedLoad) pause(failed bool) {
	if failed {
		time.Sleep(20 * time.Millisecond)
	} else {
		time.Sleep(time.Millisecond)
	}
}

func (b *blockedLoad) runList(p *listPair, pc *pairClients) {
	ctx := context.Background()
	for job := 1; !b.stop.Load(); job++ {
		type reply struct {
			v   string
			err error
		}
		got := make(chan reply, 1)
		go func() {
			v, err := pc.cons.BLMove(ctx, p.src, p.dst, "RIGHT", "LEFT", blockedTimeout).Result()
			got <- reply{v, err}
		}()
		blocked := pc.waitBlocked(ctx)
		pushErr := pc.prod.LPush(ctx, p.src, strconv.Itoa(job)).Err()
		p.pushes[job] = blockedAcked
		if pushErr != nil {
			p.pushes[job] = blockedAmbiguous
		}
		r := <-got
		b.cycles.Add(1)
		switch {
		case r.err == redis.Nil:
		case r.err != nil:
			p.ambMoves++
		default:
			n, err := strconv.Atoi(r.v)
			switch {
			case err != nil || !hasKey(p.pushes, n):
				p.mismatch = append(p.mismatch, fmt.Sprintf("BLMOVE %s %s returned %q, never pushed", p.src, p.dst, r.v))
			case len(p.moved) > 0 && n <= p.moved[len(p.moved)-1]:
				p.mismatch = append(p.mismatch, fmt.Sprintf("BLMOVE %s %s returned job %d after job %d had been moved: a move was lost",
					p.src, p.dst, n, p.moved[len(p.moved)-1]))
			}
			p.moved = append(p.moved, n)
			if blocked && n == job {
				p.servedBlocked++
			}
		}
		b.pause(pushErr != nil || (r.err != nil && r.err != redis.Nil))
	}
}

func (b *blockedLoad) runStream(p *streamPair, pc *pairClients) {
	ctx := context.Background()
	for n := 1; !b.stop.Load(); n++ {
		type reply struct {
			s   []redis.XStream
			err error
		}
		got := make(chan reply, 1)
		go func() {
			s, err := pc.cons.XReadGroup(ctx, &redis.XReadGroupArgs{Group: blockedGroup, Consumer: blockedConsumer,
				Streams: []string{p.key, ">"}, Count: 10, Block: blockedTimeout}).Result()
			got <- reply{s, err}
		}()
		blocked := pc.waitBlocked(ctx)
		val := strconv.Itoa(n)
		id, addErr := pc.prod.XAdd(ctx, &redis.XAddArgs{Stream: p.key, Values: []string{"v", val}}).Result()
		if addErr != nil {
			p.ambAdded[val] = true
		} else {
			p.added[val] = id
		}
		r := <-got
		b.cycles.Add(1)
		switch {
		case r.err == redis.Nil:
		case r.err != nil:
			p.ambReads++
		default:
			for _, s := range r.s {
				for _, m := range s.Messages {
					if last := len(p.delivered) - 1; last >= 0 && !streamIDLess(p.delivered[last], m.ID) {
						p.mismatch = append(p.mismatch, fmt.Sprintf("XREADGROUP %s > delivered %s after %s: a delivery was lost",
							p.key, m.ID, p.delivered[last]))
					}
					p.delivered = append(p.delivered, m.ID)
					if v, _ := m.Values["v"].(string); blocked && v == val && m.ID == id {
						p.servedBlocked++
					}
				}
			}
		}
		// Every third cycle acknowledges the oldest delivered entry not
		// yet acknowledged, so the pending list both grows and shrinks.
		if n%3 == 0 && p.ackNext < len(p.delivered) {
			d := p.delivered[p.ackNext]
			p.ackNext++
			p.acks[d] = blockedAcked
			switch n, err := pc.prod.XAck(ctx, p.key, blockedGroup, d).Result(); {
			case err != nil:
				p.acks[d] = blockedAmbiguous
			case n != 1:
				p.mismatch = append(p.mismatch, fmt.Sprintf("XACK %s %s %s acknowledged %d entries, want 1: the delivery was lost",
					p.key, blockedGroup, d, n))
			}
		}
		b.pause(addErr != nil || (r.err != nil && r.err != redis.Nil))
	}
}

// streamIDLess compares two stream ids "ms-seq".
func streamIDLess(a, b string) bool {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	ams, _ := strconv.ParseUint(am, 10, 64)
	bms, _ := strconv.ParseUint(bm, 10, 64)
	if ams != bms {
		return ams < bms
	}
	asq, _ := strconv.ParseUint(as, 10, 64)
	bsq, _ := strconv.ParseUint(bs, 10, 64)
	return asq < bsq
}

// blockedFigures sums what the pairs did, for the log.
type blockedFigures struct {
	cycles, moves, servedMoves, ambMoves, reads, servedReads, ambReads int
}

func (b *blockedLoad) figures() blockedFigures {
	f := blockedFigures{cycles: int(b.cycles.Load())}
	for _, p := range b.lists {
		f.moves += len(p.moved)
		f.servedMoves += p.servedBlocked
		f.ambMoves += p.ambMoves
	}
	for _, p := range b.streams {
		f.reads += len(p.delivered)
		f.servedReads += p.servedBlocked
		f.ambReads += p.ambReads
	}
	return f
}

// check reads every pair's keys back (after finish) and returns what
// contradicts the acknowledged commands.
func (b *blockedLoad) check(ctx context.Context) ([]string, error) {
	var problems []string
	for _, p := range b.lists {
		probs, err := p.check(ctx, b.rdb)
		if err != nil {
			return nil, err
		}
		problems = append(append(problems, p.mismatch...), probs...)
	}
	for _, p := range b.streams {
		probs, err := p.check(ctx, b.rdb)
		if err != nil {
			return nil, err
		}
		problems = append(append(problems, p.mismatch...), probs...)
	}
	return problems, nil
}

// check: src then dst strictly descending (no job twice, moves in FIFO
// order), only pushed jobs, every acknowledged push somewhere, every
// acknowledged move in dst.
func (p *listPair) check(ctx context.Context, rdb *redis.Client) ([]string, error) {
	src, err := rdb.LRange(ctx, p.src, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("LRANGE %s: %w", p.src, err)
	}
	dst, err := rdb.LRange(ctx, p.dst, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("LRANGE %s: %w", p.dst, err)
	}
	var probs []string
	bad := func(f string, a ...any) {
		probs = append(probs, fmt.Sprintf("queue %s→%s: ", p.src, p.dst)+fmt.Sprintf(f, a...))
	}
	inDst := map[int]bool{}
	present := map[int]bool{}
	prev := -1
	for i, e := range append(slices.Clone(src), dst...) {
		n, err := strconv.Atoi(e)
		if _, pushed := p.pushes[n]; err != nil || !pushed {
			bad("holds %q, never pushed", e)
			continue
		}
		if prev >= 0 && n >= prev {
			bad("job %d follows job %d (src %v, dst %v): not in push order, or twice", n, prev, src, dst)
		}
		prev = n
		present[n] = true
		if i >= len(src) {
			inDst[n] = true
		}
	}
	for n, o := range p.pushes {
		if o == blockedAcked && !present[n] {
			bad("lost job %d, whose LPUSH was acknowledged", n)
		}
	}
	for _, n := range p.moved {
		if !inDst[n] {
			bad("job %d is not in %s, but its BLMOVE was acknowledged", n, p.dst)
		}
	}
	return probs, nil
}

// check: the entries are the acknowledged XADDs (with their ids) and
// possibly the ambiguous ones; the group's last delivered id covers every
// acknowledged delivery; every acknowledged delivery not acknowledged by
// an XACK is pending for the consumer with one delivery, no acknowledged
// XACK's entry is pending, and nothing pending is outside the stream.
func (p *streamPair) check(ctx context.Context, rdb *redis.Client) ([]string, error) {
	entries, err := rdb.XRange(ctx, p.key, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("XRANGE %s: %w", p.key, err)
	}
	groups, err := rdb.XInfoGroups(ctx, p.key).Result()
	if err != nil {
		return nil, fmt.Errorf("XINFO GROUPS %s: %w", p.key, err)
	}
	pending, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: p.key, Group: blockedGroup,
		Start: "-", End: "+", Count: 1 << 20}).Result()
	if err != nil {
		return nil, fmt.Errorf("XPENDING %s: %w", p.key, err)
	}
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, "stream "+p.key+": "+fmt.Sprintf(f, a...)) }
	ids := map[string]bool{}
	seen := map[string]bool{}
	for _, e := range entries {
		ids[e.ID] = true
		v, _ := e.Values["v"].(string)
		switch id, acked := p.added[v]; {
		case seen[v]:
			bad("value %q twice", v)
		case acked && id != e.ID:
			bad("value %q has id %s, XADD replied %s", v, e.ID, id)
		case !acked && !p.ambAdded[v]:
			bad("entry %s %q was never added", e.ID, v)
		}
		seen[v] = true
	}
	for v, id := range p.added {
		if !seen[v] {
			bad("lost entry %s %q, whose XADD was acknowledged", id, v)
		}
	}
	if len(groups) != 1 || groups[0].Name != blockedGroup {
		bad("groups %+v, want just %q", groups, blockedGroup)
	} else if last := len(p.delivered) - 1; last >= 0 && streamIDLess(groups[0].LastDeliveredID, p.delivered[last]) {
		bad("last delivered id %s, but XREADGROUP delivered %s", groups[0].LastDeliveredID, p.delivered[last])
	}
	pend := map[string]redis.XPendingExt{}
	for _, pe := range pending {
		pend[pe.ID] = pe
		switch {
		case !ids[pe.ID]:
			bad("pending %s is not in the stream", pe.ID)
		case pe.Consumer != blockedConsumer || pe.RetryCount != 1:
			bad("pending %s: consumer %q, %d deliveries; want %q, 1", pe.ID, pe.Consumer, pe.RetryCount, blockedConsumer)
		case hasKey(p.acks, pe.ID) && p.acks[pe.ID] == blockedAcked:
			bad("pending %s, whose XACK was acknowledged", pe.ID)
		}
		if len(groups) == 1 && streamIDLess(groups[0].LastDeliveredID, pe.ID) {
			bad("pending %s beyond the last delivered id %s", pe.ID, groups[0].LastDeliveredID)
		}
	}
	for _, id := range p.delivered {
		if _, acked := p.acks[id]; !acked {
			if _, ok := pend[id]; !ok {
				bad("delivered %s is not pending, but its XREADGROUP was acknowledged and it was never XACKed", id)
			}
		}
	}
	return probs, nil
}

func hasKey[K comparable, V any](m map[K]V, k K) bool { _, ok := m[k]; return ok }
