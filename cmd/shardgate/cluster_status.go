package main

// shardgate cluster status: the operator's view of a gossip cluster.
//
// How it reads the cluster. The command does not join the gossip: package
// cluster has no observer role, and a short-lived member would be a
// nuisance to every other one. It would be taken for one more proxy
// (proxies spread the slot ranges they present over all live proxies, so
// cluster-aware clients would be sent to this command's address), every
// member's probes must reach it back over UDP and TCP (often not the case
// from an operator's laptop or a container host), and every member would
// keep a record of it as left until that is reaped. Instead it reads the
// cluster over RESP, as any client can, first from the address given with
// --join (any node or proxy; in docker compose, the proxy's published
// port), then from every live member that first view lists:
//
//   - a proxy in gossip mode describes its view in INFO's cluster section:
//     cluster id, table epoch and one memberN line per member (id, role,
//     address, state, slot ranges);
//   - a node answers CLUSTER MYID, CLUSTER NODES (Redis Cluster's format:
//     address, fail flags, config epoch, slot ranges) and CLUSTER INFO
//     (cluster_current_epoch), and INFO's cluster section too if it lists
//     members as a proxy does.
//
// Comparing what each member reports finds more than comparing table
// digests would: which slots they disagree on and who owns them on each
// side. What RESP does not carry is the epoch of every slot range: a
// node's ranges are shown with its config epoch as it reports it itself
// (the highest epoch of its claims, Redis Cluster's one epoch per node).
//
// No gossip key is needed, and none is taken: RESP is not encrypted by
// it. --password authenticates to members started with --requirepass.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

const clusterUsage = `Usage: shardgate cluster <command> [flags]

Commands:
  status  print the members, the slot table and what is inconsistent

Run 'shardgate cluster <command> --help' for the flags of a command.
`

// Exit codes of cluster status besides 0 (consistent) and 2 (bad usage).
const (
	exitUnreachable  = 1 // no --join address answered with a cluster view
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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, clusterUsage)
		return 0
	}
	fmt.Fprintf(stderr, "shardgate cluster: unknown command %q\n\n%s", args[0], clusterUsage)
	return 2
}

func runClusterStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate cluster status", flag.ContinueOnError)
	join := fs.String("join", "", "RESP address (host:port) of any node or proxy of the cluster; a comma-separated list is tried in order")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	password := fs.String("password", "", "password sent with AUTH to every member (their --requirepass)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long each member may take to connect and answer")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: shardgate cluster status --join host:port [flags]

Print the members of a gossip cluster (id, role, RESP address, state), the
slot ranges of every node with its epoch, and anything inconsistent:
unassigned slots, slots of dead nodes, members that disagree on the slot
table, live members that cannot be reached. The view is read over RESP
from the --join member and then from every live member it lists.

Exit status: 0 consistent, 3 inconsistent, 1 no view could be read,
2 bad usage.

