package cluster

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/hashicorp/memberlist"
)

// delegate adapts a Cluster to memberlist's delegate interfaces. Every
// callback runs on one of memberlist's goroutines: it reads atomics,
// decodes, queues an event for the state goroutine and returns; none
// blocks or takes a lock held for longer than an append.
type delegate Cluster

var (
	_ memberlist.Delegate      = (*delegate)(nil)
	_ memberlist.EventDelegate = (*delegate)(nil)
	_ memberlist.AliveDelegate = (*delegate)(nil)
	_ memberlist.MergeDelegate = (*delegate)(nil)
)

// NodeMeta returns this member's encoded metadata (kept at most 512 bytes
// by meta.encode).
func (d *delegate) NodeMeta(limit int) []byte {
	b := *d.meta.Load()
	if len(b) > limit {
		return nil
	}
	return b
}

// NotifyMsg receives a claims broadcast or a table sent directly.
func (d *delegate) NotifyMsg(b []byte) {
	m, err := decodeMessage(b)
	if err != nil {
		d.log.Debug("cluster: dropped a bad message", "err", err)
		return
	}
	if m.kind == msgHeartbeat {
		d.answerHeartbeat(m)
		return
	}
	d.in.put(event{kind: evMsg, msg: m})
}

// answerHeartbeat acks a node's heartbeat at once, with what our table
// says it owns.
func (d *delegate) answerHeartbeat(m message) {
	ml := d.mlReady.Load()
	if ml == nil || d.cfg.dropHeartbeat != nil && d.cfg.dropHeartbeat(d.self, m.id) {
		return
	}
	snap := d.snap.Load()
	v := snap.view
	for _, mb := range v.Members {
		if mb.ID != m.id {
			continue
		}
		owned := snap.ownedBy(m.id)
		if owned != m.owned {
			d.in.put(event{kind: evMsg, msg: m}) // the state goroutine sends it our table
		}
		(*Cluster)(d).sendTo(ml, mb, appendHeartbeatAck(nil, v.ClusterID, d.self, m.stamp, owned, v.Epoch), "heartbeat ack")
		return
	}
}

// GetBroadcasts hands memberlist the queued claims.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.bq.GetBroadcasts(overhead, limit)
}

// LocalState returns the whole table of the latest View for push/pull.
func (d *delegate) LocalState(join bool) []byte { return d.snap.Load().state }

// MergeRemoteState merges a peer's whole table (push/pull).
func (d *delegate) MergeRemoteState(b []byte, join bool) {
	if len(b) == 0 {
		return
	}
	d.NotifyMsg(b)
}

func (d *delegate) NotifyJoin(n *memberlist.Node) {
	d.alive.Add(1)
	d.in.put(event{kind: evJoin, node: copyNode(n)})
}

func (d *delegate) NotifyLeave(n *memberlist.Node) {
	d.alive.Add(-1)
	d.in.put(event{kind: evLeave, node: copyNode(n)})
}

func (d *delegate) NotifyUpdate(n *memberlist.Node) {
	d.in.put(event{kind: evUpdate, node: copyNode(n)})
}

// NotifyAlive refuses a member that is not a shardgate member or belongs to
// another cluster id than ours.
func (d *delegate) NotifyAlive(n *memberlist.Node) error {
	return d.admit(n, *d.clusterID.Load())
}

// NotifyMerge refuses a push/pull with a member list holding a member of
// another cluster id (or of two different ones when we have none yet).
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	ours := *d.clusterID.Load()
	for _, n := range peers {
		if err := d.admit(n, ours); err != nil {
			return err
		}
		if ours == "" {
			if m, _ := decodeMeta(n.Meta); m.ClusterID != "" {
				ours = m.ClusterID
			}
		}
	}
	return nil
}

func (d *delegate) admit(n *memberlist.Node, ours string) error {
	m, err := decodeMeta(n.Meta)
	if err != nil {
		return fmt.Errorf("member %q: %w", n.Name, err)
	}
	if string(m.ID) != n.Name {
		return fmt.Errorf("%w: member %q announces id %q", ErrBadEncoding, n.Name, m.ID)
	}
	if ours != "" && m.ClusterID != "" && m.ClusterID != ours {
		return fmt.Errorf("%w: %s has cluster id %s, ours is %s", ErrOtherCluster, m.ID, m.ClusterID, ours)
	}
	return nil
}

// nodeInfo is the part of a memberlist.Node the state goroutine uses,
// copied out of memberlist's structures.
type nodeInfo struct {
	name  string
	ip    net.IP
	port  uint16
	meta  []byte
	state memberlist.NodeStateType
}

func copyNode(n *memberlist.Node) nodeInfo {
	return nodeInfo{
		name:  n.Name,
		ip:    append(net.IP(nil), n.Addr...),
		port:  n.Port,
		meta:  bytes.Clone(n.Meta),
		state: n.State,
	}
}

func (n nodeInfo) gossip() string {
	return net.JoinHostPort(n.ip.String(), strconv.Itoa(int(n.port)))
}

// claimBroadcast is one queued claim. It is named by its slot range, so a
// newer claim for the same range replaces one still queued.
type claimBroadcast struct {
	name string
	msg  []byte
}

var _ memberlist.NamedBroadcast = (*claimBroadcast)(nil)

func newClaimBroadcast(clusterID string, c Claim) *claimBroadcast {
	return &claimBroadcast{
		name: "slots:" + strconv.Itoa(int(c.First)) + "-" + strconv.Itoa(int(c.Last)),
		msg:  appendMessage(nil, msgClaims, clusterID, []Claim{c}),
	}
}

func (b *claimBroadcast) Invalidates(o memberlist.Broadcast) bool {
	nb, ok := o.(memberlist.NamedBroadcast)
	return ok && nb.Name() == b.name
}
func (b *claimBroadcast) Name() string    { return b.name }
func (b *claimBroadcast) Message() []byte { return b.msg }
func (b *claimBroadcast) Finished()       {}

// inbox is the unbounded queue from the callbacks to the state goroutine:
// put never blocks.
type inbox struct {
	mu   sync.Mutex
	evs  []event
	kick chan struct{} // capacity 1
}

func (in *inbox) put(e event) {
	in.mu.Lock()
	in.evs = append(in.evs, e)
	in.mu.Unlock()
	select {
	case in.kick <- struct{}{}:
	default:
	}
}

func (in *inbox) take() []event {
	in.mu.Lock()
	defer in.mu.Unlock()
	evs := in.evs
	in.evs = nil
	return evs
}

type evKind uint8

const (
	evJoin evKind = iota
	evLeave
	evUpdate
	evMsg
)

type event struct {
	kind evKind
	node nodeInfo
	msg  message
}
