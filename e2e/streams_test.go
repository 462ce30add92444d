package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// At-least-once processing with a Redis Streams consumer group, through
// `shardgate proxy` over three `shardgate node` processes. Producers XADD
// orders to {orders}stream; workers of group g read them with XREADGROUP
// ... COUNT n BLOCK ms STREAMS {orders}stream > and XACK only what they
// processed. Some orders are poison (they fail every time), some fail
// transiently (on their first delivery only). Workers die mid-batch: a
// goroutine whose connection is reset after it has processed half of a
// batch (nothing acknowledged), and a separate process SIGKILLed while it
// holds a batch; a third worker dies while blocked on the empty stream (no
// waiter may stay on the node). A reclaimer looks for idle entries with
// XPENDING ... IDLE, takes them over with XAUTOCLAIM (which counts a
// delivery), reads their delivery counts with XPENDING's extended form,
// processes them, and moves an order whose third (or later) delivery
// failed to the dead-letter stream {orders}dead, acknowledging it in the
// same MULTI. In the end every order has been processed at least once, or
// sits in the dead-letter stream (exactly the poison ones); nothing is
// pending, and no waiter is left on the nodes.

const (
	streamOrders    = 100_000
	streamKey       = "{orders}stream"
	streamDeadKey   = "{orders}dead"
	streamGroup     = "g"
	streamProducers = 2
	streamWorkers   = 6
	streamBatch     = 500 // XADDs per producer pipeline
	streamCount     = 50  // XREADGROUP COUNT
	// streamBlock is the workers' BLOCK: an idle worker comes back this
	// often to see whether to stop.
	streamBlock = 200 * time.Millisecond
	// streamMinIdle is the reclaimer's minimum idle time: longer than a
	// live worker holds a batch, so it takes over what failed or what a
	// dead worker held.
	streamMinIdle = 500 * time.Millisecond
	// streamMaxFailures: an order whose delivery number streamMaxFailures
	// (or later) failed goes to the dead-letter stream.
	streamMaxFailures = 3
	// streamVictimAfter is how many batches the victims complete before
	// they die holding one.
	streamVictimAfter = 30
)

// Orders that fail: poison ones always, transient ones on their first
// delivery.
func poisonOrder(i int) bool    { return i%997 == 0 }
func transientOrder(i int) bool { return i%101 == 0 && !poisonOrder(i) }

// streamWorkerEnv makes the test binary a worker process (see
// TestStreamWorkerProcess): the proxy's address, the consumer name and how
// many batches it completes before it takes one and hangs on to it.
const streamWorkerEnv = "SHARDGATE_E2E_STREAM_WORKER"

// processedSet records processed orders (an order may be processed more
// than once: at least once is the promise).
type processedSet struct {
	count    []atomic.Int32
	distinct atomic.Int64
	dups     atomic.Int64
}

func newProcessedSet() *processedSet {
	return &processedSet{count: make([]atomic.Int32, streamOrders)}
}

func (p *processedSet) add(order int) error {
	if order < 0 || order >= streamOrders {
		return fmt.Errorf("processed an order that was never added: %d", order)
	}
	if poisonOrder(order) {
		return fmt.Errorf("poison order %d processed", order)
	}
	if p.count[order].Add(1) > 1 {
		p.dups.Add(1)
	} else {
		p.distinct.Add(1)
	}
	return nil
}

// entryOrder is the order number of a stream entry (field "order").
func entryOrder(m redis.XMessage) (int, error) {
	s, ok := m.Values["order"].(string)
	if !ok {
		return 0, fmt.Errorf("entry %s has no order: %v", m.ID, m.Values)
	}
	return strconv.Atoi(s)
}

