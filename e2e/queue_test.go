package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
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

	"github.com/shardgate/shardgate/internal/difftest"
)

// The reliable-queue pattern through `shardgate proxy` over three
// `shardgate node` processes: producers LPUSH jobs into {jobs}queue,
// workers BLMOVE {jobs}queue {jobs}processing:<worker> RIGHT LEFT, "process"
// the job and LREM it from their processing list. Workers die mid-job
// (holding a job in their processing list): one is a goroutine whose
// connection is reset, one is a separate process killed with SIGKILL. A
// recovery sweep moves a dead worker's processing list back to the queue.
// A third worker dies while blocked on the empty queue, before the first
// push: the proxy must leave no waiter behind on the node.
// In the end every job has been completed, and nothing is left anywhere.

const (
	queueJobs      = 100_000
	queueKey       = "{jobs}queue"
	queueProducers = 2
	queueWorkers   = 6
	queueBatch     = 500 // LPUSHes per producer pipeline
	// queueBlock is the workers' BLMOVE timeout (fractional on purpose):
	// an idle worker comes back this often to see whether to stop.
	queueBlock = 200 * time.Millisecond
)

func processingKey(worker string) string { return "{jobs}processing:" + worker }

func jobName(i int) string { return "job:" + strconv.Itoa(i) }

func jobID(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "job:"))
	return n, err == nil && strings.HasPrefix(s, "job:") && n >= 0 && n < queueJobs
}

// queueWorkerEnv makes the test binary a worker process (see
// TestQueueWorkerProcess): the proxy's address, the worker's name and how
// many jobs it completes before it takes one and hangs on to it.
const queueWorkerEnv = "SHARDGATE_E2E_QUEUE_WORKER"

// doneSet records completed jobs.
type doneSet struct {
	count    []atomic.Int32
	distinct atomic.Int64
	dups     atomic.Int64
	all      chan struct{} // closed when every job is done
	once     sync.Once
}

func newDoneSet() *doneSet {
	return &doneSet{count: make([]atomic.Int32, queueJobs), all: make(chan struct{})}
}

func (d *doneSet) add(job string) error {
	i, ok := jobID(job)
	if !ok {
		return fmt.Errorf("completed a job that was never pushed: %q", job)
	}
	if d.count[i].Add(1) > 1 {
		d.dups.Add(1)
		return nil
	}
	if d.distinct.Add(1) == queueJobs {
		d.once.Do(func() { close(d.all) })
	}
	return nil
}

