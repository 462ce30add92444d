package main

// shardgate cluster status: the operator's view of a gossip cluster.
//
// How it reads the cluster. By default (--join) it joins the gossip for a
// moment as an observer (cluster.RoleObserver): a member that owns no slots
// and serves no clients, which proxies leave out of the endpoints they
// present and bootstrap does not count. Joining, it receives the whole
// slot table with every entry's epoch and every member's metadata (role,
// RESP address, and the epoch and digest of the table the member
// announces), which is all the status needs; it waits until its view has
// been quiet for a moment, prints it and leaves. Members whose announced
// digest differs from the table the observer merged from everyone have
// not converged: that is the disagreement the status reports.
//
// The observer needs the cluster's --gossip-key, and the members' probes
// should reach it at its gossip address (--gossip, --gossip-advertise):
// if they cannot, the join still works (the observer opens the
// connection) but the members record it as failed rather than left.
// Where gossip cannot be spoken at all (from outside a NAT, or through a
// container's published RESP port only) --resp reads the cluster over
// RESP instead, as any client can; see cluster_status_resp.go. What RESP
// does not carry is every range's epoch and the members' digests: the
// RESP reader compares what each live member reports instead.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/slots"
)

const clusterUsage = `Usage: shardgate cluster <command> [flags]

Commands:
  status     print the members, the slot table and what is inconsistent
  rebalance  move slots online now so each node owns its weight's share
  drain      move every slot of a node to the others, before removing it

Run 'shardgate cluster <command> --help' for the flags of a command.
`

// Exit codes of cluster status besides 0 (consistent) and 2 (bad usage).
const (
	exitUnreachable  = 1 // no view could be read
	exitInconsistent = 3 // the view was read and something is wrong
)

func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	switch args[0] {
	case "status":
		return runClusterStatus(ctx, args[1:], stdout, stderr)
	case "rebalance":
		return runClusterRebalance(ctx, args[1:], stdout, stderr)
	case "drain":
		return runClusterDrain(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, clusterUsage)
		return 0
	}
	fmt.Fprintf(stderr, "shardgate cluster: unknown command %q\n\n%s", args[0], clusterUsage)
	return 2
}

// splitAddrs splits a comma-separated list of host:port addresses.
func splitAddrs(list, flagName string) ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("bad --%s address %q: %v", flagName, a, err)
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

func runClusterStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate cluster status", flag.ContinueOnError)
	join := fs.String("join", "", "gossip addresses (host:port, comma-separated) of cluster members to join as an observer, as nodes and proxies take --join")
	gossip := fs.String("gossip", "", "the observer's gossip listen address (port 0 picks a free one), which the members' probes should reach; default: a free port on the local address that reaches the first --join member")
	advertise := fs.String("gossip-advertise", "", "gossip address to advertise when the --gossip one is not reachable by the members (NAT, containers)")
	key := fs.String("gossip-key", "", "the cluster's gossip key (16, 24 or 32 bytes, hex or base64)")
	fast := fs.Bool("gossip-fast", false, "test timings, for a cluster running with --gossip-fast")
	respAddrs := fs.String("resp", "", "instead of joining the gossip, read the cluster over RESP from this node or proxy (host:port; a comma-separated list is tried in order) and from every live member it lists")
	password := fs.String("password", "", "password sent with AUTH to the members' RESP ports (their --requirepass): with --resp to read the view, with --join to look up the address of a member gossip shows without one (a dead node)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for a view (--join), or for each member to answer (--resp)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: shardgate cluster status --join host:port [flags]
       shardgate cluster status --resp host:port [flags]

Print the members of a gossip cluster (id, role, RESP address, state), the
slot ranges of every node with their epochs, and anything inconsistent:
unassigned slots, slots of dead nodes, members whose table differs.

With --join the command joins the gossip for a moment as an observer (it
owns nothing, clients are never sent to it) and leaves. With --resp it
reads the view over RESP from a node or proxy and from every live member
that one lists (for where the members cannot reach this machine by gossip).

Exit status: 0 consistent, 3 inconsistent, 1 no view could be read,
2 bad usage.

Flags:
`)
		printDefaults(fs)
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "shardgate cluster status: "+format+"\n", a...)
		return 2
	}
	joins, err := splitAddrs(*join, "join")
	if err != nil {
		return bad("%v", err)
	}
	resps, err := splitAddrs(*respAddrs, "resp")
	if err != nil {
		return bad("%v", err)
	}
	switch {
	case len(joins) == 0 && len(resps) == 0:
		return bad("one of --join (gossip) or --resp is required")
	case len(joins) > 0 && len(resps) > 0:
		return bad("--join and --resp are exclusive")
	case *timeout <= 0:
		return bad("--timeout must be a positive duration, got %s", *timeout)
	}
	var (
		st      *clusterStatus
		readErr error
	)
	if len(joins) > 0 {
		o := observeOptions{join: joins, bind: *gossip, advertise: *advertise, fast: *fast, timeout: *timeout}
		if o.bind == "" {
			o.bind = observerBind(joins[0], o.advertise)
		}
		if _, _, err := net.SplitHostPort(o.bind); err != nil {
			return bad("bad --gossip address %q: %v", o.bind, err)
		}
		if *key != "" {
			if o.key, err = cluster.ParseKey(*key); err != nil {
				return bad("bad --gossip-key: %v", err)
			}
		}
		var v *cluster.View
		if v, readErr = observeCluster(ctx, o); readErr == nil {
			st = statusFromView(strings.Join(joins, ","), v, func(st *clusterStatus) {
				fillAddrs(ctx, st, *password, *timeout)
			})
		}
	} else {
		if given := flagsGiven(fs, "gossip", "gossip-advertise", "gossip-key", "gossip-fast"); len(given) > 0 {
			return bad("%s go with --join, not --resp", strings.Join(given, " "))
		}
		f := &respFetcher{password: *password, timeout: *timeout}
		var errs []error
		for _, e := range resps {
			s, err := collectStatus(ctx, e, f.fetch)
			if err == nil {
				st = s
				break
			}
			errs = append(errs, err)
		}
		readErr = errors.Join(errs...)
	}
	if st == nil {
		fmt.Fprintf(stderr, "shardgate cluster status: %v\n", readErr)
		return exitUnreachable
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			fmt.Fprintf(stderr, "shardgate cluster status: %v\n", err)
			return exitUnreachable
		}
	} else {
		writeStatusTable(stdout, st)
	}
	if !st.Consistent {
		return exitInconsistent
	}
	return 0
}

// flagsGiven returns which of the named flags the command line set, as
// "--name", in the flag set's (sorted) order.
func flagsGiven(fs *flag.FlagSet, names ...string) []string {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(names, f.Name) {
			given = append(given, "--"+f.Name)
		}
	})
	return given
}

// observerBind is the observer's gossip address when --gossip is not
// given: a free port on the local address the system routes to the first
// member through, so that the members' probes come back by a path that
// works. Listening on every interface instead lets gossip advertise the
// machine's first address, which may be one the members cannot reach (an
// IPv6 address to a cluster on 127.0.0.1): every member then logs failed
// probes. With --gossip-advertise the operator has said where to be
// reached, and every interface listens.
func observerBind(join, advertise string) string {
	if advertise != "" {
		return "0.0.0.0:0"
	}
	c, err := net.Dial("udp", join) // no packet is sent
	if err != nil {
		return "0.0.0.0:0"
	}
	defer c.Close()
	ua, ok := c.LocalAddr().(*net.UDPAddr)
	if !ok {
		return "0.0.0.0:0"
	}
	return net.JoinHostPort(ua.IP.String(), "0")
}

// observeOptions configure the short-lived observer.
type observeOptions struct {
	join      []string
	bind      string
	advertise string
	key       []byte
	fast      bool
	timeout   time.Duration
}

// quietFor is how long the observer's view must stay unchanged before it
// is printed: a few gossip rounds after the join's full exchange.
func (o observeOptions) quietFor() time.Duration {
	if o.fast {
		return 300 * time.Millisecond
	}
	return time.Second
}

// observeCluster joins the cluster as an observer, waits until its view
// has another live member and has been quiet for a moment (or until the
// timeout, with whatever it has if it has that much), and leaves. A
// cluster not bootstrapped yet has no cluster id and no slot assigned:
// that is what the status then says.
func observeCluster(ctx context.Context, o observeOptions) (*cluster.View, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	joinLog := &joinErrors{}
	c, err := cluster.Start(ctx, cluster.Config{
		Role:      cluster.RoleObserver,
		Bind:      o.bind,
		Advertise: o.advertise,
		Join:      o.join,
		Key:       o.key,
		Fast:      o.fast,
		Logger:    slog.New(joinLog),
	})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var (
		last    *cluster.View
		changed time.Time
	)
	for {
		ch := c.Changes()
		v := c.View()
		if v != last {
			last, changed = v, time.Now()
		}
		ready := otherMemberAlive(v)
		wait := o.quietFor() - time.Since(changed)
		if ready && wait <= 0 {
			return v, nil
		}
		select {
		case <-ch:
		case <-time.After(max(wait, 10*time.Millisecond)):
		case <-ctx.Done():
			if ready {
				return v, nil // still changing: as it is now
			}
			return nil, fmt.Errorf("no cluster member answered at %s within %v%s", strings.Join(o.join, ","), o.timeout, joinLog.last())
		}
	}
}

// otherMemberAlive reports whether v has a live node or proxy besides self.
func otherMemberAlive(v *cluster.View) bool {
	for _, m := range v.Members {
		if m.ID != v.Self && m.Role != cluster.RoleObserver && m.State == cluster.StateAlive {
			return true
		}
	}
	return false
}

// joinErrors is the observer's log: it keeps only the last reason
// memberlist gave for a failed join (a wrong key, a refused connection),
// to say why no member answered.
type joinErrors struct {
	mu   sync.Mutex
	text string
}

const joinFailedPrefix = "memberlist: failed to join "

func (j *joinErrors) Enabled(context.Context, slog.Level) bool { return true }

func (j *joinErrors) Handle(_ context.Context, r slog.Record) error {
	if rest, ok := strings.CutPrefix(r.Message, joinFailedPrefix); ok {
		j.mu.Lock()
		j.text = rest
		j.mu.Unlock()
	}
	return nil
}

func (j *joinErrors) WithAttrs([]slog.Attr) slog.Handler { return j }
func (j *joinErrors) WithGroup(string) slog.Handler      { return j }

// last returns the last join failure as a suffix for an error text.
func (j *joinErrors) last() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.text == "" {
		return ""
	}
	return " (last join attempt: " + j.text + ")"
}

// statusFromView describes an observer's view. Every live member is
// checked by the table it announces: the same digest as the observer's
// merged table, or not. fill, if not nil, completes the members before
// the problems are worked out.
func statusFromView(entry string, v *cluster.View, fill func(*clusterStatus)) *clusterStatus {
	self := v.SelfMember()
	st := &clusterStatus{
		Entry:       entry,
		EntryID:     string(v.Self),
		EntryRole:   self.Role.String(),
		ClusterID:   v.ClusterID,
		Epoch:       v.Epoch,
		TableDigest: digestHex(self.TableDigest),
	}
	owners := new([slots.Count]string)
	for s := range slots.Count {
		owners[s] = string(v.Slots[s].Owner)
	}
	for _, m := range v.Members {
		if m.Role == cluster.RoleObserver {
			continue
		}
		sm := statusMember{
			ID:       string(m.ID),
			Role:     m.Role.String(),
			Addr:     m.Addr,
			State:    m.State.String(),
			Draining: m.Draining,
			Ranges:   viewRanges(v, m.ID),
			View:     viewNotChecked,
		}
		for _, r := range sm.Ranges {
			sm.Slots += r.count()
			sm.Epoch = max(sm.Epoch, r.Epoch)
		}
		if memberLive(sm.State) {
			sm.TableEpoch, sm.TableDigest = m.TableEpoch, digestHex(m.TableDigest)
			sm.View = viewAgrees
			if m.TableDigest != self.TableDigest {
				sm.View = viewDiffers
				st.Problems = append(st.Problems, statusProblem{Kind: problemDisagree, Member: sm.ID,
					Text: fmt.Sprintf("%s %s announces a table at epoch %d (digest %s), the merged table is at epoch %d (digest %s)",
						sm.Role, shortID(sm.ID), m.TableEpoch, sm.TableDigest, v.Epoch, st.TableDigest)})
			}
		}
		st.Members = append(st.Members, sm)
	}
	if fill != nil {
		fill(st)
	}
	finishStatus(st, owners)
	return st
}

// fillAddrs looks up, over RESP, the address of members the gossip view
// lists without one: a node that died before the observer joined is known
// to it only as a slot owner, but the live nodes' CLUSTER NODES (kept from
// their own gossip and their --dir) still has its address. The first live
// node that answers is asked; failures leave the addresses empty.
func fillAddrs(ctx context.Context, st *clusterStatus, password string, timeout time.Duration) {
	missing := 0
	for _, m := range st.Members {
		if m.Addr == "" {
			missing++
		}
	}
	if missing == 0 {
		return
	}
	for _, m := range st.Members {
		if m.Addr == "" || !memberLive(m.State) || m.Role != memberRoleNode {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		text, err := nodeCall(cctx, m.Addr, password, "CLUSTER", "NODES")
		cancel()
		if err != nil {
			continue
		}
		mv, err := viewFromClusterNodes(text)
		if err != nil {
			continue
		}
		byID := map[string]string{}
		for _, vm := range mv.Members {
			byID[vm.ID] = vm.Addr
		}
		for i := range st.Members {
			if st.Members[i].Addr == "" {
				st.Members[i].Addr = byID[st.Members[i].ID]
			}
		}
		return
	}
}

// viewRanges returns the slot ranges id owns in v, split where the epoch
// changes.
func viewRanges(v *cluster.View, id cluster.NodeID) []statusRange {
	var rs []statusRange
	for s := range slots.Count {
		o := v.Slots[s]
		if o.Owner != id {
			continue
		}
		if n := len(rs); n > 0 && int(rs[n-1].Last) == s-1 && rs[n-1].Epoch == o.Epoch {
			rs[n-1].Last = uint16(s)
		} else {
			rs = append(rs, statusRange{First: uint16(s), Last: uint16(s), Epoch: o.Epoch})
		}
	}
	return rs
}

func digestHex(d uint64) string { return fmt.Sprintf("%016x", d) }

// finishStatus adds what both readers report the same way: slots of
// members that are not live, unassigned slots, and the verdict.
func finishStatus(st *clusterStatus, owners *[slots.Count]string) {
	for _, m := range st.Members {
		if m.Slots > 0 && !memberLive(m.State) {
			st.Problems = append(st.Problems, statusProblem{Kind: problemDeadOwner, Member: m.ID, Slots: m.Ranges,
				Text: fmt.Sprintf("%s %s (%s) is %s and owns %d slots (%s): they answer CLUSTERDOWN until it returns",
					m.Role, shortID(m.ID), addrOrNone(m.Addr), m.State, m.Slots, formatStatusRanges(m.Ranges))})
		}
	}
	st.Unassigned = unassignedRanges(owners)
	if len(st.Unassigned) > 0 {
		n := 0
		for _, r := range st.Unassigned {
			n += r.count()
		}
		st.Problems = append(st.Problems, statusProblem{Kind: problemUnassigned, Slots: st.Unassigned,
			Text: fmt.Sprintf("%d slots are not assigned to any node (%s)", n, formatStatusRanges(st.Unassigned))})
	}
	st.Consistent = len(st.Problems) == 0
	if st.Problems == nil {
		st.Problems = []statusProblem{}
	}
	if st.Unassigned == nil {
		st.Unassigned = []statusRange{}
	}
	for i := range st.Members {
		if st.Members[i].Ranges == nil {
			st.Members[i].Ranges = []statusRange{}
		}
	}
}

// Member roles and states as the status prints them (the cluster
// package's names).
const (
	memberRoleNode     = "node"
	memberRoleProxy    = "proxy"
	memberRoleObserver = "observer"

	memberAlive   = "alive"
	memberSuspect = "suspect"
	memberDead    = "dead"
	memberLeft    = "left"
)

// memberLive reports whether a member in state s is taken to be up.
func memberLive(s string) bool { return s == memberAlive || s == memberSuspect }

// statusRange is an inclusive range of slots; Epoch is 0 when unknown.
type statusRange struct {
	First uint16 `json:"first"`
	Last  uint16 `json:"last"`
	Epoch uint64 `json:"epoch,omitempty"`
}

func (r statusRange) count() int { return int(r.Last) - int(r.First) + 1 }

func (r statusRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last))
}

// formatEpochRanges writes ranges with their epochs, merging adjacent
// ones: a scale-out moves slots in many small steps, each at its own
// epoch, and one entry per step made lines of a thousand characters. A
// merged range shows the span of its parts' epochs: "4096-5460@2..23".
func formatEpochRanges(rs []statusRange) string {
	var parts []string
	for i := 0; i < len(rs); {
		r, lo, hi := rs[i], rs[i].Epoch, rs[i].Epoch
		j := i + 1
		for ; j < len(rs) && int(rs[j].First) == int(r.Last)+1; j++ {
			r.Last = rs[j].Last
			lo, hi = min(lo, rs[j].Epoch), max(hi, rs[j].Epoch)
		}
		e := strconv.FormatUint(lo, 10)
		if hi != lo {
			e += ".." + strconv.FormatUint(hi, 10)
		}
		parts = append(parts, r.String()+"@"+e)
		i = j
	}
	return strings.Join(parts, ",")
}

// formatStatusRanges prints rs (ascending), adjacent ranges merged.
func formatStatusRanges(rs []statusRange) string {
	var parts []string
	for i := 0; i < len(rs); {
		r := rs[i]
		j := i + 1
		for ; j < len(rs) && int(rs[j].First) == int(r.Last)+1; j++ {
			r.Last = rs[j].Last
		}
		parts = append(parts, r.String())
		i = j
	}
	return strings.Join(parts, ",")
}

// clusterStatus is the command's result, printed as a table or as JSON.
type clusterStatus struct {
	Entry     string `json:"entry"`      // the --join or --resp address(es) the view was read from
	EntryID   string `json:"entry_id"`   // the observer's or the --resp member's id
	EntryRole string `json:"entry_role"` // observer, node or proxy
	ClusterID string `json:"cluster_id,omitempty"`
	Epoch     uint64 `json:"epoch"` // the entry's table epoch
	// TableDigest is the digest of the observer's merged table (--join).
	TableDigest string          `json:"table_digest,omitempty"`
	Members     []statusMember  `json:"members"`
	Unassigned  []statusRange   `json:"unassigned"`
	Problems    []statusProblem `json:"problems"`
	Consistent  bool            `json:"consistent"`
}

// statusMember is one member as the entry sees it, with what its own
// answer said.
type statusMember struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Addr  string `json:"addr"`
	State string `json:"state"`
	// Draining: the node is being emptied (cluster drain, --drain-on-exit);
	// --join only.
	Draining bool          `json:"draining,omitempty"`
	Epoch    uint64        `json:"epoch,omitempty"` // config epoch (nodes)
	Slots    int           `json:"slots"`
	Ranges   []statusRange `json:"ranges"`
	// The table the member announces in its gossip metadata (--join).
	TableEpoch  uint64 `json:"table_epoch,omitempty"`
	TableDigest string `json:"table_digest,omitempty"`
	// View is what checking the member's own view found: "agrees",
	// "differs", "unreachable" (--resp), or "not checked" (not live, or
	// no address).
	View  string `json:"view"`
	Error string `json:"error,omitempty"` // why it was unreachable
}

// Member view checks.
const (
	viewAgrees      = "agrees"
	viewDiffers     = "differs"
	viewUnreachable = "unreachable"
	viewNotChecked  = "not checked"
)

// statusProblem is one inconsistency.
type statusProblem struct {
	Kind   string        `json:"kind"`
	Member string        `json:"member,omitempty"`
	Slots  []statusRange `json:"slots,omitempty"`
	Text   string        `json:"text"`
}

// Problem kinds.
const (
	problemUnassigned  = "unassigned"    // slots no node owns
	problemDeadOwner   = "dead-owner"    // slots owned by a member not alive
	problemDisagree    = "disagree"      // a member's table differs from the entry's
	problemUnreachable = "unreachable"   // a live member did not answer
	problemIdentity    = "identity"      // an address answers as another member
	problemClusterID   = "cluster-id"    // members report different cluster ids
	problemNoAddress   = "no-address"    // a live member without an address
	problemAddrClash   = "address-clash" // two live members with one address
)

func slotOwnerText(id string) string {
	if id == "" {
		return "unassigned"
	}
	return "owned by " + shortID(id)
}

func addrOrNone(s string) string {
	if s == "" {
		return "no address"
	}
	return s
}

// shortID abbreviates a member id for prose (tables and JSON keep it whole).
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func unassignedRanges(owners *[slots.Count]string) []statusRange {
	var rs []statusRange
	for s := range slots.Count {
		if owners[s] != "" {
			continue
		}
		if n := len(rs); n > 0 && int(rs[n-1].Last) == s-1 {
			rs[n-1].Last = uint16(s)
		} else {
			rs = append(rs, statusRange{First: uint16(s), Last: uint16(s)})
		}
	}
	return rs
}

// writeStatusTable prints the status for people.
func writeStatusTable(w io.Writer, st *clusterStatus) {
	id := st.ClusterID
	switch {
	case id != "":
	case st.EntryRole == cluster.RoleObserver.String():
		id = "(no id: not bootstrapped yet)"
	default:
		id = "(id not reported)"
	}
	fmt.Fprintf(w, "cluster %s  epoch %d  read from %s %s at %s\n\n", id, st.Epoch, st.EntryRole, shortID(st.EntryID), st.Entry)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tADDRESS\tSTATE\tEPOCH\tSLOTS\tRANGES\tVIEW")
	members := slices.Clone(st.Members)
	// Nodes first, then proxies; by address within a role.
	slices.SortStableFunc(members, func(a, b statusMember) int {
		if a.Role != b.Role {
			if a.Role == memberRoleNode {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Addr, b.Addr)
	})
	for _, m := range members {
		epoch, ranges := "-", "-"
		if m.Epoch != 0 {
			epoch = strconv.FormatUint(m.Epoch, 10)
		}
		if len(m.Ranges) > 0 {
			ranges = formatStatusRanges(m.Ranges)
			// Ranges claimed at different epochs (after a handoff) each
			// show theirs, adjacent ones merged (--json keeps each).
			if slices.ContainsFunc(m.Ranges, func(r statusRange) bool { return r.Epoch != m.Epoch }) {
				ranges = formatEpochRanges(m.Ranges)
			}
		}
		state := m.State
		if m.Draining {
			state += ",draining"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, m.Role, addrOrNone(m.Addr), state, epoch, m.Slots, ranges, m.View)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if len(st.Problems) == 0 {
		checked := 0
		for _, m := range st.Members {
			if m.View == viewAgrees {
				checked++
			}
		}
		fmt.Fprintf(w, "consistent: every slot is served by a live node, and the %d members checked agree on the table\n", checked)
		return
	}
	if len(st.Problems) == 1 {
		fmt.Fprintln(w, "1 problem:")
	} else {
		fmt.Fprintf(w, "%d problems:\n", len(st.Problems))
	}
	for _, p := range st.Problems {
		fmt.Fprintf(w, "  %-13s %s\n", p.Kind, p.Text)
	}
}
