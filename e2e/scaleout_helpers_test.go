package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/bench/scaleload"
	"github.com/shardgate/shardgate/slots"
)

// Helpers of the scale-out test: its nodes, what their SHARDGATE STATUS
// says, the wait for a balanced cluster, and the load running in the
// background.

// scaleNode is one `shardgate node` of the scale-out test.
type scaleNode struct {
	name string
	*gossipProc
	rdb *redis.Client // to this node, for SHARDGATE STATUS
}

// startScaleNode starts a node with its state in dir, joining join (none
// for the first), with extra flags.
func startScaleNode(t *testing.T, bin, name, dir, join string, extra ...string) *scaleNode {
	t.Helper()
	args := []string{"--addr", "127.0.0.1:0", "--dir", dir}
	if join != "" {
		args = append(args, "--join", join)
	}
	n := &scaleNode{name: name, gossipProc: startGossipProc(t, bin, "node", append(args, extra...)...)}
	n.rdb = redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, PoolSize: 2})
	t.Cleanup(func() { n.rdb.Close() })
	return n
}

// scaleStatus reads the node's SHARDGATE STATUS fields.
func (n *scaleNode) scaleStatus(ctx context.Context) (map[string]string, error) {
	txt, err := n.rdb.Do(ctx, "SHARDGATE", "STATUS").Text()
	if err != nil {
		return nil, fmt.Errorf("node %s (%s): SHARDGATE STATUS: %w", n.name, n.addr, err)
	}
	st := map[string]string{}
	for _, line := range strings.Split(txt, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			st[k] = v
		}
	}
	if _, ok := st["slots_owned"]; !ok {
		return nil, fmt.Errorf("node %s: SHARDGATE STATUS without slots_owned: %q", n.name, txt)
	}
	return st, nil
}

func statusInt(st map[string]string, field string) int64 {
	v, _ := strconv.ParseInt(st[field], 10, 64)
	return v
}

// scaleImbalance says why nodes are not balanced and settled, or "" if
// they are: every node not in drained owns within 10% of an even share of
// the slots, the drained ones own none, the owned slots add up to all of
// them (every node's view agrees on who owns what it owns), and no node
// has a migration running, queued or being staged. counts is every
// node's slots_owned, for the log.
func scaleImbalance(ctx context.Context, nodes, drained []*scaleNode) (why, counts string) {
	active := len(nodes) - len(drained)
	even := float64(slots.Count) / float64(active)
	total := int64(0)
	var cs []string
	for _, n := range nodes {
		st, err := n.scaleStatus(ctx)
		if err != nil {
			return err.Error(), strings.Join(cs, " ")
		}
		owned := statusInt(st, "slots_owned")
		total += owned
		cs = append(cs, fmt.Sprintf("%s:%d", n.name, owned))
		switch {
		case slices.Contains(drained, n) && owned != 0:
			why = fmt.Sprintf("drained node %s still owns %d slots", n.name, owned)
		case !slices.Contains(drained, n) && (float64(owned) < even*0.9 || float64(owned) > even*1.1):
			why = fmt.Sprintf("node %s owns %d slots, not within 10%% of %.0f", n.name, owned, even)
		case st["migrating_to"] != "":
			why = fmt.Sprintf("node %s is migrating %s to %s (%s)", n.name, st["migrating_slots"], st["migrating_to"], st["migrating_phase"])
		case statusInt(st, "slots_queued") != 0:
			why = fmt.Sprintf("node %s has %s slots queued", n.name, st["slots_queued"])
		case statusInt(st, "migrations_incoming") != 0:
			why = fmt.Sprintf("node %s is staging %s migrations", n.name, st["migrations_incoming"])
		}
		if why != "" {
			return why, strings.Join(cs, " ")
		}
	}
	if total != slots.Count {
		return fmt.Sprintf("the nodes own %d slots between them, not %d", total, slots.Count), strings.Join(cs, " ")
	}
	return "", strings.Join(cs, " ")
}