func TestQueueReliable(t *testing.T) {
	bin := buildShardgate(t)
	var nodes []string
	for range 3 {
		_, addr, _ := startNode(t, bin)
		nodes = append(nodes, addr)
	}
	cmd := exec.Command(bin, "proxy", "--addr", "127.0.0.1:0", "--nodes", strings.Join(nodes, ","))
	plog := startLogged(t, cmd)
	paddr := plog.wait(t, proxyListeningRE)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: paddr})
	defer admin.Close()
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	done := newDoneSet()
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
	for w := range queueWorkers {
		wg.Go(func() {
			name := fmt.Sprint("w", w)
			rdb := redis.NewClient(&redis.Options{Addr: paddr, PoolSize: 1, Protocol: 2 + w%2})
			defer rdb.Close()
			if err := runQueueWorker(ctx, rdb, name, w%2 == 0, -1, &stop, func(job string) error { return done.add(job) }, nil); err != nil {
				report(fmt.Errorf("worker %s: %w", name, err))
			}
		})
	}

	// The goroutine victim: completes 1500 jobs, takes one more and has
	// its connection reset (SO_LINGER 0) while the job sits in its
	// processing list.
	const victim = "victim"
	victimHeld := make(chan string, 1)
	wg.Go(func() {
		rdb, conn := resettableClient(paddr)
		defer rdb.Close()
		err := runQueueWorker(ctx, rdb, victim, false, 1500, &stop, func(job string) error { return done.add(job) },
			func(job string) {
				conn.reset()
				victimHeld <- job
			})
		if err != nil {
			report(fmt.Errorf("worker %s: %w", victim, err))
		}
	})

	// The process victim: the test binary as a worker (go-redis in its
	// own process); it prints "done <job>" after each LREM, and "holding
	// <job>" once it has taken its 2501st job, which it never completes.
	const procVictim = "proc"
	proc, procOut := startSelfWorker(t, "TestQueueWorkerProcess", queueWorkerEnv+"="+paddr+","+procVictim+",2500")
	procHeld := make(chan string, 1)
	procDone := make(chan struct{})
	go func() {
		defer close(procDone)
		held := false
		sc := bufio.NewScanner(procOut)
		for sc.Scan() {
			if job, ok := strings.CutPrefix(sc.Text(), "done "); ok {
				if err := done.add(job); err != nil {
					report(err)
				}
			} else if job, ok := strings.CutPrefix(sc.Text(), "holding "); ok {
				held = true
				procHeld <- job
			}
		}
		if !held {
			report(errors.New("the worker process ended before it took the job to die with"))
		}
	}()

	// A third victim dies blocked: its BLMOVE waits on the empty queue
	// and its connection is reset. The proxy must release the waiter on
	// the node, or the first job pushed would go into that dead worker's
	// processing list.
	idle, idleConn := resettableClient(paddr)
	defer idle.Close()
	idleDone := make(chan struct{})
	go func() {
		defer close(idleDone)
		idle.Do(ctx, "BLMOVE", queueKey, processingKey("idle"), "RIGHT", "LEFT", "0")
	}()
	nodesBlocked := func() int {
		sum := 0
		for _, n := range nodes {
			sum += blockedClients(t, n)
		}
		return sum
	}
	// Every worker waits on the empty queue before the first push.
	waitUntil(t, "the workers to block on the empty queue", func() bool {
		return blockedClients(t, paddr) == queueWorkers+3 && nodesBlocked() == queueWorkers+3
	})
	idleConn.reset()
	<-idleDone
	waitUntil(t, "the worker that died blocked to leave no waiter", func() bool {
		return blockedClients(t, paddr) == queueWorkers+2 && nodesBlocked() == queueWorkers+2
	})

	// Producers: pipelines of single-job LPUSHes.
	for p := range queueProducers {
		wg.Go(func() {
			rdb := redis.NewClient(&redis.Options{Addr: paddr, PoolSize: 1})
			defer rdb.Close()
			for i := p; i < queueJobs; {
				pipe := rdb.Pipeline()
				for n := 0; n < queueBatch && i < queueJobs; n++ {
					pipe.LPush(ctx, queueKey, jobName(i))
					i += queueProducers
				}
				cmds, err := pipe.Exec(ctx)
				if err != nil {
					report(fmt.Errorf("producer %d: %w", p, err))
					return
				}
				for _, c := range cmds {
					if c.(*redis.IntCmd).Val() < 1 {
						report(fmt.Errorf("producer %d: LPUSH answered %v", p, c))
						return
					}
				}
			}
		})
	}

	// The recovery sweep of a dead worker: its processing list goes back
	// to the queue, element by element (LMOVE RIGHT RIGHT puts the oldest
	// job at the queue's head; RPOPLPUSH at its tail). It must hold
	// exactly the job the worker died with.
	sweep := func(worker, held string, viaRPOPLPUSH bool) {
		var moved []string
		for {
			var job string
			var err error
			if viaRPOPLPUSH {
				job, err = admin.RPopLPush(ctx, processingKey(worker), queueKey).Result()
			} else {
				job, err = admin.LMove(ctx, processingKey(worker), queueKey, "RIGHT", "RIGHT").Result()
			}
			if errors.Is(err, redis.Nil) {
				break
			}
			if err != nil {
				report(fmt.Errorf("sweep of %s: %w", worker, err))
				return
			}
			moved = append(moved, job)
		}
		if len(moved) != 1 || moved[0] != held {
			report(fmt.Errorf("sweep of %s moved %q back; it died holding %q", worker, moved, held))
		}
	}

	// Supervise: sweep each victim once it is dead, wait for every job.
	timeout := time.After(60 * time.Second)
	victims := 2
	for victims > 0 {
		select {
		case job := <-victimHeld:
			sweep(victim, job, false)
			victims--
		case job := <-procHeld:
			proc.Process.Signal(syscall.SIGKILL)
			<-procDone
			proc.Wait()
			sweep(procVictim, job, true)
			victims--
		case err := <-errs:
			stop.Store(true)
			t.Fatal(err)
		case <-timeout:
			stop.Store(true)
			t.Fatalf("victims not dead after 60 s: %d jobs done\n%s", done.distinct.Load(), queueState(ctx, admin))
		}
	}
	select {
	case <-done.all:
	case err := <-errs:
		stop.Store(true)
		t.Fatal(err)
	case <-timeout:
		stop.Store(true)
		t.Fatalf("%d of %d jobs done after 60 s\n%s", done.distinct.Load(), queueJobs, queueState(ctx, admin))
	}
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d jobs through %d workers (two killed mid-job, one killed blocked) in %v", queueJobs, queueWorkers+3, elapsed.Round(time.Millisecond))

	if n := done.dups.Load(); n != 0 {
		// No job was completed by a worker that then died, so a job done
		// twice means an element was duplicated.
		t.Errorf("%d jobs completed twice", n)
	}
	for i := range queueJobs {
		if done.count[i].Load() == 0 {
			t.Fatalf("%s never completed", jobName(i))
		}
	}
	if n, err := admin.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("DBSIZE after the run: %d (%v); want 0 (queue and processing lists empty)\n%s", n, err, queueState(ctx, admin))
	}
	// No waiter left behind on the nodes: the workers' last BLMOVEs
	// timed out, and the one that died blocked was released above.
	for _, n := range nodes {
		if b := blockedClients(t, n); b != 0 {
			t.Errorf("node %s after the run: %d blocked clients", n, b)
		}
	}
}

