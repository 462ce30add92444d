package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/cluster"
	"github.com/shardgate/shardgate/internal/atomicfile"
	"github.com/shardgate/shardgate/slots"
)

// Online slot migration (the design's "copy, catch up, fence, commit").
//
// A node migrates only slots it owns, one batch at a time, to the target
// the planner chose (planner.go). The source (migrate_source.go):
//
//  1. persists a record of the migration, opens its own connection to the
//     target's RESP port, announces the migration (MIGRATE-BEGIN) and
//     starts tracking the batch's slots (migrate_gate.go);
//  2. sends every key of the batch as a whole serialized value
//     (engine.AppendEntry: absolute expiry, lists, streams with groups and
//     PELs, HLLs, sparse bitmaps), in chunks for big values; the target
//     stages them and serves nothing from them;
//  3. resends the keys written meanwhile, a few rounds, until few remain;
//  4. persists the commit epoch (the highest it knows plus one), fences
//     the slots, sends the last written keys and MIGRATE-COMMIT. The
//     target installs the staged keys, claims the slots at that epoch
//     (cluster.Commit: persisted, then gossiped) and answers; the source
//     records the same claim, lowers the fence (waiting commands then get
//     MOVED) and its ownership follower redirects blocked clients and
//     drops its copy.
//
// If the commit's answer is lost, the source keeps the fence up and asks
// the target (MIGRATE-STATUS) or waits to see the claim by gossip; the
// target answers "committed" only from its table and otherwise marks the
// migration aborted, so a late COMMIT cannot succeed after the source
// resumed writing. The slot is never writable on both nodes. A source that
// restarts with a fenced record fences again before it serves and resolves
// the same way; a record still copying is aborted. Any failure before the
// fence aborts: the target drops its staging (also when the connection
// closes) and the slots stay where they were.

// ClusterControl is what migration needs of a *cluster.Cluster.
type ClusterControl interface {
	ClusterSource
	ID() cluster.NodeID
	Commit(slots []uint16, owner cluster.NodeID, epoch uint64) error
	CommitUnsynced(slots []uint16, owner cluster.NodeID, epoch uint64) error
	Sync() error
	SetDraining(on bool) error
}

// MigrationOptions turn on slot migration for a node of a gossip cluster.
type MigrationOptions struct {
	Cluster ClusterControl
	// Dir keeps the record of the migration in progress (migration.json)
	// so a restart resolves it; "" keeps it in memory only.
	Dir string
	// AutoRebalance: the planner moves slots whenever the nodes change;
	// false: only on SHARDGATE REBALANCE (shardgate cluster rebalance)
	// and for draining nodes.
	AutoRebalance bool
	// BatchSlots is the most slots one migration moves (default 64).
	BatchSlots int
	// FenceWait is how long a command waits for a fenced slot before it
	// gets TRYAGAIN (default 1s).
	FenceWait time.Duration
	// PlanInterval is how often the planner looks at the cluster
	// (default 1s).
	PlanInterval time.Duration
	// Timeout bounds each network step of a migration (default 5s).
	Timeout time.Duration
}

