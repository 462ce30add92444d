package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// detectTimeout bounds how long failure detection may take with Fast
// timings (the issue asks for about a second; 3 s leaves room under -race).
const detectTimeout = 3 * time.Second

// convergeTimeout bounds bootstrap and gossip convergence.
const convergeTimeout = 10 * time.Second

func sortedIDsOf(cs []*Cluster) []NodeID {
	var ids []NodeID
	for _, c := range cs {
		ids = append(ids, c.ID())
	}
	slices.Sort(ids)
	return ids
}

// byID returns the member of cs with id.
func byID(cs []*Cluster, id NodeID) *Cluster {
	for _, c := range cs {
		if c.ID() == id {
			return c
		}
	}
	return nil
}

// stateOf checks that every observer sees id in state s.
func stateOf(observers []*Cluster, id NodeID, s State) func() error {
	return func() error {
		for _, o := range observers {
			m, ok := o.View().Member(id)
			if !ok || m.State != s {
				return fmt.Errorf("%s sees %s as %v (known %v), want %v", o.ID()[:8], id[:8], m.State, ok, s)
			}
		}
		return nil
	}
}

func TestBootstrapThree(t *testing.T) {
	t.Parallel()
	cs := startN(t, 3, nil)
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	v := cs[0].View()
	ids := sortedIDsOf(cs)
	if want := BootstrapClusterID(ids, ""); v.ClusterID != want {
		t.Fatalf("cluster id %q, want %q", v.ClusterID, want)
	}
	wantRanges := [][2]uint16{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, id := range ids {
		if got := v.Ranges(id); !slices.Equal(got, [][2]uint16{wantRanges[i]}) {
			t.Errorf("node %d (%s) owns %v, want %v", i, id[:8], got, wantRanges[i])
		}
	}
	if v.Epoch != 1 {
		t.Errorf("epoch %d, want 1", v.Epoch)
	}
	if m, ok := v.Owner(5461); !ok || m.ID != ids[1] || m.Addr != byID(cs, ids[1]).cfg.RESPAddr || m.Gossip != byID(cs, ids[1]).GossipAddr() {
		t.Errorf("Owner(5461) = %+v %v", m, ok)
	}

	// A fourth node, also started with --bootstrap-expect 3, adopts the
	// cluster id and owns nothing; the table does not change.
	cfg := testConfig(t)
	cfg.BootstrapExpect = 3
	cfg.Join = []string{cs[2].GossipAddr()}
	fourth := start(t, cfg)
	all := append(slices.Clone(cs), fourth)
	checkFor(t, convergeTimeout, func() error { return converged(all) })
	v4 := fourth.View()
	if v4.ClusterID != v.ClusterID || *v4.Slots != *v.Slots || len(v4.Ranges(fourth.ID())) != 0 || v4.Epoch != 1 {
		t.Fatalf("fourth node: cluster id %s, epoch %d, owns %v", v4.ClusterID, v4.Epoch, v4.Ranges(fourth.ID()))
	}

	// A proxy joins as a member that owns nothing and sees the table.
	pcfg := testConfig(t)
	pcfg.Role = RoleProxy
	pcfg.Join = []string{cs[0].GossipAddr()}
	proxy := start(t, pcfg)
	all = append(all, proxy)
	checkFor(t, convergeTimeout, func() error {
		if err := converged(all); err != nil {
			return err
		}
		if got := cs[1].View().Alive(RoleProxy); len(got) != 1 || got[0].ID != proxy.ID() || got[0].Addr != pcfg.RESPAddr {
			return fmt.Errorf("alive proxies seen by a node: %+v", got)
		}
		if got := len(proxy.View().Alive(RoleNode)); got != 4 {
			return fmt.Errorf("proxy sees %d alive nodes", got)
		}
		return nil
	})

	// An observer (shardgate cluster status) needs no RESP address, sees
	// the table, and is no proxy.
	ocfg := testConfig(t)
	ocfg.Role, ocfg.RESPAddr = RoleObserver, ""
	ocfg.Join = []string{cs[1].GossipAddr()}
	obs := start(t, ocfg)
	all = append(all, obs)
	checkFor(t, convergeTimeout, func() error {
		if err := converged(all); err != nil {
			return err
		}
		if got := cs[2].View().Alive(RoleProxy); len(got) != 1 || got[0].ID != proxy.ID() {
			return fmt.Errorf("alive proxies with an observer: %+v", got)
		}
		if m, _ := cs[2].View().Member(obs.ID()); m.Role != RoleObserver || m.Addr != "" {
			return fmt.Errorf("observer seen as %+v", m)
		}
		return nil
	})
}

// TestBootstrapWaitsForExactlyN: two nodes expecting three do not
// bootstrap; more empty nodes than expected do not either.
func TestBootstrapWaitsForExactlyN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, expect int }{{2, 3}, {3, 2}} {
		t.Run(fmt.Sprintf("%d_nodes_expect_%d", tc.n, tc.expect), func(t *testing.T) {
			t.Parallel()
			cs := startN(t, tc.n, func(i int, cfg *Config) { cfg.BootstrapExpect = tc.expect })
			checkFor(t, convergeTimeout, func() error {
				for _, c := range cs {
					if n := len(c.View().Alive(RoleNode)); n != tc.n {
						return fmt.Errorf("%s sees %d alive nodes", c.ID()[:8], n)
					}
				}
				return nil
			})
			// Several settle periods: still nothing.
			time.Sleep(4 * fastTimings().bootstrapSettle)
			for _, c := range cs {
				if v := c.View(); v.ClusterID != "" || v.Epoch != 0 {
					t.Fatalf("%s bootstrapped: %s epoch %d", c.ID()[:8], v.ClusterID, v.Epoch)
				}
			}
		})
	}
}

