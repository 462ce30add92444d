package proxytest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/shardgate/shardgate/cluster"
)

// Source is a cluster source (proxy.ClusterSource) whose view the test
// sets: a stand-in for a gossip cluster, so that proxy tests can move
// slots, add, kill and remove members at will.
type Source struct {
	mu sync.Mutex
	v  *cluster.View
	ch chan struct{}
}

// NewSource returns a source showing v.
func NewSource(v *cluster.View) *Source { return &Source{v: v, ch: make(chan struct{})} }

// View implements proxy.ClusterSource.
func (s *Source) View() *cluster.View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

// Changes implements proxy.ClusterSource.
func (s *Source) Changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

// Set publishes v and signals the change.
func (s *Source) Set(v *cluster.View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.v = v
	close(s.ch)
	s.ch = make(chan struct{})
}

// ID is a member id made from n: 40 hex digits, ordered as n.
func ID(n int) cluster.NodeID { return cluster.NodeID(fmt.Sprintf("%040x", n)) }

// Slots is a slot table for a test view.
type Slots [cluster.NumSlots]cluster.SlotOwner

// Assign gives slots first..last (inclusive) to id at epoch.
func (t *Slots) Assign(first, last int, id cluster.NodeID, epoch uint64) {
	for s := first; s <= last; s++ {
		t[s] = cluster.SlotOwner{Owner: id, Epoch: epoch}
	}
}

// View makes a view as self sees it: the members sorted by id, a copy of
// the table, the table's highest epoch, and cluster id "test".
func View(self cluster.NodeID, members []cluster.Member, t *Slots) *cluster.View {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b cluster.Member) int { return strings.Compare(string(a.ID), string(b.ID)) })
	tab := new([cluster.NumSlots]cluster.SlotOwner)
	*tab = *t
	var epoch uint64
	for _, o := range tab {
		epoch = max(epoch, o.Epoch)
	}
	return &cluster.View{Self: self, ClusterID: "test", Slots: tab, Members: ms, Epoch: epoch}
}