Flags:
`)
		fs.PrintDefaults()
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	var entries []string
	for _, a := range strings.Split(*join, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			fmt.Fprintf(stderr, "shardgate cluster status: bad --join address %q: %v\n", a, err)
			return 2
		}
		entries = append(entries, a)
	}
	if len(entries) == 0 {
		fmt.Fprintf(stderr, "shardgate cluster status: --join is required\n")
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "shardgate cluster status: --timeout must be a positive duration, got %s\n", *timeout)
		return 2
	}
	f := &respFetcher{password: *password, timeout: *timeout}
	var (
		st   *clusterStatus
		errs []error
	)
	for _, e := range entries {
		s, err := collectStatus(ctx, e, f.fetch)
		if err == nil {
			st = s
			break
		}
		errs = append(errs, err)
	}
	if st == nil {
		fmt.Fprintf(stderr, "shardgate cluster status: %v\n", errors.Join(errs...))
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

// Member roles and states as the status prints them (the cluster
// package's names).
const (
	memberRoleNode  = "node"
	memberRoleProxy = "proxy"

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

func formatStatusRanges(rs []statusRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// viewMember is one member as some member's view describes it.
type viewMember struct {
	ID     string
	Role   string
	Addr   string
	State  string
	Epoch  uint64 // the config epoch, when the view says (CLUSTER NODES)
	Ranges []statusRange
}

// memberView is what one member reports about the cluster.
type memberView struct {
	Self      string // the reporting member's id
	Role      string // the reporting member's role
	ClusterID string // "" when the member does not say (nodes)
	Epoch     uint64 // the table's epoch
	Members   []viewMember
}

func (v *memberView) member(id string) (viewMember, bool) {
	for _, m := range v.Members {
		if m.ID == id {
			return m, true
		}
	}
	return viewMember{}, false
}

// owners returns the owner of every slot in the view ("" = unassigned).
func (v *memberView) owners() *[slots.Count]string {
	o := new([slots.Count]string)
	for _, m := range v.Members {
		for _, r := range m.Ranges {
			for s := int(r.First); s <= int(r.Last); s++ {
				o[s] = m.ID
			}
		}
	}
	return o
}

// fetchFunc reads one member's view from its RESP address.
type fetchFunc func(ctx context.Context, addr string) (*memberView, error)

// clusterStatus is the command's result, printed as a table or as JSON.
type clusterStatus struct {
	Entry      string          `json:"entry"` // the --join address the view was read from
	EntryID    string          `json:"entry_id"`
	EntryRole  string          `json:"entry_role"`
	ClusterID  string          `json:"cluster_id,omitempty"`
	Epoch      uint64          `json:"epoch"` // the entry's table epoch
	Members    []statusMember  `json:"members"`
	Unassigned []statusRange   `json:"unassigned"`
	Problems   []statusProblem `json:"problems"`
	Consistent bool            `json:"consistent"`
}

// statusMember is one member as the entry sees it, with what its own
// answer said.
type statusMember struct {
	ID     string        `json:"id"`
	Role   string        `json:"role"`
	Addr   string        `json:"addr"`
	State  string        `json:"state"`
	Epoch  uint64        `json:"epoch,omitempty"` // config epoch (nodes)
	Slots  int           `json:"slots"`
	Ranges []statusRange `json:"ranges"`
	// View is what checking the member's own view found: "agrees",
	// "differs", "unreachable", or "not checked" (not live, no address).
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

// collectStatus reads the entry's view, then the view of every live
// member it lists (concurrently), and compares them.
func collectStatus(ctx context.Context, entry string, fetch fetchFunc) (*clusterStatus, error) {
	ref, err := fetch(ctx, entry)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", entry, err)
	}
	type result struct {
		view *memberView
		err  error
	}
	results := make(map[string]result)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, m := range ref.Members {
		if m.ID == ref.Self || !memberLive(m.State) || m.Addr == "" {
			continue
		}
		wg.Go(func() {
			v, err := fetch(ctx, m.Addr)
			mu.Lock()
			results[m.ID] = result{v, err}
			mu.Unlock()
		})
	}
	wg.Wait()

	st := &clusterStatus{
		Entry:     entry,
		EntryID:   ref.Self,
		EntryRole: ref.Role,
		ClusterID: ref.ClusterID,
		Epoch:     ref.Epoch,
	}
	add := func(p statusProblem) { st.Problems = append(st.Problems, p) }
	refOwners := ref.owners()
	addrs := make(map[string]string) // live member address → id
	for _, m := range ref.Members {
		sm := statusMember{ID: m.ID, Role: m.Role, Addr: m.Addr, State: m.State, Epoch: m.Epoch, Ranges: m.Ranges, View: viewNotChecked}
		for _, r := range m.Ranges {
			sm.Slots += r.count()
		}
		if memberLive(m.State) && m.Addr != "" {
			if other, ok := addrs[m.Addr]; ok {
				add(statusProblem{Kind: problemAddrClash, Member: m.ID,
					Text: fmt.Sprintf("%s and %s are both live at %s", shortID(other), shortID(m.ID), m.Addr)})
			}
			addrs[m.Addr] = m.ID
		}
		switch {
		case m.ID == ref.Self:
			sm.View = viewAgrees
		case memberLive(m.State) && m.Addr == "":
			add(statusProblem{Kind: problemNoAddress, Member: m.ID, Text: fmt.Sprintf("%s %s is %s but has no address", m.Role, shortID(m.ID), m.State)})
		case memberLive(m.State):
			r := results[m.ID]
			if r.err != nil {
				sm.View, sm.Error = viewUnreachable, r.err.Error()
				add(statusProblem{Kind: problemUnreachable, Member: m.ID,
					Text: fmt.Sprintf("%s %s at %s is %s in the view but did not answer: %v", m.Role, shortID(m.ID), m.Addr, m.State, r.err)})
				break
			}
			sm.View = viewAgrees
			for _, p := range compareViews(ref, refOwners, m, r.view) {
				sm.View = viewDiffers
				add(p)
			}
			if r.view.Self != m.ID {
				break
			}
			// A node knows its own config epoch and ranges best.
			if own, ok := r.view.member(m.ID); ok && own.Epoch != 0 {
				sm.Epoch = own.Epoch
			}
		}
		if sm.Epoch != 0 {
			for i := range sm.Ranges {
				if sm.Ranges[i].Epoch == 0 {
					sm.Ranges[i].Epoch = sm.Epoch
				}
			}
		}
		if sm.Slots > 0 && !memberLive(m.State) {
			add(statusProblem{Kind: problemDeadOwner, Member: m.ID, Slots: m.Ranges,
				Text: fmt.Sprintf("%s %s (%s) is %s and owns %d slots (%s): they answer CLUSTERDOWN until it returns",
					m.Role, shortID(m.ID), addrOrNone(m.Addr), m.State, sm.Slots, formatStatusRanges(m.Ranges))})
		}
		st.Members = append(st.Members, sm)
	}
	st.Unassigned = unassignedRanges(refOwners)
	if len(st.Unassigned) > 0 {
		n := 0
		for _, r := range st.Unassigned {
			n += r.count()
		}
		add(statusProblem{Kind: problemUnassigned, Slots: st.Unassigned,
			Text: fmt.Sprintf("%d slots are not assigned to any node (%s)", n, formatStatusRanges(st.Unassigned))})
	}
	st.Consistent = len(st.Problems) == 0
	if st.Problems == nil {
		st.Problems = []statusProblem{}
	}
	if st.Unassigned == nil {
		st.Unassigned = []statusRange{}
	}
	return st, nil
}

// compareViews lists how member m's own view v differs from the entry's
// view ref.
func compareViews(ref *memberView, refOwners *[slots.Count]string, m viewMember, v *memberView) []statusProblem {
	var ps []statusProblem
	if v.Self != m.ID {
		return append(ps, statusProblem{Kind: problemIdentity, Member: m.ID,
			Text: fmt.Sprintf("%s answers as %s %s, not as %s %s", m.Addr, v.Role, shortID(v.Self), m.Role, shortID(m.ID))})
	}
	if ref.ClusterID != "" && v.ClusterID != "" && v.ClusterID != ref.ClusterID {
		ps = append(ps, statusProblem{Kind: problemClusterID, Member: m.ID,
			Text: fmt.Sprintf("%s %s reports cluster id %s, the entry %s", m.Role, shortID(m.ID), v.ClusterID, ref.ClusterID)})
	}
	theirs := v.owners()
	var diff []statusRange
	first := -1
	for s := range slots.Count {
		if theirs[s] == refOwners[s] {
			continue
		}
		if first < 0 {
			first = s
		}
		if n := len(diff); n > 0 && int(diff[n-1].Last) == s-1 {
			diff[n-1].Last = uint16(s)
		} else {
			diff = append(diff, statusRange{First: uint16(s), Last: uint16(s)})
		}
	}
	if first >= 0 {
		n := 0
		for _, r := range diff {
			n += r.count()
		}
		ps = append(ps, statusProblem{Kind: problemDisagree, Member: m.ID, Slots: diff,
			Text: fmt.Sprintf("%s %s disagrees with the entry on %d slots (%s); slot %d is %s there, %s here",
				m.Role, shortID(m.ID), n, formatStatusRanges(diff), first, slotOwnerText(theirs[first]), slotOwnerText(refOwners[first]))})
	} else if v.Epoch != ref.Epoch && v.Epoch != 0 && ref.Epoch != 0 {
		ps = append(ps, statusProblem{Kind: problemDisagree, Member: m.ID,
			Text: fmt.Sprintf("%s %s has table epoch %d, the entry %d", m.Role, shortID(m.ID), v.Epoch, ref.Epoch)})
	}
	return ps
}

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
	if id == "" {
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
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", m.ID, m.Role, addrOrNone(m.Addr), m.State, epoch, m.Slots, ranges, m.View)
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

// respFetcher reads member views over RESP.
type respFetcher struct {
	password string
	timeout  time.Duration
}

// errStaticProxy: the --join address is a proxy with a static --nodes
// list: there is no gossip cluster to describe.
var errStaticProxy = errors.New("a proxy with a static --nodes list, not a member of a gossip cluster")

func (f *respFetcher) fetch(ctx context.Context, addr string) (*memberView, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	c, err := dialStatusConn(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if f.password != "" {
		if _, err := c.do("AUTH", f.password); err != nil {
			return nil, err
		}
	}
	info, err := c.do("INFO", "cluster")
	if err != nil {
		return nil, err
	}
	fields := parseInfoFields(string(info.Str))
	if v, ok, err := viewFromInfo(fields); ok || err != nil {
		return v, err
	}
	if fields["cluster_mode"] == "static" {
		return nil, errStaticProxy
	}
	myID, err := c.do("CLUSTER", "MYID")
	if err != nil {
		return nil, err
	}
	nodes, err := c.do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	cinfo, err := c.do("CLUSTER", "INFO")
	if err != nil {
		return nil, err
	}
	v, err := viewFromClusterNodes(string(nodes.Str))
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	v.Self, v.Role = string(myID.Str), memberRoleNode
	if e, err := strconv.ParseUint(parseInfoFields(string(cinfo.Str))["cluster_current_epoch"], 10, 64); err == nil {
		v.Epoch = e
	}
	if id := fields["cluster_id"]; id != "" {
		v.ClusterID = id
	}
	return v, nil
}

// parseInfoFields splits an INFO (or CLUSTER INFO) text into its fields.
func parseInfoFields(s string) map[string]string {
	f := make(map[string]string)
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f
}

// viewFromInfo reads a view from INFO's cluster section, when it lists
// the members (memberN:id=...,role=...,addr=...,state=...,slots=...), as a
// proxy in gossip mode does. ok is false when it lists none.
func viewFromInfo(fields map[string]string) (v *memberView, ok bool, err error) {
	v = &memberView{ClusterID: fields["cluster_id"], Self: fields["cluster_my_id"]}
	if e := fields["cluster_table_epoch"]; e != "" {
		if v.Epoch, err = strconv.ParseUint(e, 10, 64); err != nil {
			return nil, true, fmt.Errorf("INFO cluster: bad cluster_table_epoch %q", e)
		}
	}
	for i := 0; ; i++ {
		line, found := fields["member"+strconv.Itoa(i)]
		if !found {
			break
		}
		m, err := parseMemberLine(line)
		if err != nil {
			return nil, true, fmt.Errorf("INFO cluster: member%d: %w", i, err)
		}
		v.Members = append(v.Members, m)
	}
	if len(v.Members) == 0 {
		return nil, false, nil
	}
	self, found := v.member(v.Self)
	if !found {
		return nil, true, fmt.Errorf("INFO cluster: cluster_my_id %q is not among the members", v.Self)
	}
	v.Role = self.Role
	return v, true, nil
}

// parseMemberLine reads "id=...,role=...,addr=...,state=...,slots=0-5,9":
// a comma starts a new key=value pair unless what follows has no '='
// (slot ranges).
func parseMemberLine(line string) (viewMember, error) {
	kv := make(map[string]string)
	last := ""
	for part := range strings.SplitSeq(line, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			if last == "" {
				return viewMember{}, fmt.Errorf("bad field %q", part)
			}
			kv[last] += "," + part
			continue
		}
		kv[k], last = val, k
	}
	m := viewMember{ID: kv["id"], Role: kv["role"], Addr: kv["addr"], State: kv["state"]}
	if m.ID == "" {
		return viewMember{}, fmt.Errorf("no id in %q", line)
	}
	switch m.Role {
	case memberRoleNode, memberRoleProxy:
	default:
		return viewMember{}, fmt.Errorf("member %s: unknown role %q", m.ID, m.Role)
	}
	switch m.State {
	case memberAlive, memberSuspect, memberDead, memberLeft:
	default:
		return viewMember{}, fmt.Errorf("member %s: unknown state %q", m.ID, m.State)
	}
	rs, err := parseStatusRanges(kv["slots"])
	if err != nil {
		return viewMember{}, fmt.Errorf("member %s: %w", m.ID, err)
	}
	m.Ranges = rs
	return m, nil
}

// parseStatusRanges reads "0-5460,5462" (empty: none).
func parseStatusRanges(s string) ([]statusRange, error) {
	var rs []statusRange
	for part := range strings.SplitSeq(s, ",") {
		if part == "" {
			continue
		}
		r, err := parseStatusRange(part)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func parseStatusRange(s string) (statusRange, error) {
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		b = a
	}
	first, err1 := strconv.ParseUint(a, 10, 16)
	last, err2 := strconv.ParseUint(b, 10, 16)
	if err1 != nil || err2 != nil || first > last || last >= slots.Count {
		return statusRange{}, fmt.Errorf("bad slot range %q", s)
	}
	return statusRange{First: uint16(first), Last: uint16(last)}, nil
}

// viewFromClusterNodes reads Redis Cluster's CLUSTER NODES format:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot>...
//
// Every line is a node (CLUSTER NODES has no place for proxies). A node
// flagged fail is dead, fail? suspect; slots being migrated or imported
// ("[slot->-id]", "[slot-<-id]") are not ownership and are skipped.
func viewFromClusterNodes(text string) (*memberView, error) {
	v := &memberView{}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("short line %q", line)
		}
		m := viewMember{ID: f[0], Role: memberRoleNode, State: memberAlive}
		addr, _, _ := strings.Cut(f[1], ",")
		addr, _, _ = strings.Cut(addr, "@")
		if h, p, err := net.SplitHostPort(addr); err == nil && h != "" && p != "0" {
			m.Addr = addr
		}
		for fl := range strings.SplitSeq(f[2], ",") {
			switch fl {
			case "fail":
				m.State = memberDead
			case "fail?":
				if m.State == memberAlive {
					m.State = memberSuspect
				}
			}
		}
		e, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad config epoch in %q", line)
		}
		m.Epoch = e
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			r, err := parseStatusRange(s)
			if err != nil {
				return nil, err
			}
			m.Ranges = append(m.Ranges, r)
		}
		slices.SortFunc(m.Ranges, func(a, b statusRange) int { return int(a.First) - int(b.First) })
		v.Members = append(v.Members, m)
		v.Epoch = max(v.Epoch, e)
	}
	if len(v.Members) == 0 {
		return nil, errors.New("no nodes")
	}
	slices.SortFunc(v.Members, func(a, b viewMember) int { return strings.Compare(a.ID, b.ID) })
	return v, nil
}

// statusConn is a minimal RESP2 client: one command at a time.
type statusConn struct {
	c   net.Conn
	buf []byte // the reply being read
}

func dialStatusConn(ctx context.Context, addr string) (*statusConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return &statusConn{c: c}, nil
}

func (r *statusConn) close() { r.c.Close() }

// do sends one command and returns its reply; an error reply is an error.
func (r *statusConn) do(args ...string) (resp.Value, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	if _, err := r.c.Write(resp.AppendCommand(nil, bs)); err != nil {
		return resp.Value{}, err
	}
	r.buf = nil // the reply's strings alias the buffer: a new one per command
	chunk := make([]byte, 16<<10)
	for {
		v, n, err := resp.ParseValue(r.buf)
		if err != nil {
			return resp.Value{}, fmt.Errorf("%s: %w", args[0], err)
		}
		if n > 0 {
			if v.IsError() {
				name := args[0] // never the AUTH password
				if name != "AUTH" && len(args) > 1 {
					name += " " + args[1]
				}
				return resp.Value{}, fmt.Errorf("%s: %s", name, v.Str)
			}
			return v, nil
		}
		k, err := r.c.Read(chunk)
		if k > 0 {
			r.buf = append(r.buf, chunk[:k]...)
			continue
		}
		if err != nil {
			return resp.Value{}, err
		}
	}
}