func TestHandoff(t *testing.T) {
	t.Parallel()
	cs := startN(t, 3, nil)
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	ids := sortedIDsOf(cs)
	a, b, c := byID(cs, ids[0]), byID(cs, ids[1]), byID(cs, ids[2])

	moved := []uint16{0, 1, 2, 100, 5460}
	if err := a.Handoff(moved, b.ID()); err != nil {
		t.Fatal(err)
	}
	// The giver's View has the claim when Handoff returns.
	for _, s := range moved {
		if o := a.View().Slots[s]; o != (SlotOwner{b.ID(), 2}) {
			t.Fatalf("slot %d on the giver right after Handoff: %v", s, o)
		}
	}
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	v := c.View()
	if got, want := v.Ranges(a.ID()), [][2]uint16{{3, 99}, {101, 5459}}; !slices.Equal(got, want) {
		t.Errorf("giver owns %v, want %v", got, want)
	}
	if got, want := v.Ranges(b.ID()), [][2]uint16{{0, 2}, {100, 100}, {5460, 10922}}; !slices.Equal(got, want) {
		t.Errorf("taker owns %v, want %v", got, want)
	}
	if v.Epoch != 2 {
		t.Errorf("epoch %d, want 2", v.Epoch)
	}

	// Refusals: a slot the caller does not own (any more), a target that
	// is not a known node, a slot out of range. Nothing changes.
	for _, tc := range []struct {
		from  *Cluster
		slots []uint16
		to    NodeID
		want  error
	}{
		{a, []uint16{0}, c.ID(), ErrNotOwner},        // a gave it away
		{c, []uint16{0}, c.ID(), ErrNotOwner},        // c never owned it
		{a, []uint16{3, 10923}, c.ID(), ErrNotOwner}, // one of them is not a's
		{b, []uint16{0}, NewNodeID(), ErrUnknownNode},
		{b, []uint16{16384}, c.ID(), ErrBadSlot},
	} {
		if err := tc.from.Handoff(tc.slots, tc.to); !errors.Is(err, tc.want) {
			t.Errorf("Handoff(%v) from %s to %s: %v, want %v", tc.slots, tc.from.ID()[:8], tc.to[:8], err, tc.want)
		}
	}
	if got := a.View(); got.Epoch != 2 || got.Slots[3].Owner != a.ID() {
		t.Fatalf("a refused handoff changed the table: epoch %d", got.Epoch)
	}
	// Handing to oneself is a no-op.
	if err := b.Handoff([]uint16{0}, b.ID()); err != nil || b.View().Epoch != 2 {
		t.Fatalf("handoff to self: %v, epoch %d", err, b.View().Epoch)
	}

	// The new owner may hand a slot on; the claim is above every epoch.
	if err := b.Handoff([]uint16{100}, c.ID()); err != nil {
		t.Fatal(err)
	}
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	if o := a.View().Slots[100]; o != (SlotOwner{c.ID(), 3}) {
		t.Fatalf("slot 100: %v", o)
	}
}

