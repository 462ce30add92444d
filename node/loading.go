package node

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/node/aof"
)

// Loading while serving (Options.LoadWhileServing). Redis accepts clients
// while it loads its data and answers every command without the loading
// flag with LOADING; INFO, CONFIG, CLIENT, HELLO, AUTH, ECHO, TIME, WATCH
// and the like run. The node does the same: Serve accepts at once, loads,
// and only then starts its background work (expiry, rewrites,
// migrations) and lets every command through. The load holds the keyspace
// exclusively but lets the waiting commands in every few hundred records
// (loadState.check).

// loadState is the load's progress, read by INFO.
type loadState struct {
	pending bool        // LoadWhileServing with something to load: Serve loads
	active  atomic.Bool // loading now: commands are refused with LOADING
	start   time.Time
	total   int64        // bytes of the files to load
	done    atomic.Int64 // bytes read of them so far
	checks  int          // check's calls (the loading goroutine's)
	// yielded, for tests, runs while the load has let go of the keyspace.
	yielded func()
}

// begin marks the load started and sizes it.
func (l *loadState) begin(s *Server) {
	l.start = s.opts.Now()
	l.total = dirSize(s.fsys(), s.opts.Dir)
	if s.opts.AOF != nil && s.opts.AOF.Dir != s.opts.Dir {
		l.total += dirSize(s.fsys(), s.opts.AOF.Dir)
	}
	l.active.Store(true)
}

// end lets every command through.
func (l *loadState) end() { l.active.Store(false) }

// loadYieldEvery is how many records or snapshot entries the load applies
// between two turns of the commands waiting for the keyspace.
const loadYieldEvery = 256

// errLoadAborted stops a load when the node closes during it (SIGTERM,
// SHUTDOWN): Redis too stops loading to exit.
var errLoadAborted = errors.New("node: closed while loading")

// check is called by the load, which holds the keyspace exclusively, for
// every record and snapshot entry. Every loadYieldEvery calls it lets the
// commands served while loading that read the keyspace (WATCH, EXEC, the
// HELP subcommands, INFO keyspace) take their turn, as Redis serves them
// between chunks of its load; they see the records loaded so far. It
// fails once the node is closing, so that a node asked to stop while it
// loads does not first load everything. Only a load Serve runs does this.
func (l *loadState) check(s *Server) error {
	if !l.pending || !l.active.Load() {
		return nil
	}
	if l.checks++; l.checks%loadYieldEvery != 0 {
		return nil
	}
	s.ks.Unlock() // RWMutex: waiting readers go first, then the load again
	if l.yielded != nil {
		l.yielded()
	}
	s.ks.Lock()
	select {
	case <-s.stop:
		return errLoadAborted
	default:
		return nil
	}
}

// loadedLog is the append-only log for what commands allowed while
// loading may read: nil until the load, which opens it, has ended.
// Reading the load flag first orders the read after the load's write.
func (s *Server) loadedLog() *aof.Log {
	if s.load.active.Load() {
		return nil
	}
	return s.aof
}

// loadData loads what Dir (or the log) keeps into the empty keyspace.
func (s *Server) loadData() error {
	if o := s.opts.AOF; o != nil {
		return s.loadAOF(o)
	}
	if s.opts.Dir == "" {
		return nil
	}
	s.ks.Lock()
	defer s.ks.Unlock()
	_, err := s.loadStandalone()
	return err
}

// loadFS is the filesystem the load reads through: reads are counted for
// INFO's loading_loaded_bytes while a load is being watched.
func (s *Server) loadFS() aof.FS {
	if !s.load.pending {
		return s.fsys()
	}
	return countingFS{FS: s.fsys(), n: &s.load.done}
}

// dirSize is the total size of the files a load reads in dir (0 if it
// cannot be read).
func dirSize(fsys aof.FS, dir string) int64 {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, name := range names {
		// The log's files and the standalone snapshot: not the
		// manifest, the lock, the cluster state or a leftover .tmp.
		if !(strings.HasPrefix(name, "appendonly.") || name == snapshotFileName) ||
			strings.HasSuffix(name, ".manifest") || strings.HasSuffix(name, ".tmp") {
			continue
		}
		f, err := fsys.OpenFile(filepath.Join(dir, name), 0, 0)
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		f.Close()
	}
	return n
}

// countingFS counts the bytes read from its files into n.
type countingFS struct {
	aof.FS
	n *atomic.Int64
}

func (c countingFS) OpenFile(name string, flag int, perm fs.FileMode) (aof.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, n: c.n}, nil
}

type countingFile struct {
	aof.File
	n *atomic.Int64
}

func (f countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.n.Add(int64(n))
	return n, err
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// infoLoading adds INFO persistence's loading_* fields, as Redis prints
// them while it loads.
func (s *Server) infoLoading(b *infoBuf) {
	l := &s.load
	done, total := l.done.Load(), l.total
	total = max(total, done)
	perc := 0.0
	if total > 0 {
		perc = float64(done) * 100 / float64(total)
	}
	elapsed := s.opts.Now().Sub(l.start).Seconds()
	eta := int64(1)
	if done > 0 && elapsed > 0 {
		eta = int64(float64(total-done) / (float64(done) / elapsed))
	}
	b.int("loading_start_time", l.start.Unix())
	b.int("loading_total_bytes", total)
	b.int("loading_rdb_used_mem", 0) // no RDB: the snapshot does not record it
	b.int("loading_loaded_bytes", done)
	b.str("loading_loaded_perc", strconv.FormatFloat(perc, 'f', 2, 64))
	b.int("loading_eta_seconds", eta)
}