func TestStreamsAtLeastOnce(t *testing.T) {
	bin := buildShardgate(t)
	var nodes []string
	for range 3 {
		_, addr, _ := startNode(t, bin)
		nodes = append(nodes, addr)
	}
	cmd := exec.Command(bin, "proxy", "--addr", "127.0.0.1:0", "--nodes", strings.Join(nodes, ","))
	paddr := startLogged(t, cmd).wait(t, proxyListeningRE)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: paddr})
	defer admin.Close()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.XGroupCreateMkStream(ctx, streamKey, streamGroup, "$").Err(); err != nil {
		t.Fatalf("XGROUP CREATE: %v", err)
	}

	start := time.Now()
	done := newProcessedSet()
	var dead atomic.Int64 // orders moved to the dead-letter stream
	var stop atomic.Bool
	errs := make(chan error, 100)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg sync.WaitGroup

	// Workers, each with its own connection (PoolSize 1).
	for w := range streamWorkers {
		wg.Go(func() {
			name := fmt.Sprint("w", w)
			rdb := redis.NewClient(&redis.Options{Addr: paddr, PoolSize: 1, Protocol: 2 + w%2})
			defer rdb.Close()
			if err := runStreamWorker(ctx, rdb, name, -1, &stop, done.add, nil); err != nil {
				report(fmt.Errorf("worker %s: %w", name, err))
			}
		})
	}

	// The goroutine victim: after streamVictimAfter batches it reads one
	// more, processes the first half of it and has its connection reset
	// (SO_LINGER 0) before acknowledging anything.
	const victim = "victim"
	victimHeld := make(chan int, 1)
	wg.Go(func() {
		rdb, conn := resettableClient(paddr)
		defer rdb.Close()
		err := runStreamWorker(ctx, rdb, victim, streamVictimAfter, &stop, done.add, func(batch []redis.XMessage) {
			for _, m := range batch[:len(batch)/2] {
				if order, err := entryOrder(m); err == nil && !poisonOrder(order) && !transientOrder(order) {
					if err := done.add(order); err != nil {
						report(err)
					}
				}
			}
			conn.reset()
			victimHeld <- len(batch)
		})
		if err != nil {
			report(fmt.Errorf("worker %s: %w", victim, err))
		}
	})

	// The process victim: the test binary as a worker (go-redis in its
	// own process); it prints "processed <order>" for each order it
	// processed (before its XACK), and "holding <n>" once it has read its
	// batch number streamVictimAfter+1, which it never processes.
	const procVictim = "proc"
	proc, procOut := startSelfWorker(t, "TestStreamWorkerProcess", fmt.Sprintf("%s=%s,%s,%d", streamWorkerEnv, paddr, procVictim, streamVictimAfter))
	procHeld := make(chan int, 1)
	procDone := make(chan struct{})
	go func() {
		defer close(procDone)
		held := false
		sc := bufio.NewScanner(procOut)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "processed "); ok {
				order, err := strconv.Atoi(s)
				if err == nil {
					err = done.add(order)
				}
				if err != nil {
					report(fmt.Errorf("worker process: %q: %v", sc.Text(), err))
				}
			} else if s, ok := strings.CutPrefix(sc.Text(), "holding "); ok {
				held = true
				n, _ := strconv.Atoi(s)
				procHeld <- n
			}
		}
		if !held {
			report(errors.New("the worker process ended before it took the batch to die with"))
		}
	}()

	// A third victim dies blocked: its XREADGROUP waits on the empty
	// stream and its connection is reset. The proxy must release the
	// waiter on the node, or the first orders would be delivered to that
	// dead consumer.
	idle, idleConn := resettableClient(paddr)
	defer idle.Close()
	idleDone := make(chan struct{})
	go func() {
		defer close(idleDone)
		idle.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streamGroup, Consumer: "idle", Streams: []string{streamKey, ">"}, Block: 0})
	}()
	nodesBlocked := func() int {
		sum := 0
		for _, n := range nodes {
			sum += blockedClients(t, n)
		}
		return sum
	}
	readers := streamWorkers + 3
	waitUntil(t, "the workers to block on the empty stream", func() bool {
		return blockedClients(t, paddr) == readers && nodesBlocked() == readers
	})
	idleConn.reset()
	<-idleDone
	waitUntil(t, "the worker that died blocked to leave no waiter", func() bool {
		return blockedClients(t, paddr) == readers-1 && nodesBlocked() == readers-1
	})

	// Producers: pipelines of single-order XADDs.
	var producing sync.WaitGroup
	for p := range streamProducers {
		producing.Add(1)
		wg.Go(func() {
			defer producing.Done()
			rdb := redis.NewClient(&redis.Options{Addr: paddr, PoolSize: 1})
			defer rdb.Close()
			for i := p; i < streamOrders; {
				pipe := rdb.Pipeline()
				for n := 0; n < streamBatch && i < streamOrders; n++ {
					pipe.XAdd(ctx, &redis.XAddArgs{Stream: streamKey, Values: []string{"order", strconv.Itoa(i)}})
					i += streamProducers
				}
				cmds, err := pipe.Exec(ctx)
				if err != nil {
					report(fmt.Errorf("producer %d: %w", p, err))
					return
				}
				for _, c := range cmds {
					if c.(*redis.StringCmd).Val() == "" {
						report(fmt.Errorf("producer %d: XADD answered %v", p, c))
						return
					}
				}
			}
		})
	}

	// The reclaimer.
	reclaimed := make(chan reclaimStats, 1)
	go func() {
		rdb := redis.NewClient(&redis.Options{Addr: paddr, PoolSize: 1, Protocol: 3})
		defer rdb.Close()
		st, err := runReclaimer(ctx, rdb, &stop, done.add, func() { dead.Add(1) })
		if err != nil {
			report(fmt.Errorf("reclaimer: %w", err))
		}
		reclaimed <- st
	}()

	// Supervise: kill the process victim once it holds its batch, then
	// wait until every order is processed or dead and nothing is pending.
	poison := 0
	for i := range streamOrders {
		if poisonOrder(i) {
			poison++
		}
	}
	fail := func(format string, args ...any) {
		stop.Store(true)
		t.Fatalf(format+"\n%s", append(args, streamState(ctx, admin))...)
	}
	timeout := time.After(60 * time.Second)
	var heldByVictims int
	for victims := 2; victims > 0; victims-- {
		select {
		case n := <-victimHeld:
			heldByVictims += n
		case n := <-procHeld:
			proc.Process.Signal(syscall.SIGKILL)
			<-procDone
			proc.Wait()
			heldByVictims += n
		case err := <-errs:
			fail("%v", err)
		case <-timeout:
			fail("victims not dead after 60 s: %d orders processed, %d dead", done.distinct.Load(), dead.Load())
		}
	}
	produced := make(chan struct{})
	go func() { producing.Wait(); close(produced) }()
	select {
	case <-produced:
	case err := <-errs:
		fail("%v", err)
	case <-timeout:
		fail("the producers have not finished after 60 s")
	}
	// The run is over when the group has been given the last entry and
	// nothing is pending: no worker nor the reclaimer has anything left
	// to process. What was processed is then checked.
	last, err := admin.XRevRangeN(ctx, streamKey, "+", "-", 1).Result()
	if err != nil || len(last) != 1 {
		fail("XREVRANGE %s + - COUNT 1: %v %v", streamKey, last, err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for finished := false; !finished; {
		select {
		case <-tick.C:
			groups, err := admin.XInfoGroups(ctx, streamKey).Result()
			if err != nil || len(groups) != 1 {
				fail("XINFO GROUPS: %v %v", groups, err)
			}
			if groups[0].LastDeliveredID != last[0].ID {
				continue
			}
			n, err := admin.XPending(ctx, streamKey, streamGroup).Result()
			if err != nil {
				fail("XPENDING: %v", err)
			}
			finished = n.Count == 0
		case err := <-errs:
			fail("%v", err)
		case <-timeout:
			fail("%d of %d orders processed, %d dead (%d poison), entries still pending or not delivered after 60 s",
				done.distinct.Load(), streamOrders, dead.Load(), poison)
		}
	}
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	st := <-reclaimed
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d orders through %d workers (two killed mid-batch holding %d entries, one killed blocked) and a reclaimer in %v: "+
		"%d reclaimed (%d XAUTOCLAIM calls), %d processed twice or more, %d dead-lettered",
		streamOrders, streamWorkers+3, heldByVictims, elapsed.Round(time.Millisecond), st.claimed, st.calls, done.dups.Load(), dead.Load())

	// Every order was processed at least once, except the poison ones,
	// which are in the dead-letter stream, each once, after at least
	// streamMaxFailures deliveries.
	for i := range streamOrders {
		if !poisonOrder(i) && done.count[i].Load() == 0 {
			t.Fatalf("order %d was never processed\n%s", i, streamState(ctx, admin))
		}
	}
	deadEntries, err := admin.XRange(ctx, streamDeadKey, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	inDead := map[int]int{}
	for _, m := range deadEntries {
		order, err := entryOrder(m)
		if err != nil {
			t.Fatal(err)
		}
		inDead[order]++
		if d, _ := strconv.Atoi(fmt.Sprint(m.Values["deliveries"])); d < streamMaxFailures {
			t.Errorf("dead-letter entry %s: %v: fewer than %d deliveries", m.ID, m.Values, streamMaxFailures)
		}
	}
	for i := range streamOrders {
		if want := map[bool]int{true: 1}[poisonOrder(i)]; inDead[i] != want {
			t.Errorf("order %d is %d times in the dead-letter stream, want %d", i, inDead[i], want)
		}
	}
	if len(deadEntries) != poison {
		t.Errorf("%d dead-letter entries, want %d", len(deadEntries), poison)
	}
	// The stream still has every order; the group read them all and has
	// nothing pending.
	if n, err := admin.XLen(ctx, streamKey).Result(); err != nil || n != streamOrders {
		t.Errorf("XLEN %s = %d (%v), want %d", streamKey, n, err, streamOrders)
	}
	if p, err := admin.XPending(ctx, streamKey, streamGroup).Result(); err != nil || p.Count != 0 {
		t.Errorf("XPENDING %s %s = %+v (%v), want nothing pending", streamKey, streamGroup, p, err)
	}
	groups, err := admin.XInfoGroups(ctx, streamKey).Result()
	if err != nil || len(groups) != 1 || groups[0].Pending != 0 || groups[0].EntriesRead != streamOrders || groups[0].Lag != 0 {
		t.Errorf("XINFO GROUPS %s = %+v (%v); want one group with nothing pending, %d entries read, lag 0", streamKey, groups, err, streamOrders)
	}
	// No waiter left behind on the nodes: the workers' last reads timed
	// out, and the one that died blocked was released above.
	for _, n := range nodes {
		if b := blockedClients(t, n); b != 0 {
			t.Errorf("node %s after the run: %d blocked clients", n, b)
		}
	}
}

// runStreamWorker is the worker loop: XREADGROUP a batch, process each
// order (poison ones fail, transient ones fail on this first delivery),
// XACK the processed ones in one command. With holdAfter >= 0 the worker
// reads batch number holdAfter+1 and, instead of processing it, calls
// hold and returns. It returns when stop is set and a read times out.
func runStreamWorker(ctx context.Context, rdb *redis.Client, name string, holdAfter int,
	stop *atomic.Bool, process func(int) error, hold func([]redis.XMessage)) error {
	for n := 0; ; {
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: streamGroup, Consumer: name, Streams: []string{streamKey, ">"},
			Count: streamCount, Block: streamBlock,
		}).Result()
		if errors.Is(err, redis.Nil) {
			if stop.Load() {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("XREADGROUP: %w", err)
		}
		if len(res) != 1 || res[0].Stream != streamKey || len(res[0].Messages) == 0 {
			return fmt.Errorf("XREADGROUP answered %+v", res)
		}
		batch := res[0].Messages
		if n == holdAfter {
			hold(batch)
			return nil
		}
		var ack []string
		for _, m := range batch {
			order, err := entryOrder(m)
			if err != nil {
				return err
			}
			// Read with '>': this is the order's first delivery.
			if poisonOrder(order) || transientOrder(order) {
				continue
			}
			if err := process(order); err != nil {
				return err
			}
			ack = append(ack, m.ID)
		}
		if len(ack) > 0 {
			if k, err := rdb.XAck(ctx, streamKey, streamGroup, ack...).Result(); err != nil || k != int64(len(ack)) {
				return fmt.Errorf("XACK of %d entries: %d, %v", len(ack), k, err)
			}
		}
		n++
	}
}

