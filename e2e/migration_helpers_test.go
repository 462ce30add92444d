package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/slots"
)

// Helpers of the migration fault test: cluster nodes that can be killed
// with SIGKILL and restarted on the same addresses from the same --dir,
// and readers of what a node says (SHARDGATE STATUS, CLUSTER NODES) and
// of what it persisted (cluster.json, migration.json).

// migNode is one `shardgate node` of a migration test, across restarts.
type migNode struct {
	killable
	name   string
	dir    string
	addr   string        // RESP, fixed after the first start
	gossip string        // gossip, fixed after the first start
	extra  []string      // the flags of every start besides --addr, --gossip and --dir
	id     string        // node id (SHARDGATE STATUS node_id)
	rdb    *redis.Client // to this node, for the test's own queries
}

// migNodeStartWait bounds a node's start: listening and gossiping.
const migNodeStartWait = 15 * time.Second

// startMigNode starts a node with dir and extra flags on free ports.
func startMigNode(t *testing.T, bin, name, dir string, extra ...string) *migNode {
	t.Helper()
	n := &migNode{killable: killable{bin: bin}, name: name, dir: dir, addr: "127.0.0.1:0", gossip: "127.0.0.1:0", extra: extra}
	if err := n.start(t); err != nil {
		t.Fatalf("starting node %s: %v", name, err)
	}
	n.rdb = redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 3 * time.Second, WriteTimeout: time.Second, PoolSize: 2})
	t.Cleanup(func() { n.rdb.Close() })
	return n
}

// start runs the process once, on n's addresses, and waits until it
// listens and gossips or exits.
func (n *migNode) start(t *testing.T) error {
	args := append([]string{"node", "--addr", n.addr, "--gossip", n.gossip, "--dir", n.dir,
		"--gossip-fast", "--gossip-key", clusterKey}, n.extra...)
	if faultNoAOF() {
		args = append(args, "--appendonly=false")
	}
	m, err := n.launch(t, args, migNodeStartWait, "listening and gossiping", listeningRE, gossipStartedRE)
	if err != nil {
		return err
	}
	n.addr, n.gossip = m[0], m[1]
	return nil
}

// find returns the first submatch of re in the lines so far.
func (l *lineLog) find(re *regexp.Regexp) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[len(m)-1], true
		}
	}
	return "", false
}

// kill9 kills the node with SIGKILL (no leave, no flush: its memory is
// gone) and waits for it.
func (n *migNode) kill9(t *testing.T) {
	t.Helper()
	if err := n.proc.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", n.name, err)
	}
	<-n.exited
}

// restart starts the node again with the same flags, addresses and --dir.
// A port taken meanwhile by another socket is retried for a while.
func (n *migNode) restart(t *testing.T) {
	t.Helper()
	if err := retryStart(func() error { return n.start(t) }); err != nil {
		t.Fatalf("restarting node %s: %v", n.name, err)
	}
}

// logText is every start's log, oldest first.
func (n *migNode) logText() string { return n.logsText(n.name + " (" + n.id + ")") }

// nodeStatus is SHARDGATE STATUS as a map of its "field:value" lines.
type nodeStatus map[string]string

func (s nodeStatus) int(field string) int {
	v, _ := strconv.Atoi(s[field])
	return v
}

// status reads the node's SHARDGATE STATUS.
func (n *migNode) status(ctx context.Context) (nodeStatus, error) {
	txt, err := n.rdb.Do(ctx, "SHARDGATE", "STATUS").Text()
	if err != nil {
		return nil, err
	}
	st := nodeStatus{}
	for _, line := range strings.Split(txt, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			st[k] = v
		}
	}
	if st["node_id"] == "" {
		return nil, fmt.Errorf("SHARDGATE STATUS without node_id: %q", txt)
	}
	return st, nil
}

// slotOwners is a slot assignment: the owner's node id per slot ("" for
// none).
type slotOwners [slots.Count]string

// clusterNodes reads the slot assignment from the node's CLUSTER NODES.
func (n *migNode) clusterNodes(ctx context.Context) (*slotOwners, error) {
	txt, err := n.rdb.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(txt)
}

