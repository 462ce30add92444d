package aof

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ReplayOptions configures Replay.
type ReplayOptions struct {
	Dir    string
	FS     FS           // nil = the real filesystem
	Logger *slog.Logger // nil = slog.Default()
	// CutCorrupt cuts the log at the first bad record even when valid
	// records follow it (--aof-load-truncated-style escape hatch): those
	// records, and any later log files, are lost.
	CutCorrupt bool
	// Snapshot receives the snapshot the manifest names, if any, before
	// the first record; the log files replayed after it start after its
	// base LSN (ReplayStats.Snapshot.Base). Replay fails with
	// ErrNoSnapshotLoader if one is named and Snapshot is nil. A damaged
	// snapshot is an error wrapping ErrCorrupt (CutCorrupt does not apply);
	// the loader's errors stop replay and are returned as they are.
	Snapshot SnapshotLoader
}

// ReplayStats describes a replay.
type ReplayStats struct {
	Records  int    // records passed to fn
	Bytes    int64  // bytes of the log files kept, headers included
	LastLSN  uint64 // pass it to Open
	CutBytes int64  // bytes cut off (torn tail, or corruption with CutCorrupt)
	Files    int    // log files read
	// Snapshot describes the snapshot loaded, zero if the manifest names
	// none.
	Snapshot SnapshotInfo
}

const (
	// droppedSuffix is added to the names of log files CutCorrupt drops.
	droppedSuffix = ".dropped"
	// replayBuffer is the read-ahead of Replay.
	replayBuffer = 1 << 20
	// scanWindow is how much of a damaged file's tail is searched in memory
	// at a time.
	scanWindow = 64 << 20
	// scanBudget bounds the work of telling a torn tail from corruption,
	// beyond scanBudgetPerByte per byte of the tail.
	scanBudget        = 64 << 20
	scanBudgetPerByte = 8
)

// Replay reads the log in order and calls fn for each record (after the
// snapshot, if the manifest names one). fn must not keep r or its slices
// after it returns: they are reused for the next record. fn's error stops
// replay and is returned as is.
//
// A torn tail of the last log file is cut off with a Warn log line. Any
// other damage stops replay with an error wrapping ErrCorrupt that names
// the file and offset, unless o.CutCorrupt. A missing manifest is an empty
// log, unless the directory holds a snapshot or log records: that is
// ErrNoManifest (CutCorrupt or not).
func Replay(o ReplayOptions, fn func(r *Record) error) (ReplayStats, error) {
	rp := &replayer{o: o, fn: fn}
	if rp.o.FS == nil {
		rp.o.FS = OSFS()
	}
	if rp.o.Logger == nil {
		rp.o.Logger = slog.Default()
	}
	err := rp.run()
	return rp.st, err
}

type replayer struct {
	o    ReplayOptions
	fn   func(*Record) error
	st   ReplayStats
	prev uint64 // the last LSN replayed (or the file's base)
	has  bool   // prev is set
	dec  decoder
	rec  Record
	buf  []byte
}

func (rp *replayer) path(name string) string { return filepath.Join(rp.o.Dir, name) }