// reclaimStats counts the reclaimer's work.
type reclaimStats struct{ calls, claimed int }

// runReclaimer takes over entries idle for streamMinIdle: it asks XPENDING
// ... IDLE whether there are any, claims them with XAUTOCLAIM (a
// delivery), reads their delivery counts with XPENDING's extended form
// for its own consumer, and processes them: what succeeds is acknowledged,
// a poison order whose delivery number streamMaxFailures or later failed
// goes to the dead-letter stream and is acknowledged in one MULTI. It
// stops when stop is set.
func runReclaimer(ctx context.Context, rdb *redis.Client, stop *atomic.Bool, process func(int) error, died func()) (reclaimStats, error) {
	const me = "reclaimer"
	minIdle := strconv.FormatInt(streamMinIdle.Milliseconds(), 10)
	var st reclaimStats
	for !stop.Load() {
		idle, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: streamKey, Group: streamGroup, Idle: streamMinIdle, Start: "-", End: "+", Count: 1,
		}).Result()
		if err != nil {
			return st, fmt.Errorf("XPENDING IDLE: %w", err)
		}
		if len(idle) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for cursor := "0-0"; ; {
			// XAUTOCLAIM through Do: go-redis drops the reply's third
			// element (entries deleted from the stream), which must be
			// empty here.
			v, err := rdb.Do(ctx, "XAUTOCLAIM", streamKey, streamGroup, me, minIdle, cursor, "COUNT", 100).Slice()
			if err != nil {
				return st, fmt.Errorf("XAUTOCLAIM: %w", err)
			}
			st.calls++
			next, entries, err := parseAutoClaim(v)
			if err != nil {
				return st, err
			}
			if len(entries) > 0 {
				st.claimed += len(entries)
				if err := reclaim(ctx, rdb, me, entries, process, died); err != nil {
					return st, err
				}
			}
			if cursor = next; cursor == "0-0" {
				break
			}
		}
	}
	return st, nil
}

