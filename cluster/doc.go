// Package cluster is shardgate's membership and slot-ownership layer.
//
// Nodes and proxies find each other with hashicorp/memberlist (SWIM gossip)
// and agree on who owns each of the 16384 hash slots through a table of
// (owner, epoch) entries. The table is a join-semilattice: two tables merge
// slot by slot and the entry with the higher (epoch, owner) wins, so every
// member that has seen the same claims holds the same table whatever order
// the gossip delivered them in, and duplicates are harmless.
//
// Claims are made in only three ways:
//
//   - Bootstrap: with Config.BootstrapExpect = N, once exactly N nodes with
//     an empty table and no cluster id see each other alive, each computes
//     the same assignment (node ids sorted, contiguous ranges split as
//     redis-cli --cluster create does) at epoch 1 and the same cluster id
//     (a hash of the sorted ids), and persists both. A node with a cluster
//     id never bootstraps again; an empty node that meets a cluster adopts
//     its id and owns nothing.
//   - Handoff: only a slot's current owner may give it away; the new claim
//     carries the highest epoch it knows plus one.
//   - Reassignment of a dead node's slots (Config.ReassignAfter, opt-in):
//     the live node with the lowest id claims them for the live nodes at a
//     higher epoch, with a loud warning, because the dead node's data for
//     those slots is lost.
//   - Minority fence (Cut): with reassignment on, a node that hears from no
//     majority of the nodes (gossip and heartbeats) stops serving well
//     before the majority may reassign its slots.
//
// The whole table travels in memberlist's push/pull exchange
// (LocalState/MergeRemoteState); changes travel as broadcasts named by slot
// range, so a newer claim for the same slots replaces an older one still
// queued. Node metadata carries identity only (id, boot id, role, RESP
// address, cluster id, table digest); a member whose digest stays different
// from ours is sent our full table directly. Members of another cluster id
// are refused by the alive and merge delegates; a gossip key
// (Config.Key) encrypts everything, so members with another key cannot
// talk at all.
//
// memberlist calls the delegates from its own goroutines; they decode,
// queue an event for the cluster's single state goroutine and return, so
// they never block memberlist. That goroutine owns the table and the member
// records, persists them in Config.Dir (atomically, like Redis's
// nodes.conf) and publishes an immutable View through an atomic pointer;
// Changes returns a channel closed when a newer View is published.
//
// The table logic (merge, encode, bootstrap assignment) is pure and lives
// in table.go and encode.go; memberlist is a thin adapter in delegate.go.
package cluster
