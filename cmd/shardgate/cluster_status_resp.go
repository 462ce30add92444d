package main

// The RESP reader of shardgate cluster status (--resp): the view read over
// RESP, as any client can, first from the given node or proxy, then from
// every live member that first view lists:
//
//   - a proxy in gossip mode describes its view in INFO's cluster section:
//     cluster id, table epoch and one memberN line per member (id, role,
//     address, state, slot ranges);
//   - a node answers CLUSTER MYID, CLUSTER NODES (Redis Cluster's format:
//     address, fail flags, config epoch, slot ranges) and CLUSTER INFO
//     (cluster_current_epoch), and INFO's cluster section too if it lists
//     members as a proxy does.
//
// Comparing what each member reports finds which slots they disagree on
// and who owns them on each side. A node's ranges are shown with its
// config epoch as it reports it itself (Redis Cluster has one epoch per
// node, the highest of its claims).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

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
	// Draining: the reporting node says it is being emptied (its
	// SHARDGATE STATUS; false where it has none, as a Redis node).
	Draining bool
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
			sm.Draining = ref.Draining
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
			sm.Draining = r.view.Draining
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
		st.Members = append(st.Members, sm)
	}
	finishStatus(st, refOwners)
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
	// Who is alive: a member cut off from the others (a partition the
	// status command's host sees across) still has the table, but not
	// the others alive; which member was asked first must not decide
	// whether the cluster looks whole.
	for _, x := range ref.Members {
		theirs, ok := v.member(x.ID)
		if !ok || x.ID == m.ID || memberLive(theirs.State) == memberLive(x.State) {
			continue
		}
		ps = append(ps, statusProblem{Kind: problemDisagree, Member: m.ID,
			Text: fmt.Sprintf("%s %s sees %s %s %s, the entry sees it %s", m.Role, shortID(m.ID), x.Role, shortID(x.ID), theirs.State, x.State)})
	}
	return ps
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
	if err := c.auth(f.password); err != nil {
		return nil, err
	}
	info, err := c.do("INFO", "cluster")
	if err != nil {
		return nil, err
	}
	fields := parseInfoFields(string(info.Str))
	if v, ok, err := viewFromInfo(fields); ok || err != nil {
		if err == nil && v.Role == memberRoleNode {
			v.Draining = nodeDraining(c)
		}
		return v, err
	}
	if fields["cluster_mode"] == "static" {
		return nil, errStaticProxy
	}
	// A shardgate node lists the members in SHARDGATE STATUS (with the
	// proxies and the members that left, which CLUSTER NODES cannot
	// show); a Redis Cluster node has no such command.
	if st, err := c.do("SHARDGATE", "STATUS"); err == nil {
		sf := parseInfoFields(string(st.Str))
		if v, ok, err := viewFromInfo(sf); ok || err != nil {
			if err == nil && v.Role == memberRoleNode {
				v.Draining = sf["draining"] == "1"
			}
			return v, err
		}
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
	v.Draining = nodeDraining(c)
	return v, nil
}

// nodeDraining asks a node's SHARDGATE STATUS whether it is draining; a
// node without the command (a Redis Cluster node) is not.
func nodeDraining(c *statusConn) bool {
	st, err := c.do("SHARDGATE", "STATUS")
	if err != nil {
		return false
	}
	return parseInfoFields(string(st.Str))["draining"] == "1"
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
		if m.Role == memberRoleObserver {
			// Another `cluster status --join` looking on: it owns and
			// serves nothing, and its own status leaves observers out.
			continue
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

// parseMemberLine reads "id=...,role=...,addr=...,state=...,slots=0-5 9"
// (ranges separated by spaces; a proxy before that used commas, so a
// comma starts a new key=value pair only if what follows has an '=').
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
	case memberRoleNode, memberRoleProxy, memberRoleObserver:
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
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
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
// auth sends AUTH password unless it is empty. A member that has no
// password (a proxy on loopback in front of nodes that want one) is
// reached all the same, as redis-cli -a reaches it.
func (r *statusConn) auth(password string) error {
	if password == "" {
		return nil
	}
	_, err := r.do("AUTH", password)
	if err != nil && strings.HasSuffix(err.Error(), resp.ErrAuthNoPassword) {
		return nil
	}
	return err
}

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