// noManifest checks that a directory without a manifest holds no log data,
// so that it can start as an empty log. A crash while the first log file
// was being created leaves that file with at most its header (Open then
// overwrites it); a snapshot, or a log file with records, means the
// manifest was lost (removed by hand, a partial restore), and starting
// empty would overwrite them.
func (rp *replayer) noManifest() error {
	names, err := rp.o.FS.ReadDir(rp.o.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var data []string
	for _, n := range names {
		if !ourFile(n) || strings.HasSuffix(n, tmpSuffix) {
			continue
		}
		if _, isLog := fileSeq(n, logSuffix); isLog {
			if size, err := rp.fileSize(n); err != nil {
				return err
			} else if size <= int64(headerLen) {
				continue
			}
		}
		data = append(data, n)
	}
	if len(data) == 0 {
		return nil
	}
	slices.Sort(data)
	return fmt.Errorf("%w: %s is missing but the directory holds %s; starting empty would overwrite them: restore the manifest, or move them away to start with an empty keyspace",
		ErrNoManifest, rp.path(ManifestName), strings.Join(data, ", "))
}

// fileSize is the size of the directory's file name.
func (rp *replayer) fileSize(name string) (int64, error) {
	f, err := rp.o.FS.OpenFile(rp.path(name), os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (rp *replayer) run() error {
	mpath := rp.path(ManifestName)
	b, err := readFileLimit(rp.o.FS, mpath, maxManifest)
	if errors.Is(err, fs.ErrNotExist) {
		return rp.noManifest()
	}
	if errors.Is(err, errTooBig) {
		return fmt.Errorf("%w: %s: larger than %d bytes", ErrCorrupt, mpath, maxManifest)
	}
	if err != nil {
		return err
	}
	m, err := parseManifest(b)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, mpath, err)
	}
	if m.snapshot != "" {
		if err := rp.loadSnapshot(m); err != nil {
			return err
		}
	}
	for i, name := range m.logs {
		cut, err := rp.file(name, i == len(m.logs)-1)
		if err != nil {
			return err
		}
		if cut && i < len(m.logs)-1 {
			// CutCorrupt in an earlier file: the later files no longer
			// follow on, so the log ends here.
			dropped := m.logs[i+1:]
			m.logs = m.logs[:i+1]
			if err := writeFileAtomic(rp.o.FS, rp.o.Dir, mpath, m.encode()); err != nil {
				return fmt.Errorf("aof: dropping log files after a cut: %w", err)
			}
			// Open removes files of ours the manifest does not name;
			// renamed, these stay for inspection.
			for _, name := range dropped {
				if err := rp.o.FS.Rename(rp.path(name), rp.path(name+droppedSuffix)); err != nil {
					rp.o.Logger.Warn("aof: cannot rename a dropped log file", "file", rp.path(name), "err", err)
				}
			}
			rp.o.Logger.Error("aof: dropped log files after a corrupt one (no longer in the manifest, renamed to *"+droppedSuffix+")",
				"files", dropped)
			break
		}
	}
	rp.st.LastLSN = rp.prev
	return nil
}

func (rp *replayer) loadSnapshot(m *manifest) error {
	if rp.o.Snapshot == nil {
		return ErrNoSnapshotLoader
	}
	info, err := loadSnapshot(rp.o.FS, rp.path(m.snapshot), rp.o.Snapshot, &m.snapshotLSN)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("aof: snapshot named by the manifest: %w", err)
	}
	if err != nil {
		return err
	}
	rp.st.Snapshot = info
	rp.prev, rp.has = m.snapshotLSN, true
	return nil
}

// badRecord describes the first record of a file that did not check out.
type badRecord struct {
	off    int64
	reason string
	// certain: the record's bytes are complete and checksummed, so it
	// cannot be a torn write.
	certain bool
}