// parseClusterNodes reads the slots of CLUSTER NODES: "<id> <addr>
// <flags> <master> <ping> <pong> <epoch> <link> <slot or range>...".
func parseClusterNodes(txt string) (*slotOwners, error) {
	var o slotOwners
	for _, line := range strings.Split(strings.TrimSpace(txt), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q", line)
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a migrating or importing slot, Redis style
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := a, error(nil)
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || a < 0 || b < a || b >= slots.Count {
				return nil, fmt.Errorf("CLUSTER NODES slots %q in %q", r, line)
			}
			for s := a; s <= b; s++ {
				if o[s] != "" {
					return nil, fmt.Errorf("CLUSTER NODES: slot %d listed twice", s)
				}
				o[s] = f[0]
			}
		}
	}
	return &o, nil
}

// slotClaim is one slot's owner and epoch in a persisted table.
type slotClaim struct {
	owner string
	epoch uint64
}

// persistedTable reads the slot table of the node's cluster.json.
func persistedTable(dir string) (*[slots.Count]slotClaim, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cluster.json"))
	if err != nil {
		return nil, err
	}
	var p struct {
		Slots []struct {
			First uint16 `json:"first"`
			Last  uint16 `json:"last"`
			Owner string `json:"owner"`
			Epoch uint64 `json:"epoch"`
		} `json:"slots"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("cluster.json: %v", err)
	}
	var t [slots.Count]slotClaim
	for _, c := range p.Slots {
		if c.First > c.Last || int(c.Last) >= slots.Count {
			return nil, fmt.Errorf("cluster.json: slots %d-%d", c.First, c.Last)
		}
		for s := int(c.First); s <= int(c.Last); s++ {
			t[s] = slotClaim{c.Owner, c.Epoch}
		}
	}
	return &t, nil
}

// migrationRecord is the part of a node's migration.json the test reads.
type migrationRecord struct {
	Target string   `json:"target"`
	Slots  []uint16 `json:"slots"`
	Phase  string   `json:"phase"`
}

// persistedMigration reads the node's migration.json; nil if none.
func persistedMigration(dir string) (*migrationRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, "migration.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r migrationRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("migration.json: %v", err)
	}
	return &r, nil
}

// keysOn returns the keys the node holds (KEYS: its own data only).
func (n *migNode) keysOn(ctx context.Context) ([]string, error) {
	return n.rdb.Keys(ctx, "*").Result()
}

// The fault test's load: writers that keep writing through a cluster
// client while slots migrate and a node dies, and record what each write
// came to, so that the test can tell a lost write from one that may never
// have happened.

// writeOutcome is what a write's reply says about its effect.
type writeOutcome int

const (
	// writeAcked: a success reply; the write happened.
	writeAcked writeOutcome = iota
	// writeRefused: the write was never sent (a failed dial) or a node
	// refused it with an error reply (MOVED, TRYAGAIN, CLUSTERDOWN once
	// the redirections were used up); it did not happen.
	writeRefused
	// writeAmbiguous: no reply (a timeout, a connection closed by a dying
	// node); the write may or may not have happened.
	writeAmbiguous
)

// outcomeOf classifies a write's error.
func outcomeOf(err error) writeOutcome {
	if err == nil {
		return writeAcked
	}
	var maybe *maybeSent
	if errors.As(err, &maybe) {
		return writeAmbiguous
	}
	var dial *notSent
	if errors.As(err, &dial) {
		return writeRefused
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return writeRefused
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return writeRefused
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) {
		return writeRefused
	}
	return writeAmbiguous
}

// maybeSent is a node client's error after which a command may have
// reached the node. Its text starts with none of the prefixes go-redis
// retries on, and it wraps nothing, so the cluster client returns it
// instead of sending the command again (its retry of EOF and timeouts
// would apply an INCR twice, once uncounted).
type maybeSent struct{ msg string }

func (e *maybeSent) Error() string { return "maybe sent: " + e.msg }

// notSent is a node client's failed dial: the command was not sent. The
// cluster client returns it at once rather than dial the dead node again
// for seconds, so that writers move on to the live nodes' slots while the
// victim is down.
type notSent struct{ msg string }

func (e *notSent) Error() string { return "not sent: " + e.msg }

// noResend is a hook on the cluster client's node clients that turns
// every error that may have followed the command's sending into a
// maybeSent and a failed dial into a notSent. Error replies pass as they
// are: go-redis retries TRYAGAIN and CLUSTERDOWN and follows MOVED, which
// is safe since the command did not run.
type noResend struct{}

func (noResend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (noResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (noResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		var op *net.OpError
		switch {
		case err == nil:
		case errors.As(err, &op) && op.Op == "dial":
			err = &notSent{err.Error()}
			cmd.SetErr(err)
		case outcomeOf(err) == writeAmbiguous:
			err = &maybeSent{err.Error()}
			cmd.SetErr(err)
		}
		return err
	}
}

// slotTags holds, per slot, a hash tag whose keys fall in that slot.
type slotTags [slots.Count]string

func newSlotTags() *slotTags {
	var t slotTags
	left := slots.Count
	for i := 0; left > 0; i++ {
		tag := strconv.Itoa(i)
		if s := slots.SlotString(tag); t[s] == "" {
			t[s] = tag
			left--
		}
	}
	return &t
}

func (t *slotTags) counter(s uint16) string { return "fc:{" + t[s] + "}" }
func (t *slotTags) list(s uint16) string    { return "fl:{" + t[s] + "}" }

const (
	loadWriters = 4
	// loadSpread: the writes that go to no migrating slot pick one of
	// these many slots, spread over all of them, so that each such key
	// gets many writes across the run.
	loadSpread = 256
	// loadOpTimeout bounds one write, its redirections included.
	loadOpTimeout = 5 * time.Second
)

// pushed is one RPUSH: its key, its element ("<writer>:<seq>") and how it
// ended.
type pushed struct {
	key     string
	elem    string
	writer  int
	seq     int
	outcome writeOutcome
}

// writerLog is what one writer did.
type writerLog struct {
	incrs    map[string]*[3]int // per key, per outcome
	pushes   []pushed
	hotAcked int    // acknowledged writes to a slot that was migrating
	outcomes [3]int // writes per outcome
}

// faultLoad runs loadWriters writers and a poller of the sources'
// migrating slots. Half of the writes go to the slots being migrated or
// about to be (the next batch: sources take queued slots in ascending
// order), so that writes race each step of many migrations; the others go
// to loadSpread slots over the whole range. Two writes in three are INCR
// of the slot's counter, one in three an RPUSH of a unique element onto
// its list.
type faultLoad struct {
	cc      *redis.ClusterClient
	tags    *slotTags
	sources []*redis.Client
	hot     atomic.Pointer[[]uint16]
	stop    atomic.Bool
	wg      sync.WaitGroup
	logs    [loadWriters]*writerLog
	stopped bool
}

// startFaultLoad starts the writers (seeded from seed: their choices, not
// their interleaving) on the cluster seen from seeds and the poller of
// sources.
func startFaultLoad(ctx context.Context, seed int64, tags *slotTags, seeds []string, sources []*migNode) *faultLoad {
	l := &faultLoad{tags: tags}
	l.cc = redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        seeds,
		MaxRedirects: 16,
		MaxRetries:   -1,
		DialTimeout:  time.Second,
		// One dial per attempt: a dead node's refusal comes at once.
		DialerRetries: 1,
		// Longer than a fence's wait (--fence-wait, 1 s) before TRYAGAIN.
		ReadTimeout:  3 * time.Second,
		WriteTimeout: time.Second,
		PoolSize:     loadWriters * 2,
		NewClient: func(opt *redis.Options) *redis.Client {
			c := redis.NewClient(opt)
			c.AddHook(noResend{})
			return c
		},
	})
	for _, n := range sources {
		l.sources = append(l.sources, redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1, DialerRetries: 1,
			DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, PoolSize: 1}))
	}
	l.wg.Add(1)
	go l.poll(ctx)
	for w := range loadWriters {
		log := &writerLog{incrs: map[string]*[3]int{}}
		l.logs[w] = log
		l.wg.Add(1)
		go l.write(ctx, w, rand.New(rand.NewSource(seed*loadWriters+int64(w))), log)
	}
	return l
}

// finish stops the writers and the poller and waits for them; a write in
// flight ends with its own reply. Idempotent.
func (l *faultLoad) finish() {
	if l.stopped {
		return
	}
	l.stopped = true
	l.stop.Store(true)
	l.wg.Wait()
	l.cc.Close()
	for _, c := range l.sources {
		c.Close()
	}
}

// poll keeps hot up to date: the slots the sources are migrating and the
// next faultBatch slots above each migration's.
func (l *faultLoad) poll(ctx context.Context) {
	defer l.wg.Done()
	for !l.stop.Load() && ctx.Err() == nil {
		var hot []uint16
		for _, c := range l.sources {
			txt, err := c.Do(ctx, "SHARDGATE", "STATUS").Text()
			if err != nil {
				continue
			}
			for _, line := range strings.Split(txt, "\n") {
				k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
				if k != "migrating_slots" {
					continue
				}
				ss, err := parseSlotRanges(v)
				if err != nil || len(ss) == 0 {
					continue
				}
				hot = append(hot, ss...)
				for s := int(ss[len(ss)-1]) + 1; s < min(int(ss[len(ss)-1])+1+faultBatch, slots.Count); s++ {
					hot = append(hot, uint16(s))
				}
			}
		}
		l.hot.Store(&hot)
		time.Sleep(2 * time.Millisecond)
	}
}

// parseSlotRanges reads SHARDGATE STATUS's migrating_slots: "a-b,c,...",
// ascending.
func parseSlotRanges(s string) ([]uint16, error) {
	var out []uint16
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= slots.Count {
			return nil, fmt.Errorf("slots %q", part)
		}
		for x := a; x <= b; x++ {
			out = append(out, uint16(x))
		}
	}
	return out, nil
}

// write is one writer: it writes until stopped and logs each outcome.
func (l *faultLoad) write(ctx context.Context, w int, rng *rand.Rand, log *writerLog) {
	defer l.wg.Done()
	for seq := 0; !l.stop.Load(); seq++ {
		var s uint16
		hot := false
		if h := l.hot.Load(); h != nil && len(*h) > 0 && rng.Intn(2) == 0 {
			s, hot = (*h)[rng.Intn(len(*h))], true
		} else {
			j := rng.Intn(loadSpread)
			s = uint16(j*(slots.Count/loadSpread) + (j*37)%(slots.Count/loadSpread))
		}
		opCtx, cancel := context.WithTimeout(ctx, loadOpTimeout)
		var out writeOutcome
		if rng.Intn(3) == 0 {
			key, elem := l.tags.list(s), strconv.Itoa(w)+":"+strconv.Itoa(seq)
			out = outcomeOf(l.cc.RPush(opCtx, key, elem).Err())
			log.pushes = append(log.pushes, pushed{key: key, elem: elem, writer: w, seq: seq, outcome: out})
		} else {
			key := l.tags.counter(s)
			out = outcomeOf(l.cc.Incr(opCtx, key).Err())
			c := log.incrs[key]
			if c == nil {
				c = new([3]int)
				log.incrs[key] = c
			}
			c[out]++
		}
		cancel()
		log.outcomes[out]++
		if hot && out == writeAcked {
			log.hotAcked++
		}
		if ctx.Err() != nil {
			time.Sleep(10 * time.Millisecond) // the run is over; wait to be stopped
		}
	}
}

// loadResult is every writer's log, merged.
type loadResult struct {
	incrs    map[string][3]int   // per counter, writes per outcome
	pushes   map[string]pushed   // per element
	lists    map[string][]string // per list, its elements sent (any outcome)
	written  map[string]bool     // the keys that a write may have created
	outcomes [3]int
	hotAcked int
}

// result merges the writers' logs; after finish.
func (l *faultLoad) result() *loadResult {
	r := &loadResult{incrs: map[string][3]int{}, pushes: map[string]pushed{}, lists: map[string][]string{}, written: map[string]bool{}}
	for _, log := range l.logs {
		for k, c := range log.incrs {
			m := r.incrs[k]
			for o := range c {
				m[o] += c[o]
			}
			r.incrs[k] = m
			if c[writeAcked]+c[writeAmbiguous] > 0 {
				r.written[k] = true
			}
		}
		for _, p := range log.pushes {
			r.pushes[p.elem] = p
			r.lists[p.key] = append(r.lists[p.key], p.elem)
			if p.outcome != writeRefused {
				r.written[p.key] = true
			}
		}
		for o := range log.outcomes {
			r.outcomes[o] += log.outcomes[o]
		}
		r.hotAcked += log.hotAcked
	}
	return r
}

// startKillable starts bin with args, its stderr read into a lineLog,
// and returns the process, a channel closed once it has exited and its
// whole output is in the log, and the log. The test's cleanup kills it
// if it still runs.
func startKillable(t *testing.T, bin string, args []string) (*exec.Cmd, chan struct{}, *lineLog, error) {
	cmd := exec.Command(bin, args...)
	// A writer that is not a file: Wait returns only once the whole
	// output reached the log, also for a process killed with SIGKILL.
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	log := newLineLog(pr)
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		pw.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	return cmd, exited, log, nil
}