// waitScaleBalanced waits up to limit until scaleImbalance finds nothing,
// and returns the slot counts; it fails the test with dump's text if
// that does not happen.
func waitScaleBalanced(t *testing.T, what string, limit time.Duration, nodes, drained []*scaleNode, dump func() string) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		why, counts := scaleImbalance(ctx, nodes, drained)
		cancel()
		if why == "" {
			return counts
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not balanced after %v: %s (slots %s)%s", what, limit, why, counts, dump())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logFences logs every node's migration figures and returns the longest
// fence any node has held.
func logFences(t *testing.T, nodes []*scaleNode) time.Duration {
	t.Helper()
	longest := time.Duration(0)
	for _, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := n.scaleStatus(ctx)
		cancel()
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		fence := time.Duration(statusInt(st, "max_fence_us")) * time.Microsecond
		longest = max(longest, fence)
		t.Logf("node %s: %s slots, %s migrations done (%s aborted), %s slots out, %s in, %s keys and %s bytes sent, longest fence %v",
			n.name, st["slots_owned"], st["migrations_done"], st["migrations_aborted"], st["slots_migrated_out"],
			st["slots_migrated_in"], st["keys_sent"], st["bytes_sent"], fence)
	}
	return longest
}

// scalePhase is a stretch of a load run: [from, to).
type scalePhase struct {
	name     string
	from, to time.Time
}

// logPhases logs each phase's throughput and latencies and checks that
// the load ran in each (a stalled load would see no errors, vacuously).
func logPhases(t *testing.T, st *scaleload.Stats, phases []scalePhase) {
	t.Helper()
	for _, p := range phases {
		w := st.Between(p.from, p.to)
		t.Logf("%-22s %6.1fs %7.0f ops/s  p50 %-9v p99 %-9v max %-9v errors %d mismatches %d",
			p.name, p.to.Sub(p.from).Seconds(), w.Throughput, w.P50, w.P99, w.Max, w.Errors, w.Mismatches)
		if w.Ops == 0 {
			t.Errorf("no operation completed in phase %q", p.name)
		}
	}
}

// scaleRun is scaleload.Run in the background.
type scaleRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	st     *scaleload.Stats
	err    error
}

// startScaleRun starts the load; stop ends it (the test's cleanup does,
// if it fails before).
func startScaleRun(t *testing.T, cfg scaleload.Config, m *scaleload.Model) *scaleRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &scaleRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.st, r.err = scaleload.Run(ctx, cfg, m)
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *scaleRun) stop() (*scaleload.Stats, error) {
	r.cancel()
	<-r.done
	return r.st, r.err
}

// checkScaleRun fails the test if the clients saw an error or a reply
// that contradicted the model, or if the load did not run at a quarter of
// its rate at least.
func checkScaleRun(t *testing.T, what string, st *scaleload.Stats, rate float64) {
	t.Helper()
	tot := st.Total()
	t.Logf("%s: %v", what, st)
	if tot.Errors != 0 || tot.Mismatches != 0 {
		t.Errorf("%s: the clients saw %d errors and %d replies that contradicted the model\nerrors: %s\nmismatches: %s",
			what, tot.Errors, tot.Mismatches, strings.Join(st.ErrorSamples(), "\n  "), strings.Join(st.MismatchSamples(), "\n  "))
	}
	if d := st.End().Sub(st.Start()); float64(tot.Ops) < rate*d.Seconds()/4 {
		t.Errorf("%s: only %d operations in %v at a rate of %.0f/s", what, tot.Ops, d, rate)
	}
}

// clusterDrain runs `shardgate cluster drain` on the node and waits for
// it (it returns once the node owns no slot).
func clusterDrain(t *testing.T, bin string, n *scaleNode, dump func() string) {
	t.Helper()
	out, err := exec.Command(bin, "cluster", "drain", "--timeout", "2m", n.addr).CombinedOutput()
	if err != nil {
		t.Fatalf("shardgate cluster drain %s: %v\n%s%s", n.addr, err, out, dump())
	}
	t.Logf("shardgate cluster drain %s:\n%s", n.addr, strings.TrimSpace(string(out)))
}

// logTail is the last n lines of a process's log.
func logTail(l *lineLog, n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(0, len(l.lines)-n):], "\n")
}

// underRace reports whether the test binary was built with -race (the
// load generator is several times slower then).
func underRace() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