// parseAutoClaim reads XAUTOCLAIM's [cursor, entries, deleted ids].
func parseAutoClaim(v []any) (string, []redis.XMessage, error) {
	if len(v) != 3 {
		return "", nil, fmt.Errorf("XAUTOCLAIM answered %d elements, want 3: %v", len(v), v)
	}
	cursor, ok := v[0].(string)
	list, ok2 := v[1].([]any)
	deleted, ok3 := v[2].([]any)
	if !ok || !ok2 || !ok3 {
		return "", nil, fmt.Errorf("XAUTOCLAIM answered %v", v)
	}
	if len(deleted) != 0 {
		return "", nil, fmt.Errorf("XAUTOCLAIM reports deleted entries %v; nothing was deleted", deleted)
	}
	entries := make([]redis.XMessage, 0, len(list))
	for _, e := range list {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return "", nil, fmt.Errorf("XAUTOCLAIM entry %v", e)
		}
		id, ok := pair[0].(string)
		fields, ok2 := pair[1].([]any)
		if !ok || !ok2 || len(fields)%2 != 0 {
			return "", nil, fmt.Errorf("XAUTOCLAIM entry %v", e)
		}
		m := redis.XMessage{ID: id, Values: map[string]any{}}
		for i := 0; i < len(fields); i += 2 {
			m.Values[fmt.Sprint(fields[i])] = fields[i+1]
		}
		entries = append(entries, m)
	}
	return cursor, entries, nil
}

