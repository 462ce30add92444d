package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/cluster"
)

// cluster rebalance and cluster drain: they ask a node, over RESP, to
// plan now or to hand all its slots to the others (node/planner.go's
// SHARDGATE command), and wait for the moves to finish.

// clusterOpFlags are the flags both operations take.
type clusterOpFlags struct {
	password string
	timeout  time.Duration
	wait     bool
}

func (f *clusterOpFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&f.password, "password", "", "password sent with AUTH (the nodes' --requirepass)")
	fs.BoolVar(&f.wait, "wait", true, "wait until "+what+", printing progress")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "with --wait: give up after this long (exit status 1)")
}

// nodeCall sends one command to a node and returns its reply text.
func nodeCall(ctx context.Context, addr, password string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := dialStatusConn(ctx, addr)
	if err != nil {
		return "", err
	}
	defer c.close()
	if err := c.auth(password); err != nil {
		return "", err
	}
	v, err := c.do(args...)
	if err != nil {
		if strings.Contains(err.Error(), "unknown command 'SHARDGATE'") {
			// A standalone node, a proxy or a Redis server: say so
			// rather than echo the command's internals alone.
			return "", fmt.Errorf("not a node of a gossip cluster (a standalone node, a proxy or a Redis server?): %w", err)
		}
		return "", err
	}
	return string(v.Str), nil
}

// nodeStatus reads SHARDGATE STATUS's fields.
func nodeStatus(ctx context.Context, addr, password string) (map[string]string, error) {
	s, err := nodeCall(ctx, addr, password, "SHARDGATE", "STATUS")
	if err != nil {
		return nil, err
	}
	return parseInfoFields(s), nil
}

// parseOpFlags parses flags and the NODE argument, which may come
// anywhere among them (after "--" everything is an argument).
func parseOpFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stdout)
				fs.Usage()
				return 0
			}
			flagError(fs, err, stderr)
			return 2
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	fs.Parse(append([]string{"--"}, positional...)) // leaves them as fs.Args()
	return -1
}

func parseNodeAddr(fs *flag.FlagSet, stderr io.Writer, cmd string) (string, bool) {
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "shardgate cluster %s: want exactly one node address (host:port), got %d arguments\n", cmd, fs.NArg())
		return "", false
	}
	addr := fs.Arg(0)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		fmt.Fprintf(stderr, "shardgate cluster %s: bad node address %q: %v\n", cmd, addr, err)
		return "", false
	}
	return addr, true
}

func runClusterDrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate cluster drain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f clusterOpFlags
	f.register(fs, "the node owns no slot")
	undo := fs.Bool("undo", false, "stop draining: the node takes its share of slots again")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: shardgate cluster drain [flags] NODE

Move every slot of NODE (its RESP address, host:port) to the other nodes,
online, so it can be removed without losing data. The node stays a member
and keeps serving while its slots move; the mark is persisted in its --dir,
so a restart does not undo it (--undo does).

Flags:
`)
		printDefaults(fs)
	}
	if rc := parseOpFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	addr, ok := parseNodeAddr(fs, stderr, "drain")
	if !ok {
		return 2
	}
	mode := "ON"
	if *undo {
		mode = "OFF"
	}
	if _, err := nodeCall(ctx, addr, f.password, "SHARDGATE", "DRAIN", mode); err != nil {
		fmt.Fprintf(stderr, "shardgate cluster drain: %s: %v\n", addr, err)
		return 1
	}
	if *undo {
		fmt.Fprintf(stdout, "%s: draining stopped\n", addr)
		return 0
	}
	fmt.Fprintf(stdout, "%s: draining\n", addr)
	if !f.wait {
		return 0
	}
	return waitFor(ctx, f, stdout, stderr, "drain", func() (bool, string, error) {
		st, err := nodeStatus(ctx, addr, f.password)
		if err != nil {
			return false, "", err
		}
		if st["slots_owned"] != "0" {
			return false, "slots still here: " + st["slots_owned"], nil
		}
		// Done once every member routes by the table without this node
		// (a node that does not report it is taken at its word).
		if c, ok := st["table_converged"]; ok && c != "1" {
			return false, "no slots left; the other members are still learning the final slot table", nil
		}
		return true, "", nil
	})
}

func runClusterRebalance(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate cluster rebalance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f clusterOpFlags
	f.register(fs, "the planner has nothing left to move")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: shardgate cluster rebalance [flags] NODE

Ask the cluster's planner (through NODE, any node's RESP address) to move
slots online now so that every node owns its --weight's share. Nodes run
with --auto-rebalance (the default) do this by themselves when nodes join
or leave; this is for clusters run with --auto-rebalance=false.

Flags:
`)
		printDefaults(fs)
	}
	if rc := parseOpFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	addr, ok := parseNodeAddr(fs, stderr, "rebalance")
	if !ok {
		return 2
	}
	if _, err := nodeCall(ctx, addr, f.password, "SHARDGATE", "REBALANCE"); err != nil {
		fmt.Fprintf(stderr, "shardgate cluster rebalance: %s: %v\n", addr, err)
		return 1
	}
	fmt.Fprintln(stdout, "rebalance asked")
	if !f.wait {
		return 0
	}
	// Done when the planner would move nothing more: the cluster's table
	// (CLUSTER NODES) with every node's weight and draining mark (its
	// SHARDGATE STATUS) given to the planner's own function, no
	// migration queued or running, and every member routing by that
	// table.
	return waitFor(ctx, f, stdout, stderr, "rebalance", func() (bool, string, error) {
		return planSettled(ctx, addr, f.password)
	})
}

