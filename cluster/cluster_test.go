package cluster

import (
	"slices"
	"testing"
	"time"
)

func TestBootstrapThree(t *testing.T) {
	cs := startN(t, 3, nil)
	checkFor(t, 10*time.Second, func() error { return converged(cs) })
	v := cs[0].View()
	ids := []NodeID{cs[0].ID(), cs[1].ID(), cs[2].ID()}
	slices.Sort(ids)
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
}
