package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shardgate/shardgate/internal/atomicfile"
)

// stateFile is the name of the persisted state in Config.Dir, the
// counterpart of Redis Cluster's nodes.conf.
const stateFile = "cluster.json"

const stateVersion = 1

// persisted is the content of stateFile.
type persisted struct {
	Version   int               `json:"version"`
	NodeID    NodeID            `json:"node_id"`
	ClusterID string            `json:"cluster_id,omitempty"`
	Slots     []persistedClaim  `json:"slots,omitempty"`
	Members   []persistedMember `json:"members,omitempty"`  // the others, so a restart can find them again
	Draining  bool              `json:"draining,omitempty"` // SetDraining(true) until undone
}

type persistedClaim struct {
	First uint16 `json:"first"`
	Last  uint16 `json:"last"`
	Owner NodeID `json:"owner"`
	Epoch uint64 `json:"epoch"`
}

type persistedMember struct {
	ID     NodeID `json:"id"`
	Role   string `json:"role"`
	Addr   string `json:"addr,omitempty"`
	Gossip string `json:"gossip,omitempty"`
	// Left: it left gracefully (Close); one that owns nothing then counts
	// in no majority (Cut, reassignment), after a restart too (loaded as
	// left only then: see loadIdentity).
	Left bool `json:"left,omitempty"`
}

func (p *persisted) table() (*Table, error) {
	t := new(Table)
	next := 0
	for _, c := range p.Slots {
		if int(c.First) < next || c.First > c.Last || int(c.Last) >= NumSlots || !c.Owner.Valid() || c.Epoch == 0 {
			return nil, fmt.Errorf("%w: slot claim %d-%d %q@%d", ErrBadState, c.First, c.Last, c.Owner, c.Epoch)
		}
		t.Merge(Claim{c.First, c.Last, SlotOwner{c.Owner, c.Epoch}})
		next = int(c.Last) + 1
	}
	return t, nil
}

func parseRole(s string) (Role, bool) {
	switch s {
	case "node":
		return RoleNode, true
	case "proxy":
		return RoleProxy, true
	case "observer":
		return RoleObserver, true
	}
	return 0, false
}

// loadState reads dir's state; (nil, nil) when there is none yet.
func loadState(dir string) (*persisted, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	var p persisted
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadState, stateFile, err)
	}
	if p.Version != stateVersion || !p.NodeID.Valid() {
		return nil, fmt.Errorf("%w: %s: version %d, node id %q", ErrBadState, stateFile, p.Version, p.NodeID)
	}
	if _, err := p.table(); err != nil {
		return nil, err
	}
	for _, m := range p.Members {
		if _, ok := parseRole(m.Role); !ok || !m.ID.Valid() {
			return nil, fmt.Errorf("%w: %s: member %q role %q", ErrBadState, stateFile, m.ID, m.Role)
		}
	}
	return &p, nil
}

// saveState writes dir's state atomically: a temporary file written and
// fsynced, renamed over the old one, and the directory fsynced.
func saveState(dir string, p *persisted) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return writeFileAtomic(filepath.Join(dir, stateFile), b)
}

func writeFileAtomic(path string, b []byte) error { return atomicfile.Write(path, b) }