// file replays one log file and reports whether it cut it.
func (rp *replayer) file(name string, last bool) (cut bool, err error) {
	path := rp.path(name)
	f, err := rp.o.FS.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Errorf("aof: log file named by the manifest: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := fi.Size()
	var hdr [headerLen]byte
	n, err := f.ReadAt(hdr[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	base, err := decodeHeader(hdr[:n])
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if !rp.has {
		rp.prev, rp.has = base, true
	} else if base != rp.prev {
		return false, fmt.Errorf("%w: %s: starts after LSN %d, want %d", ErrCorrupt, path, base, rp.prev)
	}
	rp.st.Files++

	bad, err := rp.records(f, size)
	if err != nil {
		return false, err
	}
	if bad == nil {
		rp.st.Bytes += size
		return false, nil
	}
	if !bad.certain && last {
		found, undecided, err := findRecord(f, bad.off+1, size, rp.prev)
		if err != nil {
			return false, err
		}
		switch {
		case found >= 0:
			bad.reason += fmt.Sprintf(", and a valid record follows at offset %d", found)
		case undecided:
			bad.reason += ", and the rest could not be searched within budget for valid records"
		default:
			// A torn tail: nothing valid after the bad record.
			if err := truncate(f, bad.off); err != nil {
				return false, fmt.Errorf("aof: cutting the torn tail of %s: %w", path, err)
			}
			// Damage confined to the last record looks the same as a
			// write the crash cut short (a file may grow before its
			// data reaches the disk): both are cut, and the line says so.
			rp.o.Logger.Warn("aof: cut a torn record off the end of the log (a crash mid-write, or damage to the last record, which looks the same)",
				"file", path, "offset", bad.off, "dropped_bytes", size-bad.off, "reason", bad.reason, "last_lsn", rp.prev)
			rp.st.CutBytes += size - bad.off
			rp.st.Bytes += bad.off
			return true, nil
		}
	}
	if !rp.o.CutCorrupt {
		return false, fmt.Errorf("%w: %s at offset %d (after LSN %d): %s", ErrCorrupt, path, bad.off, rp.prev, bad.reason)
	}
	if err := truncate(f, bad.off); err != nil {
		return false, fmt.Errorf("aof: cutting %s: %w", path, err)
	}
	rp.o.Logger.Error("aof: CORRUPT LOG CUT: dropped everything from the first bad record on, as asked",
		"file", path, "offset", bad.off, "dropped_bytes", size-bad.off, "reason", bad.reason, "last_lsn", rp.prev)
	rp.st.CutBytes += size - bad.off
	rp.st.Bytes += bad.off
	return true, nil
}

func truncate(f File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}

// records streams the records of f after its header to fn. It returns the
// first bad record, or nil if the file is clean to its end.
func (rp *replayer) records(f File, size int64) (*badRecord, error) {
	off := int64(headerLen)
	if size <= off {
		return nil, nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), int(min(size-off, replayBuffer)))
	for off < size {
		rem := size - off
		peek, err := br.Peek(int(min(rem, maxUvarintLen)))
		if err != nil {
			return nil, err
		}
		l, n, ok := readUvarint(peek)
		switch {
		case !ok:
			return &badRecord{off: off, reason: "bad record length"}, nil
		case l < minBody:
			return &badRecord{off: off, reason: fmt.Sprintf("record length %d is too small", l)}, nil
		case rem < int64(n+crcLen) || l > uint64(rem)-uint64(n+crcLen):
			return &badRecord{off: off, reason: fmt.Sprintf("a record of %d bytes (%d with its length and checksum) runs past the end of the file (%d bytes left)", l, uint64(n+crcLen)+l, rem)}, nil
		}
		frame := n + crcLen + int(l)
		if cap(rp.buf) < frame {
			rp.buf = make([]byte, frame)
		}
		b := rp.buf[:frame]
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		if !crcOK(b, n) {
			return &badRecord{off: off, reason: "record checksum mismatch"}, nil
		}
		if err := rp.dec.decode(b[n+crcLen:], &rp.rec); err != nil {
			return &badRecord{off: off, reason: "bad record: " + err.Error(), certain: true}, nil
		}
		if rp.rec.LSN != rp.prev+1 {
			return &badRecord{off: off, reason: fmt.Sprintf("record has LSN %d, want %d", rp.rec.LSN, rp.prev+1), certain: true}, nil
		}
		if err := rp.fn(&rp.rec); err != nil {
			return nil, err
		}
		rp.prev = rp.rec.LSN
		rp.st.Records++
		off += int64(frame)
	}
	return nil, nil
}

// findRecord looks for a valid record (minimal length, an LSN after prev
// that the rest of the file could hold, known kind, exact structure, good
// CRC) starting anywhere in [from, size). It returns its offset or -1, and
// undecided if the search ran out of budget first.
//
// Only a cheap prefix check runs at most offsets; the structure walk and
// the CRC, which cost up to the claimed length, are counted against a
// budget so that hostile contents cannot make startup quadratic.
func findRecord(f io.ReaderAt, from, size int64, prev uint64) (found int64, undecided bool, err error) {
	if from >= size {
		return -1, false, nil
	}
	budget := int64(scanBudget) + scanBudgetPerByte*(size-from)
	maxLSN := prev + uint64((size-from)/minFrame) + 1
	var (
		win    []byte // the file's bytes [wOff, wOff+len(win))
		wOff   int64
		tmp    []byte
		dec    decoder
		rec    Record
		header = maxUvarintLen + crcLen + maxUvarintLen + 1
	)
	for q := from; q < size; q++ {
		if q+int64(header) > wOff+int64(len(win)) && wOff+int64(len(win)) < size {
			w := min(size-q, scanWindow)
			if cap(win) < int(w) {
				win = make([]byte, w)
			}
			win = win[:w]
			if _, err := f.ReadAt(win, q); err != nil && !errors.Is(err, io.EOF) {
				return -1, false, err
			}
			wOff = q
		}
		p := win[q-wOff:]
		l, n, ok := readUvarint(p)
		if !ok || l < minBody || uint64(size-q) < uint64(n+crcLen) || l > uint64(size-q)-uint64(n+crcLen) {
			continue
		}
		body := p[n+crcLen:]
		lsn, m, ok := readUvarint(body)
		if !ok || lsn <= prev || lsn > maxLSN || len(body) <= m || !validKind(body[m]) {
			continue
		}
		frame := int64(n+crcLen) + int64(l)
		var b []byte
		if int64(len(p)) >= frame {
			b = p[:frame]
		} else {
			// The candidate runs past the window: read it (its length fits
			// in the file, and it is paid for from the budget).
			budget -= frame
			if budget < 0 {
				return -1, true, nil
			}
			if cap(tmp) < int(frame) {
				tmp = make([]byte, frame)
			}
			b = tmp[:frame]
			if _, err := f.ReadAt(b, q); err != nil && !errors.Is(err, io.EOF) {
				return -1, false, err
			}
		}
		dec.steps = 0
		derr := dec.decode(b[n+crcLen:], &rec)
		budget -= int64(dec.steps)
		if derr == nil {
			budget -= frame
			if crcOK(b, n) {
				return q, false, nil
			}
		}
		if budget < 0 {
			return -1, true, nil
		}
	}
	return -1, false, nil
}