// planSettled reports whether the cluster seen from addr is as the
// planner wants it, or what is left.
func planSettled(ctx context.Context, addr, password string) (bool, string, error) {
	nodes, err := nodeCall(ctx, addr, password, "CLUSTER", "NODES")
	if err != nil {
		return false, "", err
	}
	mv, err := viewFromClusterNodes(nodes)
	if err != nil {
		return false, "", err
	}
	v := &cluster.View{Slots: new([cluster.NumSlots]cluster.SlotOwner)}
	for s, o := range mv.owners() {
		if o != "" {
			v.Slots[s] = cluster.SlotOwner{Owner: cluster.NodeID(o), Epoch: 1}
		}
	}
	moving, learning := 0, 0
	for _, m := range mv.Members {
		cm := cluster.Member{ID: cluster.NodeID(m.ID), Role: cluster.RoleNode, Addr: m.Addr, State: cluster.StateDead}
		if memberLive(m.State) {
			st, err := nodeStatus(ctx, m.Addr, password)
			if err != nil {
				return false, "", fmt.Errorf("%s: %w", m.Addr, err)
			}
			w, _ := strconv.ParseUint(st["weight"], 10, 32)
			cm.State, cm.Weight, cm.Draining = cluster.StateAlive, uint32(w), st["draining"] == "1"
			if st["slots_queued"] != "0" || st["migrating_to"] != "" {
				moving++
			}
			// A member that does not report it is taken at its word.
			if c, ok := st["table_converged"]; ok && c != "1" {
				learning++
			}
		}
		v.Members = append(v.Members, cm)
	}
	slices.SortFunc(v.Members, func(a, b cluster.Member) int { return strings.Compare(string(a.ID), string(b.ID)) })
	moves, reason := cluster.Plan(v)
	left := 0
	for _, m := range moves {
		left += len(m.Slots)
	}
	switch {
	case reason != "":
		return false, "waiting: " + reason, nil
	case left > 0 || moving > 0:
		return false, fmt.Sprintf("slots still to move: %d (nodes moving now: %d)", left, moving), nil
	case learning > 0:
		// The moves are done; until every member routes by the final
		// table, CLUSTER SLOTS and status differ from node to node.
		return false, fmt.Sprintf("no slots left to move; %d members still learning the final slot table", learning), nil
	}
	return true, "", nil
}

// waitFor polls done every second until it reports true, printing its
// progress when it changes.
func waitFor(ctx context.Context, f clusterOpFlags, stdout, stderr io.Writer, what string, done func() (bool, string, error)) int {
	deadline := time.Now().Add(f.timeout)
	last := ""
	for {
		ok, progress, err := done()
		if err != nil {
			fmt.Fprintf(stderr, "shardgate cluster %s: %v\n", what, err)
		} else if ok {
			fmt.Fprintf(stdout, "%s done\n", what)
			return 0
		} else if progress != last {
			fmt.Fprintln(stdout, progress)
			last = progress
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "shardgate cluster %s: not done after %s\n", what, f.timeout)
			return 1
		}
		select {
		case <-ctx.Done():
			return 1
		case <-time.After(time.Second):
		}
	}
}