// reclaim processes entries the reclaimer has just claimed.
func reclaim(ctx context.Context, rdb *redis.Client, me string, entries []redis.XMessage, process func(int) error, died func()) error {
	pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		// Its own entries in the claimed range: the claimed ones, and
		// poison ones it holds for another try.
		Stream: streamKey, Group: streamGroup, Start: entries[0].ID, End: entries[len(entries)-1].ID,
		Count: streamOrders, Consumer: me,
	}).Result()
	if err != nil {
		return fmt.Errorf("XPENDING %s %s %s %s: %w", streamKey, streamGroup, entries[0].ID, entries[len(entries)-1].ID, err)
	}
	deliveries := map[string]int64{}
	for _, p := range pend {
		if p.Consumer != me {
			return fmt.Errorf("XPENDING for consumer %s gave %+v", me, p)
		}
		deliveries[p.ID] = p.RetryCount
	}
	var ack []string
	for _, m := range entries {
		d, ok := deliveries[m.ID]
		if !ok || d < 2 {
			return fmt.Errorf("claimed entry %s: XPENDING says %d deliveries (listed: %v); a claim is at least the second", m.ID, d, ok)
		}
		order, err := entryOrder(m)
		if err != nil {
			return err
		}
		if !poisonOrder(order) {
			// A transient failure was the first delivery's.
			if err := process(order); err != nil {
				return err
			}
			ack = append(ack, m.ID)
			continue
		}
		if d < streamMaxFailures {
			continue // failed; delivered again later
		}
		cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.XAdd(ctx, &redis.XAddArgs{Stream: streamDeadKey, Values: []string{
				"order", strconv.Itoa(order), "id", m.ID, "deliveries", strconv.FormatInt(d, 10)}})
			p.XAck(ctx, streamKey, streamGroup, m.ID)
			return nil
		})
		if err != nil {
			return fmt.Errorf("MULTI XADD %s, XACK %s: %w", streamDeadKey, m.ID, err)
		}
		if k := cmds[1].(*redis.IntCmd).Val(); k != 1 {
			return fmt.Errorf("XACK %s of a claimed entry answered %d", m.ID, k)
		}
		died()
	}
	if len(ack) > 0 {
		if k, err := rdb.XAck(ctx, streamKey, streamGroup, ack...).Result(); err != nil || k != int64(len(ack)) {
			return fmt.Errorf("XACK of %d reclaimed entries: %d, %v", len(ack), k, err)
		}
	}
	return nil
}

