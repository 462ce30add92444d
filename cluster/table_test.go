package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// testIDs are valid node ids in ascending order.
var testIDs = []NodeID{
	NodeID(strings.Repeat("1", 40)),
	NodeID(strings.Repeat("a", 40)),
	NodeID(strings.Repeat("b", 39) + "c"),
	NodeID(strings.Repeat("f", 40)),
}

func TestBeats(t *testing.T) {
	a, b := testIDs[0], testIDs[1]
	for _, tc := range []struct {
		x, y SlotOwner
		want bool
	}{
		{SlotOwner{a, 2}, SlotOwner{b, 1}, true},  // higher epoch wins
		{SlotOwner{a, 1}, SlotOwner{b, 2}, false}, // lower epoch loses whatever the owner
		{SlotOwner{b, 1}, SlotOwner{a, 1}, true},  // equal epochs: greater owner wins
		{SlotOwner{a, 1}, SlotOwner{b, 1}, false}, //
		{SlotOwner{a, 1}, SlotOwner{a, 1}, false}, // a claim never beats itself (idempotence)
		{SlotOwner{a, 1}, SlotOwner{}, true},      // any claim beats unassigned
		{SlotOwner{}, SlotOwner{a, 1}, false},     //
		{SlotOwner{}, SlotOwner{}, false},         //
		{SlotOwner{a, 1 << 62}, SlotOwner{b, 3}, true},
	} {
		if got := tc.x.Beats(tc.y); got != tc.want {
			t.Errorf("%v.Beats(%v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}

// claimGen draws claims over a few owners and small epochs, so that equal
// epochs (ties broken by owner) and overlaps are common. Ranges are
// usually short and sometimes anywhere up to the last slot.
func claimGen() *rapid.Generator[Claim] {
	return rapid.Custom(func(t *rapid.T) Claim {
		first := rapid.OneOf(rapid.IntRange(0, 40), rapid.IntRange(0, NumSlots-1)).Draw(t, "first")
		span := rapid.OneOf(rapid.IntRange(0, 10), rapid.IntRange(0, NumSlots-1-first)).Draw(t, "span")
		last := min(first+span, NumSlots-1)
		return Claim{uint16(first), uint16(last), SlotOwner{
			Owner: rapid.SampledFrom(testIDs[:3]).Draw(t, "owner"),
			Epoch: rapid.Uint64Range(1, 4).Draw(t, "epoch"),
		}}
	})
}

// modelTable is the merge's specification: each slot holds the greatest
// (epoch, owner) among the claims covering it, compared field by field
// here rather than with Beats.
func modelTable(t *Table, cs []Claim) {
	*t = Table{}
	for _, c := range cs {
		for s := int(c.First); s <= int(c.Last); s++ {
			cur := t[s]
			if c.Epoch > cur.Epoch || c.Epoch == cur.Epoch && c.Owner > cur.Owner {
				t[s] = c.SlotOwner
			}
		}
	}
}

// TestMergeConverges: however the claims are ordered, duplicated, split
// among members and merged member into member, every way of merging ends
// with the model's table.
func TestMergeConverges(t *testing.T) {
	t.Parallel()
	// The tables are reused from check to check (cleared first): 384 KiB
	// each, allocating them anew makes the test slow under -race.
	var tables [10]Table
	want, one, batched, replay, final := &tables[0], &tables[1], &tables[2], &tables[3], &tables[4]
	rapid.Check(t, func(t *rapid.T) {
		for i := range tables {
			tables[i] = Table{}
		}
		claims := rapid.SliceOfN(claimGen(), 1, 25).Draw(t, "claims")
		modelTable(want, claims)

		// Gossip delivers each claim at least once, in any order, some
		// several times.
		idx := make([]int, len(claims))
		for i := range idx {
			idx[i] = i
		}
		dups := rapid.SliceOfN(rapid.IntRange(0, len(claims)-1), 0, 2*len(claims)).Draw(t, "dups")
		order := rapid.Permutation(append(idx, dups...)).Draw(t, "order")
		for _, i := range order {
			one.Merge(claims[i])
		}
		if *one != *want {
			t.Fatalf("claims one by one in order %v:\n got %v\nwant %v", order, one, want)
		}

		// MergeClaims of the same delivery in batches gives the same
		// table, and replaying the claims it reports as applied (what
		// gets gossiped on), each winning where it claims, rebuilds it.
		for rest := order; len(rest) > 0; {
			n := rapid.IntRange(1, len(rest)).Draw(t, "batch")
			var batch []Claim
			for _, i := range rest[:n] {
				batch = append(batch, claims[i])
			}
			rest = rest[n:]
			for _, a := range batched.MergeClaims(batch) {
				if !a.SlotOwner.Beats(replay[a.First]) || !a.SlotOwner.Beats(replay[a.Last]) {
					t.Fatalf("applied claim %v does not win over %v", a, replay[a.First])
				}
				replay.Merge(a)
			}
		}
		if *replay != *batched {
			t.Fatalf("applied claims replayed:\n got %v\nwant %v", replay, batched)
		}
		if *batched != *want {
			t.Fatalf("batched:\n got %v\nwant %v", batched, want)
		}

		// Members that each saw some of the claims exchange whole
		// tables (push/pull) in any order, some several times.
		members := make([]*Table, rapid.IntRange(2, 4).Draw(t, "members"))
		for i := range members {
			members[i] = &tables[5+i]
		}
		for i, c := range claims {
			m := rapid.IntRange(0, len(members)-1).Draw(t, fmt.Sprintf("holder%d", i))
			members[m].Merge(c)
		}
		for range rapid.IntRange(0, 8).Draw(t, "exchanges") {
			a := rapid.IntRange(0, len(members)-1).Draw(t, "from")
			b := rapid.IntRange(0, len(members)-1).Draw(t, "to")
			members[b].MergeTable(members[a])
		}
		// Then a final round where one hears from everyone.
		for _, i := range rapid.Permutation([]int{0, 1, 2, 3}[:len(members)]).Draw(t, "final") {
			final.MergeTable(members[i])
		}
		if *final != *want {
			t.Fatalf("tables merged:\n got %v\nwant %v", final, want)
		}
		if final.MergeTable(want) || final.MergeTable(final) {
			t.Fatal("merging an equal table changed it")
		}
	})
}

func TestClaimsAndRanges(t *testing.T) {
	a, b := testIDs[0], testIDs[1]
	tb := new(Table)
	tb.Merge(Claim{0, 99, SlotOwner{a, 1}})
	tb.Merge(Claim{100, 199, SlotOwner{a, 2}}) // same owner, another epoch
	tb.Merge(Claim{300, 300, SlotOwner{b, 1}})
	tb.Merge(Claim{16383, 16383, SlotOwner{a, 1}})
	wantClaims := []Claim{
		{0, 99, SlotOwner{a, 1}},
		{100, 199, SlotOwner{a, 2}},
		{300, 300, SlotOwner{b, 1}},
		{16383, 16383, SlotOwner{a, 1}},
	}
	if got := tb.Claims(); !slices.Equal(got, wantClaims) {
		t.Errorf("Claims = %v, want %v", got, wantClaims)
	}
	if got, want := tb.Ranges(a), [][2]uint16{{0, 199}, {16383, 16383}}; !slices.Equal(got, want) {
		t.Errorf("Ranges(a) = %v, want %v", got, want)
	}
	if got, want := tb.Ranges(b), [][2]uint16{{300, 300}}; !slices.Equal(got, want) {
		t.Errorf("Ranges(b) = %v, want %v", got, want)
	}
	if got := tb.Count(a); got != 201 {
		t.Errorf("Count(a) = %d, want 201", got)
	}
	if got := tb.MaxEpoch(); got != 2 {
		t.Errorf("MaxEpoch = %d, want 2", got)
	}
	if tb.Empty() || !new(Table).Empty() {
		t.Error("Empty is wrong")
	}
	for _, bad := range []Claim{{5, 4, SlotOwner{b, 9}}, {0, NumSlots, SlotOwner{b, 9}}} {
		if tb.Merge(bad) || len(tb.MergeClaims([]Claim{bad})) > 0 {
			t.Errorf("bad claim %v merged", bad)
		}
	}
}

func TestDigest(t *testing.T) {
	a, b := testIDs[0], testIDs[1]
	x, y := new(Table), new(Table)
	if x.Digest() != y.Digest() {
		t.Fatal("empty tables differ")
	}
	x.Merge(Claim{0, 10, SlotOwner{a, 1}})
	y.Merge(Claim{0, 4, SlotOwner{a, 1}})
	y.Merge(Claim{5, 10, SlotOwner{a, 1}})
	if x.Digest() != y.Digest() {
		t.Fatal("equal tables built differently have different digests")
	}
	for _, c := range []Claim{{10, 10, SlotOwner{a, 2}}, {10, 10, SlotOwner{b, 1}}, {11, 11, SlotOwner{a, 1}}} {
		z := *x
		z.Merge(c)
		if z.Digest() == x.Digest() {
			t.Errorf("claim %v does not change the digest", c)
		}
	}
}

// TestBootstrapClaims checks the split redis-cli --cluster create makes
// (TestBootstrapClaimsMatchRedisCLI asks redis-cli itself for five).
func TestBootstrapClaims(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want [][2]uint16
	}{
		{1, [][2]uint16{{0, 16383}}},
		{2, [][2]uint16{{0, 8191}, {8192, 16383}}},
		{3, [][2]uint16{{0, 5460}, {5461, 10922}, {10923, 16383}}},
		{4, [][2]uint16{{0, 4095}, {4096, 8191}, {8192, 12287}, {12288, 16383}}},
		{5, [][2]uint16{{0, 3276}, {3277, 6553}, {6554, 9829}, {9830, 13106}, {13107, 16383}}},
	} {
		ids := make([]NodeID, tc.n)
		for i := range ids {
			ids[i] = NodeID(fmt.Sprintf("%040x", tc.n-i)) // given in descending order
		}
		got := BootstrapClaims(ids)
		slices.Reverse(ids)
		if len(got) != tc.n {
			t.Fatalf("n=%d: %d claims", tc.n, len(got))
		}
		for i, c := range got {
			if c.Owner != ids[i] || c.Epoch != 1 || [2]uint16{c.First, c.Last} != tc.want[i] {
				t.Errorf("n=%d claim %d = %v, want %v-%v owned by %s at epoch 1", tc.n, i, c, tc.want[i][0], tc.want[i][1], ids[i][:8])
			}
		}
	}
	// Any number of nodes: the claims cover every slot once, in order,
	// each node gets a share within one slot of the others.
	for n := 1; n <= 200; n++ {
		ids := make([]NodeID, n)
		for i := range ids {
			ids[i] = NodeID(fmt.Sprintf("%040x", i))
		}
		cs := BootstrapClaims(ids)
		next, lo, hi := 0, NumSlots, 0
		for _, c := range cs {
			if int(c.First) != next {
				t.Fatalf("n=%d: claim %v does not start at %d", n, c, next)
			}
			size := int(c.Last-c.First) + 1
			lo, hi = min(lo, size), max(hi, size)
			next = int(c.Last) + 1
		}
		if next != NumSlots || len(cs) != n || hi-lo > 1 {
			t.Fatalf("n=%d: %d claims end at %d, shares %d..%d", n, len(cs), next, lo, hi)
		}
	}
	if BootstrapClaims(nil) != nil {
		t.Error("claims for no nodes")
	}
}

func TestBootstrapClusterID(t *testing.T) {
	a, b, c := testIDs[0], testIDs[1], testIDs[2]
	id := BootstrapClusterID([]NodeID{a, b, c}, "")
	if !isLowerHex(id, 32) {
		t.Fatalf("cluster id %q", id)
	}
	for _, same := range [][]NodeID{{c, b, a}, {b, a, c, a}} {
		if got := BootstrapClusterID(same, ""); got != id {
			t.Errorf("ids %v: %s, want %s", same, got, id)
		}
	}
	for _, other := range []string{BootstrapClusterID([]NodeID{a, b}, ""), BootstrapClusterID([]NodeID{a, b, c}, "prod")} {
		if other == id {
			t.Errorf("different nodes or name give the same id %s", id)
		}
	}
}

// tableGen draws tables made of claims.
func tableGen() *rapid.Generator[*Table] {
	return rapid.Custom(func(t *rapid.T) *Table {
		tb := new(Table)
		for _, c := range rapid.SliceOfN(claimGen(), 0, 30).Draw(t, "claims") {
			c.Owner = rapid.SampledFrom(testIDs).Draw(t, "owner")
			c.Epoch = rapid.OneOf(rapid.Uint64Range(1, 5), rapid.Uint64()).Draw(t, "epoch")
			if c.Epoch == 0 {
				c.Epoch = 1
			}
			tb.Merge(c)
		}
		return tb
	})
}

func TestEncodeTableRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		tb := tableGen().Draw(t, "table")
		b := EncodeTable(tb)
		got, err := DecodeTable(b)
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		if *got != *tb {
			t.Fatalf("round trip:\n got %v\nwant %v", got, tb)
		}
		if !bytes.Equal(EncodeTable(got), b) {
			t.Fatal("encoding is not canonical")
		}
		msg := appendMessage(nil, msgState, "c1", tb.Claims())
		m, err := decodeMessage(msg)
		if err != nil || m.kind != msgState || m.clusterID != "c1" || !slices.Equal(m.claims, tb.Claims()) {
			t.Fatalf("message round trip: %+v %v", m, err)
		}
	})
}