// TestRefused: members of another cluster id, and members with another
// gossip key (or none), cannot join.
func TestRefused(t *testing.T) {
	t.Parallel()
	keyA, err := ParseKey("000102030405060708090a0b0c0d0e0f")
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := ParseKey("AAECAwQFBgcICQoLDA0ODw==")
	if err != nil {
		t.Fatal(err)
	}
	keyC := make([]byte, 32)
	for _, tc := range []struct {
		name       string
		key, other []byte
		bootstrap  bool // the joiner has a cluster id of its own
		wantJoined bool
	}{
		{"other cluster id", nil, nil, true, false},
		{"other key", keyA, keyC, false, false},
		{"no key", keyA, nil, false, false},
		{"key but cluster has none", nil, keyA, false, false},
		{"same key", keyB, keyB, false, true}, // keyA and keyB are the same bytes
		{"same key spelled otherwise", keyA, keyB, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.BootstrapExpect = 1
			cfg.Key = tc.key
			home := start(t, cfg)
			checkFor(t, convergeTimeout, func() error {
				if home.View().ClusterID == "" {
					return errors.New("not bootstrapped")
				}
				return nil
			})
			jcfg := testConfig(t)
			jcfg.Key = tc.other
			if tc.bootstrap {
				jcfg.BootstrapExpect = 1
			}
			joiner := start(t, jcfg)
			if tc.bootstrap {
				// Bootstrapped, and saying so in its gossip: metadata
				// without a cluster id is a fresh node's, which any
				// cluster admits.
				checkFor(t, convergeTimeout, func() error {
					if joiner.View().ClusterID == "" {
						return errors.New("joiner not bootstrapped")
					}
					if p := joiner.published.Load(); p == nil || mustDecodeMeta(t, *p).ClusterID == "" {
						return errors.New("joiner's metadata has no cluster id yet")
					}
					return nil
				})
			}
			_, err := joiner.ml.Join([]string{home.GossipAddr()})
			if !tc.wantJoined {
				if err == nil {
					t.Fatal("join succeeded")
				}
				// Neither side lists the other, even after a while.
				time.Sleep(300 * time.Millisecond)
				if _, ok := home.View().Member(joiner.ID()); ok {
					t.Fatal("home lists the joiner")
				}
				if _, ok := joiner.View().Member(home.ID()); ok {
					t.Fatal("joiner lists home")
				}
				if v := joiner.View(); !tc.bootstrap && v.ClusterID != "" {
					t.Fatalf("joiner adopted %s", v.ClusterID)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkFor(t, convergeTimeout, func() error { return converged([]*Cluster{home, joiner}) })
		})
	}
}

// TestFailure: a member killed without leaving is seen dead within
// detectTimeout; one that closes is seen left.
func TestFailure(t *testing.T) {
	t.Parallel()
	cs := startN(t, 4, nil)
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	killed := cs[3]
	began := time.Now()
	killed.shutdown(false)
	checkFor(t, detectTimeout, stateOf(cs[:3], killed.ID(), StateDead))
	t.Logf("dead detected after %v", time.Since(began).Round(time.Millisecond))
	// Its slots keep their owner: nothing is reassigned by default.
	if got := cs[0].View().Ranges(killed.ID()); len(got) != 1 {
		t.Fatalf("dead node's ranges: %v", got)
	}

	if err := cs[2].Close(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, detectTimeout, stateOf(cs[:2], cs[2].ID(), StateLeft))
	if err := cs[2].Handoff(nil, cs[0].ID()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Handoff after Close: %v", err)
	}
}

// TestReassignAfter: with ReassignAfter the lowest alive node hands a dead
// node's slots to the alive nodes at a higher epoch, but only when the
// alive nodes are a majority.
func TestReassignAfter(t *testing.T) {
	t.Parallel()
	t.Run("majority", func(t *testing.T) {
		t.Parallel()
		cs := startN(t, 3, func(i int, cfg *Config) { cfg.ReassignAfter = 300 * time.Millisecond })
		checkFor(t, convergeTimeout, func() error { return converged(cs) })
		ids := sortedIDsOf(cs)
		dead := byID(cs, ids[1])
		live := []*Cluster{byID(cs, ids[0]), byID(cs, ids[2])}
		dead.shutdown(false)
		checkFor(t, detectTimeout+convergeTimeout, func() error {
			for _, c := range live {
				v := c.View()
				if n := (*Table)(v.Slots).Count(dead.ID()); n != 0 {
					return fmt.Errorf("%s: the dead node still owns %d slots", c.ID()[:8], n)
				}
			}
			if *live[0].View().Slots != *live[1].View().Slots {
				return errors.New("tables differ")
			}
			return nil
		})
		v := live[1].View()
		// The dead node's 5461..10922 went half to each live node at epoch 2.
		if got, want := v.Ranges(ids[0]), [][2]uint16{{0, 8191}}; !slices.Equal(got, want) {
			t.Errorf("%s owns %v, want %v", ids[0][:8], got, want)
		}
		if got, want := v.Ranges(ids[2]), [][2]uint16{{8192, 16383}}; !slices.Equal(got, want) {
			t.Errorf("%s owns %v, want %v", ids[2][:8], got, want)
		}
		if v.Epoch != 2 || v.Slots[5461].Epoch != 2 || v.Slots[0].Epoch != 1 {
			t.Errorf("epochs: table %d, slot 5461 %d, slot 0 %d", v.Epoch, v.Slots[5461].Epoch, v.Slots[0].Epoch)
		}
	})
	t.Run("left members do not count", func(t *testing.T) {
		// Four nodes; one hands its slots over and leaves, then another
		// dies: the two alive are a majority of the three that matter,
		// and must not wait until the left member is forgotten (reap).
		t.Parallel()
		cs := startN(t, 4, func(i int, cfg *Config) { cfg.ReassignAfter = 300 * time.Millisecond })
		checkFor(t, convergeTimeout, func() error { return converged(cs) })
		ids := sortedIDsOf(cs)
		leaver, dead := byID(cs, ids[3]), byID(cs, ids[2])
		live := []*Cluster{byID(cs, ids[0]), byID(cs, ids[1])}
		var mine []uint16
		for _, r := range leaver.View().Ranges(leaver.ID()) {
			for s := int(r[0]); s <= int(r[1]); s++ {
				mine = append(mine, uint16(s))
			}
		}
		if err := leaver.Handoff(mine, live[0].ID()); err != nil {
			t.Fatal(err)
		}
		checkFor(t, convergeTimeout, func() error { return converged(cs) })
		if err := leaver.Close(); err != nil {
			t.Fatal(err)
		}
		left := time.Now()
		checkFor(t, detectTimeout, stateOf(live, leaver.ID(), StateLeft))
		dead.shutdown(false)
		checkFor(t, detectTimeout+convergeTimeout, func() error {
			for _, c := range live {
				if n := (*Table)(c.View().Slots).Count(dead.ID()); n != 0 {
					return fmt.Errorf("%s: the dead node still owns %d slots", c.ID()[:8], n)
				}
			}
			return nil
		})
		if d := time.Since(left); d >= live[0].tm.reap {
			t.Errorf("reassigned %v after the leave, once the left member was forgotten (reap %v)", d, live[0].tm.reap)
		}
	})
	t.Run("no majority", func(t *testing.T) {
		t.Parallel()
		cs := startN(t, 2, func(i int, cfg *Config) { cfg.ReassignAfter = 100 * time.Millisecond })
		checkFor(t, convergeTimeout, func() error { return converged(cs) })
		cs[1].shutdown(false)
		checkFor(t, detectTimeout, stateOf(cs[:1], cs[1].ID(), StateDead))
		time.Sleep(500 * time.Millisecond) // five times ReassignAfter
		if v := cs[0].View(); v.Epoch != 1 || len(v.Ranges(cs[1].ID())) != 1 {
			t.Fatalf("one node of two reassigned: epoch %d, table %v", v.Epoch, (*Table)(v.Slots))
		}
	})
}

// TestRestart: a node killed and restarted from its Dir resumes its id,
// cluster id and table with a new boot id, whether at the same gossip
// port or another; one restarted from all-persisted nodes never
// bootstraps again.
func TestRestart(t *testing.T) {
	t.Parallel()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	cs := startN(t, 3, func(i int, cfg *Config) { cfg.Dir = dirs[i] })
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	ids := sortedIDsOf(cs)
	if err := byID(cs, ids[0]).Handoff([]uint16{7}, ids[2]); err != nil {
		t.Fatal(err)
	}
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	before := cs[0].View()

	parent := t // restarted members live until the whole test ends
	for _, tc := range []struct {
		name     string
		samePort bool
	}{{"same gossip port", true}, {"new gossip port", false}} {
		t.Run(tc.name, func(t *testing.T) {
			old := cs[2]
			oldBoot := old.View().SelfMember().BootID
			old.shutdown(false)
			checkFor(t, detectTimeout, stateOf(cs[:2], old.ID(), StateDead))

			cfg := old.cfg
			cfg.Join = []string{cs[0].GossipAddr()}
			cfg.Logger = newTestLogger(parent)
			if tc.samePort {
				cfg.Bind = old.GossipAddr()
			} else {
				// Hold the old port so that the new member gets another.
				cfg.Bind = "127.0.0.1:0"
				hold, err := net.Listen("tcp", old.GossipAddr())
				if err != nil {
					t.Fatal(err)
				}
				defer hold.Close()
			}
			again := start(parent, cfg)
			cs[2] = again
			v := again.View()
			if again.ID() != old.ID() || v.ClusterID != before.ClusterID || *v.Slots != *before.Slots {
				t.Fatalf("restarted: id %s (was %s), cluster %s (was %s), table %v (was %v)",
					again.ID()[:8], old.ID()[:8], v.ClusterID, before.ClusterID, (*Table)(v.Slots), (*Table)(before.Slots))
			}
			if tc.samePort != (again.GossipAddr() == old.GossipAddr()) {
				t.Fatalf("gossip address %s, was %s", again.GossipAddr(), old.GossipAddr())
			}
			checkFor(t, convergeTimeout, func() error {
				if err := converged(cs); err != nil {
					return err
				}
				for _, o := range cs[:2] {
					m, _ := o.View().Member(again.ID())
					if m.BootID == oldBoot || m.BootID != again.bootID || m.Gossip != again.GossipAddr() {
						return fmt.Errorf("%s sees boot %s at %s, want %s at %s", o.ID()[:8], m.BootID, m.Gossip, again.bootID, again.GossipAddr())
					}
				}
				return nil
			})
		})
	}

	// Everyone restarts at once from their dirs, without --join: they
	// find each other through the persisted members and keep their
	// cluster id and table (no second bootstrap).
	for _, c := range cs {
		c.Close()
	}
	var again []*Cluster
	for i, c := range cs {
		cfg := c.cfg
		cfg.Join = nil
		cfg.Bind = "127.0.0.1:0"
		if i == 0 {
			cfg.Bind = c.GossipAddr() // the one the others remember
		}
		cfg.Logger = newTestLogger(t)
		again = append(again, start(t, cfg))
	}
	checkFor(t, convergeTimeout, func() error { return converged(again) })
	if v := again[1].View(); v.ClusterID != before.ClusterID || *v.Slots != *before.Slots || v.Epoch != 2 {
		t.Fatalf("after a full restart: cluster %s, epoch %d, table %v", v.ClusterID, v.Epoch, (*Table)(v.Slots))
	}
}

func TestPersistedState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(t)
	cfg.Dir = dir
	cfg.BootstrapExpect = 1
	c := start(t, cfg)
	checkFor(t, convergeTimeout, func() error {
		if c.View().ClusterID == "" {
			return errors.New("not bootstrapped")
		}
		return nil
	})
	c.Close()
	p, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []persistedClaim{{0, 16383, c.ID(), 1}}
	if p.NodeID != c.ID() || p.ClusterID != c.View().ClusterID || !slices.Equal(p.Slots, want) {
		t.Fatalf("persisted %+v", p)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("dir holds %d entries (temporary files left?)", len(ents))
	}

	for _, bad := range []string{
		`{`,
		`{"version":2,"node_id":"` + string(c.ID()) + `"}`,
		`{"version":1,"node_id":"nothex"}`,
		`{"version":1,"node_id":"` + string(c.ID()) + `","slots":[{"first":5,"last":4,"owner":"` + string(c.ID()) + `","epoch":1}]}`,
		`{"version":1,"node_id":"` + string(c.ID()) + `","slots":[{"first":0,"last":4,"owner":"` + string(c.ID()) + `","epoch":0}]}`,
		`{"version":1,"node_id":"` + string(c.ID()) + `","members":[{"id":"` + string(c.ID()) + `","role":"boss"}]}`,
		`{"version":1,"node_id":"` + string(c.ID()) + `","extra":1}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Start(t.Context(), cfg); !errors.Is(err, ErrBadState) {
			t.Errorf("Start with %s: %v", bad, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"role", func(c *Config) { c.Role = 9 }},
		{"bind", func(c *Config) { c.Bind = "nowhere" }},
		{"bind port", func(c *Config) { c.Bind = "127.0.0.1:70000" }},
		{"advertise", func(c *Config) { c.Advertise = "x" }},
		{"advertise port", func(c *Config) { c.Advertise = "10.0.0.1:0" }},
		{"resp", func(c *Config) { c.RESPAddr = "" }},
		{"expect", func(c *Config) { c.BootstrapExpect = -1 }},
		{"proxy bootstraps", func(c *Config) { c.Role, c.BootstrapExpect = RoleProxy, 3 }},
		{"key", func(c *Config) { c.Key = make([]byte, 15) }},
		{"reassign", func(c *Config) { c.ReassignAfter = -time.Second }},
		{"long address", func(c *Config) { c.RESPAddr = string(make([]byte, 300)) }},
	} {
		cfg := testConfig(t)
		tc.mod(&cfg)
		if c, err := Start(t.Context(), cfg); !errors.Is(err, ErrBadConfig) {
			if c != nil {
				c.Close()
			}
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestParseKey(t *testing.T) {
	k16 := []byte("0123456789abcdef")
	for _, tc := range []struct {
		in   string
		want []byte
	}{
		{"30313233343536373839616263646566", k16},
		{"MDEyMzQ1Njc4OWFiY2RlZg==", k16},
		{"MDEyMzQ1Njc4OWFiY2RlZg", k16},
		{" MDEyMzQ1Njc4OWFiY2RlZg==\n", k16},
		{"000102030405060708090a0b0c0d0e0f1011121314151617", []byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17")},
		{"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", make([]byte, 32)},
		{"", nil},
		{"00", nil},
		{"MDEyMzQ1Njc4OWFiY2Rl", nil}, // 15 bytes
		{"not a key at all!", nil},
	} {
		got, err := ParseKey(tc.in)
		if tc.want == nil {
			if !errors.Is(err, ErrBadKey) {
				t.Errorf("ParseKey(%q) = %x, %v; want ErrBadKey", tc.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseKey(%q) = %x, %v; want %x", tc.in, got, err, tc.want)
		}
	}
}

// TestChanges: a Changes channel is closed when a newer View is published.
func TestChanges(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.BootstrapExpect = 1
	c := start(t, cfg)
	ch := c.Changes()
	v := c.View()
	for v.ClusterID == "" {
		select {
		case <-ch:
		case <-time.After(convergeTimeout):
			t.Fatal("no change published")
		}
		ch = c.Changes()
		v = c.View()
	}
	if v.Epoch != 1 || len(v.Ranges(c.ID())) != 1 {
		t.Fatalf("after bootstrap: %+v", v)
	}
	select {
	case <-ch:
		t.Fatal("changes signalled without a change") // nothing else happens to a lone node
	case <-time.After(300 * time.Millisecond):
	}
}

func TestViewHelpers(t *testing.T) {
	a, b, c := testIDs[0], testIDs[1], testIDs[2]
	slots := new([NumSlots]SlotOwner)
	for s := 0; s < 100; s++ {
		slots[s] = SlotOwner{b, 1}
	}
	slots[200] = SlotOwner{c, 2}
	v := &View{
		Self:  a,
		Slots: slots,
		Members: []Member{
			{ID: a, Role: RoleProxy, State: StateAlive},
			{ID: b, Role: RoleNode, Addr: "h:1", State: StateAlive},
			{ID: c, Role: RoleNode, Addr: "h:2", State: StateDead},
		},
	}
	for _, tc := range []struct {
		slot uint16
		want NodeID
		ok   bool
	}{{0, b, true}, {99, b, true}, {100, "", false}, {200, c, true}, {16384, "", false}} {
		m, ok := v.Owner(tc.slot)
		if ok != tc.ok || m.ID != tc.want {
			t.Errorf("Owner(%d) = %s %v", tc.slot, m.ID, ok)
		}
	}
	if m, ok := v.Member(testIDs[3]); ok {
		t.Errorf("unknown member found: %+v", m)
	}
	if v.SelfMember().ID != a || v.Owns(0) || !slices.Equal(v.Ranges(b), [][2]uint16{{0, 99}}) {
		t.Error("SelfMember, Owns or Ranges wrong")
	}
	if got := v.Alive(RoleNode); len(got) != 1 || got[0].ID != b {
		t.Errorf("Alive(RoleNode) = %+v", got)
	}
}

// TestLANProfile: a member with the production timings starts and closes
// (their intervals are too long for the other tests).
func TestLANProfile(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Fast = false
	cfg.Dir = t.TempDir()
	c := start(t, cfg)
	if v := c.View(); v == nil || v.Self != c.ID() || c.GossipAddr() == "" || v.SelfMember().Gossip != c.GossipAddr() {
		t.Fatalf("view %+v, gossip %q", v, c.GossipAddr())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustDecodeMeta(t *testing.T, b []byte) meta {
	t.Helper()
	m, err := decodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLeftMemberStaysLeftAfterRestart: a node drained and closed (it
// left, owning nothing) is still known as left to a member restarted
// from its Dir, so it counts in no majority there either; it used to
// come back as dead, and one more failure then cut the restarted node
// off for the 10 minutes until the left one was forgotten.
func TestLeftMemberStaysLeftAfterRestart(t *testing.T) {
	t.Parallel()
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	cs := startN(t, 3, func(i int, cfg *Config) { cfg.Dir = dirs[i] })
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	leaver, restarted := cs[2], cs[1]
	if err := leaver.Handoff(slotsOf(leaver), cs[0].ID()); err != nil {
		t.Fatal(err)
	}
	checkFor(t, convergeTimeout, func() error { return converged(cs) })
	if err := leaver.Close(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, detectTimeout, stateOf(cs[:2], leaver.ID(), StateLeft))
	if err := restarted.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := restarted.cfg
	cfg.Join = []string{cs[0].GossipAddr()}
	cfg.Bind = "127.0.0.1:0"
	cfg.Logger = newTestLogger(t)
	again := start(t, cfg)
	if m, ok := again.View().Member(leaver.ID()); !ok || m.State != StateLeft {
		t.Fatalf("after a restart the node that left is %v (known %v), want left", m.State, ok)
	}
	var known int
	if err := again.call(func(time.Time) error {
		_, known = again.nodesHeard()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if known != 2 {
		t.Fatalf("the restarted node counts its majority over %d nodes, want 2 (the node that left owning nothing is none)", known)
	}
}

// slotsOf returns the slots c owns in its view.
func slotsOf(c *Cluster) []uint16 {
	var out []uint16
	for _, r := range c.View().Ranges(c.ID()) {
		for s := int(r[0]); s <= int(r[1]); s++ {
			out = append(out, uint16(s))
		}
	}
	return out
}