func (o *MigrationOptions) withDefaults() {
	if o.BatchSlots <= 0 {
		o.BatchSlots = 64
	}
	if o.FenceWait <= 0 {
		o.FenceWait = time.Second
	}
	if o.PlanInterval <= 0 {
		o.PlanInterval = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
}

// migrator is a node's migration machinery, source and target side.
type migrator struct {
	s    *Server
	o    MigrationOptions
	cl   ClusterControl
	self cluster.NodeID

	// Source side: the planner's latest moves for this node.
	mu      sync.Mutex
	queue   map[uint16]cluster.NodeID
	queueAt time.Time
	kick    chan struct{}     // capacity 1: the queue changed
	plan    chan struct{}     // capacity 1: plan now (REBALANCE)
	rec     *migRecord        // the migration in progress, if any
	handed  map[uint16]uint64 // slots committed away and the commit's epoch, for the ownership follower's log
	buf     []byte

	// Target side.
	tmu      sync.Mutex
	incoming map[string]*incoming
	aborted  map[string]bool

	stats migrationStats
}

type migrationStats struct {
	migrations   atomic.Int64 // committed as source
	slotsOut     atomic.Int64
	slotsIn      atomic.Int64
	keysSent     atomic.Int64
	bytesSent    atomic.Int64
	aborts       atomic.Int64
	lastFenceUs  atomic.Int64
	maxFenceUs   atomic.Int64
	lastMoveUs   atomic.Int64 // whole migration, begin to commit
	lastMoveKeys atomic.Int64
}

// migRecord is the persisted state of the source's migration.
type migRecord struct {
	ID     string         `json:"id"`
	Target cluster.NodeID `json:"target"`
	Addr   string         `json:"addr"`
	Slots  []uint16       `json:"slots"`
	Phase  string         `json:"phase"` // "copy" or "fence"
	Epoch  uint64         `json:"epoch,omitempty"`
}

const migrationFile = "migration.json"

func newMigrator(s *Server, o MigrationOptions) *migrator {
	o.withDefaults()
	return &migrator{
		s: s, o: o, cl: o.Cluster, self: o.Cluster.ID(),
		queue:    map[uint16]cluster.NodeID{},
		handed:   map[uint16]uint64{},
		kick:     make(chan struct{}, 1),
		plan:     make(chan struct{}, 1),
		incoming: map[string]*incoming{},
		aborted:  map[string]bool{},
	}
}

// save persists rec (nil: removes the record).
func (m *migrator) save(rec *migRecord) error {
	m.mu.Lock()
	m.rec = rec
	m.mu.Unlock()
	if m.o.Dir == "" {
		return nil
	}
	path := filepath.Join(m.o.Dir, migrationFile)
	if rec == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

// load reads the persisted record, if any.
func (m *migrator) load() (*migRecord, error) {
	if m.o.Dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(m.o.Dir, migrationFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec migRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("node: %s: %w", migrationFile, err)
	}
	for _, sl := range rec.Slots {
		if int(sl) >= slots.Count {
			return nil, fmt.Errorf("node: %s: slot %d out of range", migrationFile, sl)
		}
	}
	return &rec, nil
}

// formatRanges prints ascending slots as "0-99,200".
func formatRanges(ss []uint16) string {
	return strings.ReplaceAll(formatSlots(ss), " ", ",")
}

// parseRanges parses formatRanges's output.
func parseRanges(s string) ([]uint16, error) {
	var out []uint16
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= slots.Count {
			return nil, fmt.Errorf("bad slot %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b >= slots.Count {
				return nil, fmt.Errorf("bad slot range %q", part)
			}
		}
		for x := a; x <= b; x++ {
			out = append(out, uint16(x))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// takeHanded splits lost slots into those this node handed over by a
// migration (their drop is the migration's last step, not news) and the
// rest. A slot is handed over when the view's claim for it is the commit
// of this node's migration: one finished, or the fenced one in progress,
// whose commit gossip can bring before the target's answer does.
func (m *migrator) takeHanded(lost []uint16) (rest, handed []uint16) {
	v := m.cl.View()
	m.mu.Lock()
	defer m.mu.Unlock()
	var fenced map[uint16]bool
	if r := m.rec; r != nil && r.Phase == "fence" {
		fenced = make(map[uint16]bool, len(r.Slots))
		for _, sl := range r.Slots {
			fenced[sl] = true
		}
	}
	for _, sl := range lost {
		claim := v.Slots[sl]
		epoch, ok := m.handed[sl]
		if ok && epoch <= claim.Epoch {
			delete(m.handed, sl)
		}
		switch {
		case ok && epoch == claim.Epoch,
			fenced[sl] && claim.Owner == m.rec.Target && claim.Epoch == m.rec.Epoch:
			handed = append(handed, sl)
		default:
			rest = append(rest, sl)
		}
	}
	return rest, handed
}