func TestEncodedSize(t *testing.T) {
	// Three nodes' bootstrap table: a few dozen bytes; the worst case,
	// every slot its own claim, stays far below memberlist's push/pull
	// limit.
	tb := new(Table)
	for _, c := range BootstrapClaims(testIDs[:3]) {
		tb.Merge(c)
	}
	if n := len(EncodeTable(tb)); n > 160 {
		t.Errorf("3-node table encodes in %d bytes", n)
	}
	for s := range tb {
		tb[s] = SlotOwner{testIDs[s%4], uint64(s%7) + 1}
	}
	if n := len(EncodeTable(tb)); n > 120_000 {
		t.Errorf("worst-case table encodes in %d bytes", n)
	}
}

func TestDecodeClaimsErrors(t *testing.T) {
	a := testIDs[0]
	valid := AppendClaims(nil, []Claim{{0, 9, SlotOwner{a, 1}}, {10, 20, SlotOwner{a, 2}}})
	owner := append([]byte{40}, a...)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"version", append([]byte{2}, valid[1:]...)},
		{"truncated", valid[:len(valid)-1]},
		{"trailing", append(slices.Clone(valid), 0)},
		{"bad owner id", append([]byte{1, 1, 3}, "abc"...)},
		{"duplicate owner", slices.Concat([]byte{1, 2}, owner, owner, []byte{0})},
		{"owner index", slices.Concat([]byte{1, 1}, owner, []byte{1, 0, 0, 1, 1})},
		{"epoch 0", slices.Concat([]byte{1, 1}, owner, []byte{1, 0, 0, 0, 0})},
		{"past the last slot", slices.Concat([]byte{1, 1}, owner, []byte{1, 0xff, 0x7f, 1, 0, 1})},
		{"overlap", slices.Concat([]byte{1, 1}, owner, []byte{2, 0, 5, 0, 1, 5, 0, 0, 1})},
		{"out of order", slices.Concat([]byte{1, 1}, owner, []byte{2, 6, 0, 0, 1, 5, 0, 0, 1})},
		{"huge count", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"bad varint", []byte{1, 0x80}},
	} {
		if _, err := DecodeClaims(tc.b); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%s: %x: err %v", tc.name, tc.b, err)
		}
	}
	if cs, err := DecodeClaims(valid); err != nil || len(cs) != 2 {
		t.Fatalf("valid: %v %v", cs, err)
	}
	// A single slot claim at the last slot is fine.
	last := AppendClaims(nil, []Claim{{16383, 16383, SlotOwner{a, 1}}})
	if _, err := DecodeClaims(last); err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeTable: the decoder never panics, and whatever it accepts
