package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/cluster"
)

// TestMemberLinesLeaveOutFinishedObservers: SHARDGATE STATUS lists the
// members with their slots, numbered without gaps, and leaves out the
// observers of `cluster status` runs that have ended (their records
// linger until reaped), but not one still watching.
func TestMemberLinesLeaveOutFinishedObservers(t *testing.T) {
	var table [cluster.NumSlots]cluster.SlotOwner
	for s := range table {
		table[s].Owner = "a"
		if s >= 100 {
			table[s].Owner = "b"
		}
	}
	v := &cluster.View{Slots: &table, Members: []cluster.Member{
		{ID: "a", Role: cluster.RoleNode, Addr: "127.0.0.1:1", State: cluster.StateAlive},
		{ID: "b", Role: cluster.RoleNode, Addr: "127.0.0.1:2", State: cluster.StateDead},
		{ID: "o1", Role: cluster.RoleObserver, State: cluster.StateLeft},
		{ID: "o2", Role: cluster.RoleObserver, State: cluster.StateDead},
		{ID: "o3", Role: cluster.RoleObserver, State: cluster.StateAlive},
		{ID: "p", Role: cluster.RoleProxy, Addr: "127.0.0.1:3", State: cluster.StateLeft},
	}}
	var b strings.Builder
	memberLines(v, func(k string, v any) { fmt.Fprintf(&b, "%s:%v\n", k, v) })
	want := "member0:id=a,role=node,addr=127.0.0.1:1,state=alive,slots=0-99\n" +
		"member1:id=b,role=node,addr=127.0.0.1:2,state=dead,slots=100-16383\n" +
		"member2:id=o3,role=observer,addr=,state=alive,slots=\n" +
		"member3:id=p,role=proxy,addr=127.0.0.1:3,state=left,slots=\n"
	if b.String() != want {
		t.Errorf("member lines:\n%s\nwant:\n%s", b.String(), want)
	}
}