// streamState describes the stream and its group, for a failure.
func streamState(ctx context.Context, rdb *redis.Client) string {
	var b strings.Builder
	fmt.Fprintf(&b, "XLEN %s = %d, XLEN %s = %d\n", streamKey, rdb.XLen(ctx, streamKey).Val(), streamDeadKey, rdb.XLen(ctx, streamDeadKey).Val())
	fmt.Fprintf(&b, "XPENDING %s %s = %+v\n", streamKey, streamGroup, rdb.XPending(ctx, streamKey, streamGroup).Val())
	fmt.Fprintf(&b, "XINFO GROUPS = %+v\n", rdb.XInfoGroups(ctx, streamKey).Val())
	pend := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: streamKey, Group: streamGroup, Start: "-", End: "+", Count: 10}).Val()
	fmt.Fprintf(&b, "first pending: %+v\n", pend)
	return b.String()
}

// TestStreamWorkerProcess is the worker process of TestStreamsAtLeastOnce
// (the test binary run again with streamWorkerEnv set); otherwise it is
// skipped.
func TestStreamWorkerProcess(t *testing.T) {
	env := os.Getenv(streamWorkerEnv)
	if env == "" {
		t.Skip("only run as TestStreamsAtLeastOnce's worker process")
	}
	parts := strings.Split(env, ",")
	holdAfter, _ := strconv.Atoi(parts[2])
	rdb := redis.NewClient(&redis.Options{Addr: parts[0], PoolSize: 1})
	out := bufio.NewWriter(os.Stdout)
	var stop atomic.Bool
	err := runStreamWorker(context.Background(), rdb, parts[1], holdAfter, &stop,
		func(order int) error {
			// Recorded before its XACK.
			fmt.Fprintln(out, "processed", order)
			return out.Flush()
		},
		func(batch []redis.XMessage) {
			fmt.Fprintln(out, "holding", len(batch))
			out.Flush()
			time.Sleep(time.Hour) // until killed
		})
	out.Flush()
	if err != nil {
		t.Fatal(err)
	}
}