// re-encodes canonically to the same table.
func FuzzDecodeTable(f *testing.F) {
	tb := new(Table)
	for _, c := range BootstrapClaims(testIDs[:3]) {
		tb.Merge(c)
	}
	f.Add(EncodeTable(tb))
	f.Add(EncodeTable(new(Table)))
	f.Add(AppendClaims(nil, []Claim{{16383, 16383, SlotOwner{testIDs[3], 1 << 40}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeTable(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		again, err := DecodeTable(EncodeTable(got))
		if err != nil || *again != *got {
			t.Fatalf("re-encoding %v: %v", got, err)
		}
		if _, err := decodeMessage(appendMessage(nil, msgClaims, "x", got.Claims())); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMessages(t *testing.T) {
	id := testIDs[1]
	b := appendLeave(nil, "cid", id, "boot1")
	m, err := decodeMessage(b)
	if err != nil || m.kind != msgLeave || m.clusterID != "cid" || m.id != id || m.bootID != "boot1" {
		t.Fatalf("leave: %+v %v", m, err)
	}
	hb := appendHeartbeat(nil, "cid", id, 1<<40, 99)
	m, err = decodeMessage(hb)
	if err != nil || m.kind != msgHeartbeat || m.clusterID != "cid" || m.id != id || m.stamp != 1<<40 || m.owned != 99 || m.epoch != 0 {
		t.Fatalf("heartbeat: %+v %v", m, err)
	}
	ack := appendHeartbeatAck(nil, "cid", id, 1<<40, 1<<63+7, 12)
	m, err = decodeMessage(ack)
	if err != nil || m.kind != msgHeartbeatAck || m.clusterID != "cid" || m.id != id || m.stamp != 1<<40 || m.owned != 1<<63+7 || m.epoch != 12 {
		t.Fatalf("heartbeat ack: %+v %v", m, err)
	}
	for _, bad := range [][]byte{
		nil,
		{9, 0},                                 // unknown kind
		append(slices.Clone(b), 0),             // trailing
		b[:len(b)-1],                           // truncated
		appendLeave(nil, "c", "xyz", ""),       // bad id
		append(slices.Clone(hb), 0),            // trailing
		hb[:len(hb)-1],                         // truncated
		appendHeartbeat(nil, "c", "xyz", 1, 1), // bad id
		append(slices.Clone(ack), 0),
		ack[:len(ack)-1],
		appendHeartbeatAck(nil, "c", "xyz", 1, 1, 1),
	} {
		if _, err := decodeMessage(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%x: %v", bad, err)
		}
	}
	cb := newClaimBroadcast("cid", Claim{5, 9, SlotOwner{id, 3}})
	if cb.Name() != "slots:5-9" {
		t.Errorf("broadcast name %q", cb.Name())
	}
	if !cb.Invalidates(newClaimBroadcast("cid", Claim{5, 9, SlotOwner{id, 4}})) || cb.Invalidates(newClaimBroadcast("cid", Claim{5, 10, SlotOwner{id, 4}})) {
		t.Error("Invalidates is not by slot range")
	}
	m, err = decodeMessage(cb.Message())
	if err != nil || m.kind != msgClaims || !slices.Equal(m.claims, []Claim{{5, 9, SlotOwner{id, 3}}}) {
		t.Fatalf("broadcast message: %+v %v", m, err)
	}
}

func TestMeta(t *testing.T) {
	m := meta{
		Role:      RoleProxy,
		ID:        testIDs[2],
		BootID:    "0123456789abcdef",
		ClusterID: strings.Repeat("c", 32),
		Addr:      "[2001:db8::1]:7001",
		Digest:    0xfedcba9876543210,
		Epoch:     1 << 50,
		Weight:    3,
		Draining:  true,
		BootSet:   0x0123456789abcdef,
	}
	b, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// Metadata from before weights and flags (epoch last) reads as
	// weight 1, not draining; from before the bootstrap set as set 0.
	old := meta{Role: RoleNode, ID: testIDs[0], Epoch: 5}
	ob, _ := old.encode()
	got, err = decodeMeta(ob[:len(ob)-2-8])
	if old.Weight = 1; err != nil || got != old {
		t.Fatalf("metadata without weight: %+v %v", got, err)
	}
	old.Weight, old.Draining = 2, true
	ob, _ = old.encode()
	got, err = decodeMeta(ob[:len(ob)-8])
	if err != nil || got != old {
		t.Fatalf("metadata without bootstrap set: %+v %v", got, err)
	}
	// The longest address that fits a field still fits memberlist's 512.
	m.Addr = strings.Repeat("h", 255)
	if b, err := m.encode(); err != nil || len(b) > maxMetaSize {
		t.Fatalf("long address: %d bytes, %v", len(b), err)
	}
	m.Addr = strings.Repeat("h", 256)
	if _, err := m.encode(); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("too long address: %v", err)
	}
	good, _ := meta{Role: RoleNode, ID: testIDs[0]}.encode()
	for _, bad := range [][]byte{
		nil,
		append([]byte{2}, good[1:]...),    // version
		append([]byte{1, 7}, good[2:]...), // role
		append(slices.Clone(good), 1),     // trailing
		good[:len(good)-4],                // truncated (in the bootstrap set)
		good[:6+len(testIDs[0])+4],        // truncated (in the table digest)
		append([]byte{1, 0, 3}, "abc"...), // bad id
	} {
		if _, err := decodeMeta(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%x: %v", bad, err)
		}
	}
}

// TestViewConverged: a view is converged when every other alive node and
// proxy announces this member's table digest; dead members and observers
// do not count.
func TestViewConverged(t *testing.T) {
	member := func(id NodeID, role Role, state State, digest uint64) Member {
		return Member{ID: id, Role: role, State: state, TableDigest: digest}
	}
	cases := []struct {
		name    string
		members []Member
		want    bool
	}{
		{"alone", []Member{member("a", RoleNode, StateAlive, 1)}, true},
		{"all agree", []Member{member("a", RoleNode, StateAlive, 1), member("b", RoleNode, StateAlive, 1), member("p", RoleProxy, StateAlive, 1)}, true},
		{"a node behind", []Member{member("a", RoleNode, StateAlive, 1), member("b", RoleNode, StateAlive, 2)}, false},
		{"a proxy behind", []Member{member("a", RoleNode, StateAlive, 1), member("p", RoleProxy, StateAlive, 2)}, false},
		{"dead and observer ignored", []Member{member("a", RoleNode, StateAlive, 1), member("b", RoleNode, StateDead, 2),
			member("c", RoleNode, StateLeft, 2), member("o", RoleObserver, StateAlive, 2)}, true},
	}
	for _, tc := range cases {
		v := &View{Self: "a", Members: tc.members}
		if got := v.Converged(); got != tc.want {
			t.Errorf("%s: Converged() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOwnerDigest: the digest of a node's slots changes with its slots and
// their epochs, and not with other nodes' slots.
func TestOwnerDigest(t *testing.T) {
	a, b := testIDs[0], testIDs[1]
	var tb Table
	for s := range tb {
		tb[s] = SlotOwner{a, 1}
		if s >= 8000 {
			tb[s] = SlotOwner{b, 1}
		}
	}
	base := tb.OwnerDigest(a)
	other := tb
	other[9000] = SlotOwner{b, 5}
	if other.OwnerDigest(a) != base {
		t.Error("another node's slot changed a's digest")
	}
	for name, change := range map[string]func(*Table){
		"slot lost":       func(t *Table) { t[10] = SlotOwner{b, 2} },
		"slot gained":     func(t *Table) { t[9000] = SlotOwner{a, 2} },
		"epoch raised":    func(t *Table) { t[10] = SlotOwner{a, 2} },
		"slot unassigned": func(t *Table) { t[0] = SlotOwner{} },
	} {
		changed := tb
		change(&changed)
		if changed.OwnerDigest(a) == base {
			t.Errorf("%s: a's digest did not change", name)
		}
	}
	var empty Table
	if empty.OwnerDigest(a) != empty.OwnerDigest(b) || tb.OwnerDigest(testIDs[2]) != empty.OwnerDigest(a) {
		t.Error("owning nothing has more than one digest")
	}
}

// FuzzDecodeMessage: decodeMessage never panics, its errors wrap
// ErrBadEncoding, and a leave, heartbeat or ack it accepts encodes back
// to the same bytes.
func FuzzDecodeMessage(f *testing.F) {
	id := testIDs[0]
	f.Add(appendLeave(nil, "cid", id, "boot"))
	f.Add(appendHeartbeat(nil, "cid", id, 12345, 1<<63))
	f.Add(appendHeartbeatAck(nil, "", id, 0, emptyOwnerDigest, 7))
	f.Add(appendMessage(nil, msgClaims, "cid", BootstrapClaims(testIDs[:3])))
	f.Add([]byte{msgHeartbeat, 0, 40})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("error %v does not wrap ErrBadEncoding", err)
			}
			return
		}
		var again []byte
		switch m.kind {
		case msgLeave:
			again = appendLeave(nil, m.clusterID, m.id, m.bootID)
		case msgHeartbeat:
			again = appendHeartbeat(nil, m.clusterID, m.id, m.stamp, m.owned)
		case msgHeartbeatAck:
			again = appendHeartbeatAck(nil, m.clusterID, m.id, m.stamp, m.owned, m.epoch)
		default:
			return
		}
		if !bytes.Equal(again, b) {
			// Uvarints have one canonical form only if minimal; a
			// padded one is accepted and re-encodes shorter.
			if m2, err := decodeMessage(again); err != nil || m2.kind != m.kind || m2.id != m.id || m2.stamp != m.stamp || m2.owned != m.owned || m2.epoch != m.epoch || m2.clusterID != m.clusterID || m2.bootID != m.bootID {
				t.Fatalf("%x decodes to %+v, which encodes to %x, which decodes to %+v (%v)", b, m, again, m2, err)
			}
		}
	})
}