// blockedClients reads INFO's blocked_clients from a node or the proxy.
func blockedClients(t *testing.T, addr string) int {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.DoStrings("INFO", "clients")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(v.Text(), "blocked_clients:")
	n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if !ok || err != nil {
		t.Fatalf("INFO clients from %s: %q", addr, v.Text())
	}
	return n
}

// runQueueWorker is the worker loop: BLMOVE a job into its processing
// list, "process" it, LREM it, complete it. A pipelined worker sends the
// LREM of a job and the next BLMOVE in one pipeline (one round trip per
// job; the proxy holds the BLMOVE until the LREM is answered). With
// holdAfter >= 0 the worker takes job number holdAfter+1 and, instead of
// processing it, calls hold and returns. It returns when stop is set and
// the queue stays empty for queueBlock.
func runQueueWorker(ctx context.Context, rdb *redis.Client, name string, pipelined bool, holdAfter int,
	stop *atomic.Bool, complete func(string) error, hold func(string)) error {
	proc := processingKey(name)
	timeout := strconv.FormatFloat(queueBlock.Seconds(), 'f', -1, 64)
	blmove := func(c interface {
		Do(context.Context, ...any) *redis.Cmd
	}) *redis.Cmd {
		// Do: go-redis's BLMove rounds timeouts up to whole seconds.
		return c.Do(ctx, "BLMOVE", queueKey, proc, "RIGHT", "LEFT", timeout)
	}
	lrem := func(c redis.Cmdable, job string) *redis.IntCmd { return c.LRem(ctx, proc, 1, job) }
	finish := func(job string, removed *redis.IntCmd) error {
		if n, err := removed.Result(); err != nil || n != 1 {
			return fmt.Errorf("LREM %s 1 %s: %d %v", proc, job, n, err)
		}
		return complete(job)
	}
	next := blmove(rdb)
	for n := 0; ; {
		job, err := next.Text()
		if errors.Is(err, redis.Nil) {
			if stop.Load() {
				return nil
			}
			next = blmove(rdb)
			continue
		}
		if err != nil {
			return fmt.Errorf("BLMOVE: %w", err)
		}
		if n == holdAfter {
			hold(job)
			return nil
		}
		if _, ok := jobID(job); !ok {
			return fmt.Errorf("BLMOVE gave %q", job)
		}
		// "Processing" the job takes no time.
		if !pipelined {
			if err := finish(job, lrem(rdb, job)); err != nil {
				return err
			}
			next = blmove(rdb)
		} else {
			var removed *redis.IntCmd
			_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				removed = lrem(p, job)
				next = blmove(p)
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("pipeline LREM+BLMOVE: %w", err)
			}
			if err := finish(job, removed); err != nil {
				return err
			}
		}
		n++
	}
}

// queueState describes the queue and processing lists, for a failure.
func queueState(ctx context.Context, rdb *redis.Client) string {
	var b strings.Builder
	fmt.Fprintf(&b, "LLEN %s = %d\n", queueKey, rdb.LLen(ctx, queueKey).Val())
	for _, w := range []string{"w0", "w1", "w2", "w3", "w4", "w5", "victim", "proc", "idle"} {
		k := processingKey(w)
		fmt.Fprintf(&b, "LRANGE %s = %q\n", k, rdb.LRange(ctx, k, 0, 10).Val())
	}
	return b.String()
}

// TestQueueWorkerProcess is the worker process of TestQueueReliable (the
// test binary run again with queueWorkerEnv set); otherwise it is
// skipped.
func TestQueueWorkerProcess(t *testing.T) {
	env := os.Getenv(queueWorkerEnv)
	if env == "" {
		t.Skip("only run as TestQueueReliable's worker process")
	}
	parts := strings.Split(env, ",")
	holdAfter, _ := strconv.Atoi(parts[2])
	rdb := redis.NewClient(&redis.Options{Addr: parts[0], PoolSize: 1})
	out := bufio.NewWriter(os.Stdout)
	var stop atomic.Bool
	err := runQueueWorker(context.Background(), rdb, parts[1], true, holdAfter, &stop,
		func(job string) error {
			fmt.Fprintln(out, "done", job)
			return nil
		},
		func(job string) {
			fmt.Fprintln(out, "holding", job)
			out.Flush()
			time.Sleep(time.Hour) // until killed
		})
	out.Flush()
	if err != nil {
		t.Fatal(err)
	}
}

// resettableClient is a one-connection go-redis client whose connection a
// test can reset (RST, as a crashed client's) while a command waits on it.
func resettableClient(addr string) (*redis.Client, *clientConn) {
	conn := &clientConn{}
	c := redis.NewClient(&redis.Options{
		Addr: addr, PoolSize: 1, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				conn.p.Store(c.(*net.TCPConn))
			}
			return c, err
		},
	})
	return c, conn
}

// clientConn is the last connection a resettableClient dialled.
type clientConn struct{ p atomic.Pointer[net.TCPConn] }

// reset closes the connection with a TCP reset.
func (c *clientConn) reset() {
	c.p.Load().SetLinger(0)
	c.p.Load().Close()
}
