package aof

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// The snapshot file header and item kinds (see the package doc).
const (
	snapMagic     = "SGSNAPv1"
	snapHeaderLen = len(snapMagic) + 8 + crcLen

	itemSlot  byte = 1 // uvarint slot, uvarint lsn
	itemEntry byte = 2 // uvarint key length, key, value (the rest)
	itemEnd   byte = 3 // uvarint slots, uvarint entries

	// snapBuffer is the snapshot writer's and reader's buffer.
	snapBuffer = 1 << 20
)

// SnapshotLoader receives a snapshot's contents, in file order: each slot
// (ascending) followed by its entries.
type SnapshotLoader interface {
	// Slot says the entries that follow belong to slot, whose data the
	// snapshot holds as of lsn (records of that slot up to lsn are in it).
	Slot(slot uint16, lsn uint64) error
	// Entry is one key and its value, as given to SnapshotWriter.Entry.
	// The slices are valid only during the call.
	Entry(key, value []byte) error
}

// SnapshotInfo describes a snapshot file that was read whole.
type SnapshotInfo struct {
	Base    uint64 // the header's LSN (0 for a standalone snapshot)
	Slots   int
	Entries int64
	Size    int64 // bytes
}

func encodeSnapHeader(base uint64) []byte {
	b := make([]byte, 0, snapHeaderLen)
	b = append(b, snapMagic...)
	b = binary.LittleEndian.AppendUint64(b, base)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// SnapshotWriter writes a snapshot file: Slot, its entries, the next Slot,
// and so on, then Commit (or Abort). It writes to a temporary file that
// Commit renames into place, so a crash at any point leaves either no
// snapshot or a whole one. Its methods must not be called concurrently.
// After any error the snapshot is unusable: Commit returns the error, and
// Abort cleans up. Abort after Commit does nothing, so `defer w.Abort()`
// is safe.
type SnapshotWriter struct {
	fsys    FS
	dir     string
	name    string // the final name in dir
	tmp     string // the temporary path
	base    uint64
	l       *Log   // nil for a standalone snapshot
	keep    string // with l: the first log file the new manifest keeps
	f       File
	bw      *bufio.Writer
	size    int64
	slot    int // the last slot started, -1 before the first
	slots   int
	entries int64
	scratch []byte // an entry's head
	err     error  // sticky
	done    bool
}

// CreateSnapshot starts a snapshot whose records end at base, which must
// be an LSN a successful Rotate returned and whose log file the manifest
// still names. The snapshot is written to a temporary file in the log's
// directory; Commit then names it, with the log files from that one on, in
// the manifest, and deletes the files it replaces.
//
// The caller writes each slot's data as of some LSN >= base (appends go on
// meanwhile); at replay, records after base whose slot's data already
// includes them are the caller's to skip. Only one Rotate or snapshot may
// be in flight: another gets ErrBusy, and so does a Rotate until this
// snapshot is committed or aborted.
func (l *Log) CreateSnapshot(base uint64) (*SnapshotWriter, error) {
	if !l.busy.CompareAndSwap(false, true) {
		return nil, ErrBusy
	}
	l.mu.Lock()
	closing := l.closing
	l.mu.Unlock()
	if closing {
		l.busy.Store(false)
		return nil, ErrClosed
	}
	l.manMu.Lock()
	// The last file starting after base is the one Rotate created; an
	// earlier one with the same base holds no records.
	keep := ""
	for _, f := range l.files {
		if f.base == base {
			keep = f.name
		}
	}
	l.manMu.Unlock()
	seq, ok := fileSeq(keep, logSuffix)
	if !ok {
		l.busy.Store(false)
		return nil, fmt.Errorf("aof: no log file in the manifest starts after LSN %d (pass what Rotate returned)", base)
	}
	w, err := newSnapshotWriter(l.fsys, l.dir, SnapshotName(seq), base)
	if err != nil {
		l.busy.Store(false)
		return nil, err
	}
	w.l, w.keep = l, keep
	return w, nil
}

// CreateSnapshotFile starts a standalone snapshot (one no manifest names,
// with base 0), for SAVE without a log: Commit renames it to name in dir.
// It is written to name+".tmp" first. fsys nil is the real filesystem.
// name must not look like a file of the log's (appendonly.<n>.snap), which
// the log's Open would remove as stale.
func CreateSnapshotFile(fsys FS, dir, name string) (*SnapshotWriter, error) {
	if fsys == nil {
		fsys = OSFS()
	}
	if name == "" || filepath.Base(name) != name {
		return nil, fmt.Errorf("aof: snapshot name %q is not a plain file name", name)
	}
	return newSnapshotWriter(fsys, dir, name, 0)
}

func newSnapshotWriter(fsys FS, dir, name string, base uint64) (*SnapshotWriter, error) {
	w := &SnapshotWriter{fsys: fsys, dir: dir, name: name, tmp: filepath.Join(dir, name+tmpSuffix), base: base, slot: -1}
	f, err := fsys.OpenFile(w.tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("aof: snapshot: %w", err)
	}
	w.f = f
	w.bw = bufio.NewWriterSize(f, snapBuffer)
	if err := w.write(encodeSnapHeader(base)); err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// write writes parts as one piece of the file, counting its bytes.
func (w *SnapshotWriter) write(parts ...[]byte) error {
	for _, p := range parts {
		n, err := w.bw.Write(p)
		w.size += int64(n)
		if err != nil {
			w.err = fmt.Errorf("aof: writing snapshot %s: %w", w.tmp, err)
			return w.err
		}
	}
	return nil
}

// item writes one framed item whose body is head followed by tail (tail
// is written without a copy: values may be large).
func (w *SnapshotWriter) item(head, tail []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return errors.New("aof: snapshot already committed or aborted")
	}
	var pre [maxUvarintLen + crcLen]byte
	b := binary.AppendUvarint(pre[:0], uint64(len(head)+len(tail)))
	crc := crc32.Update(crc32.Update(crc32.Update(0, castagnoli, b), castagnoli, head), castagnoli, tail)
	b = binary.LittleEndian.AppendUint32(b, crc)
	return w.write(b, head, tail)
}

// Slot starts slot: the entries that follow belong to it, and lsn is the
// last LSN whose effect on the slot the snapshot includes (>= the base).
// Slots must be ascending and < 16384; a slot may have no entries.
func (w *SnapshotWriter) Slot(slot uint16, lsn uint64) error {
	switch {
	case w.err != nil:
		return w.err
	case int(slot) >= NumSlots || int(slot) <= w.slot:
		w.err = fmt.Errorf("aof: snapshot slot %d after slot %d (slots must be ascending and below %d)", slot, w.slot, NumSlots)
		return w.err
	case lsn < w.base:
		w.err = fmt.Errorf("aof: snapshot slot %d as of LSN %d, before the snapshot's base %d", slot, lsn, w.base)
		return w.err
	}
	var h [1 + 2*maxUvarintLen]byte
	b := append(h[:0], itemSlot)
	b = binary.AppendUvarint(b, uint64(slot))
	b = binary.AppendUvarint(b, lsn)
	if err := w.item(b, nil); err != nil {
		return err
	}
	w.slot = int(slot)
	w.slots++
	return nil
}

// Entry adds a key and its value (opaque bytes, any size) to the current
// slot.
func (w *SnapshotWriter) Entry(key, value []byte) error {
	if w.err == nil && w.slot < 0 {
		w.err = errors.New("aof: snapshot entry before any slot")
	}
	if w.err != nil {
		return w.err
	}
	b := append(w.scratch[:0], itemEntry)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	w.scratch = b
	if err := w.item(b, value); err != nil {
		return err
	}
	w.entries++
	return nil
}

// Size returns the bytes written so far (buffered ones included).
func (w *SnapshotWriter) Size() int64 { return w.size }

// Commit ends the snapshot (an end item with the counts), writes and
// fsyncs it, renames it into place and fsyncs the directory. For a log's
// snapshot it then replaces the manifest with one naming the snapshot and
// the log files from the rotated one on (fsynced, directory fsynced), and
// only then deletes the snapshot and log files it replaced (best effort,
// logged). On an error the previous manifest stays in force and the new
// snapshot is removed, except when only the directory fsync after the
// manifest's rename failed: then the new manifest stands (a crash may
// bring back the old one, which is as valid) and the replaced files are
// kept, to be deleted by a later Commit or by Open.
func (w *SnapshotWriter) Commit() error {
	if w.done {
		return errors.New("aof: snapshot already committed or aborted")
	}
	err := w.err
	if err == nil {
		var h [1 + 2*maxUvarintLen]byte
		b := append(h[:0], itemEnd)
		b = binary.AppendUvarint(b, uint64(w.slots))
		b = binary.AppendUvarint(b, uint64(w.entries))
		err = w.item(b, nil)
	}
	if err == nil {
		if err = w.bw.Flush(); err == nil {
			err = w.f.Sync()
		}
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	final := filepath.Join(w.dir, w.name)
	if err == nil {
		err = w.fsys.Rename(w.tmp, final)
		if err == nil {
			if err = w.fsys.SyncDir(w.dir); err != nil {
				w.fsys.Remove(final)
			}
		}
	}
	w.done = true
	if err != nil {
		w.fsys.Remove(w.tmp)
		w.release()
		return fmt.Errorf("aof: snapshot %s: %w", final, err)
	}
	if w.l != nil {
		err = w.l.commitSnapshot(w)
	}
	w.release()
	return err
}

// Abort gives up the snapshot and removes its temporary file.
func (w *SnapshotWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	w.fsys.Remove(w.tmp)
	w.release()
}

func (w *SnapshotWriter) release() {
	if w.l != nil {
		w.l.busy.Store(false)
	}
}

// commitSnapshot names w's snapshot (renamed into place, fsynced) in the
// manifest with the log files from w.keep on, then deletes what it
// replaced.
func (l *Log) commitSnapshot(w *SnapshotWriter) error {
	final := l.path(w.name)
	l.manMu.Lock()
	i := slices.IndexFunc(l.files, func(f namedLog) bool { return f.name == w.keep })
	m := manifest{snapshot: w.name, snapshotLSN: w.base}
	for _, f := range l.files[max(i, 0):] {
		m.logs = append(m.logs, f.name)
	}
	l.manMu.Unlock()
	if i < 0 {
		// busy keeps the manifest's files from changing under a snapshot.
		l.fsys.Remove(final)
		return fmt.Errorf("aof: snapshot: log file %s is no longer in the manifest", w.keep)
	}
	renamed, err := replaceFile(l.fsys, l.dir, l.path(ManifestName), m.encode())
	if !renamed {
		l.fsys.Remove(final)
		return fmt.Errorf("aof: snapshot: writing the manifest: %w", err)
	}

	l.manMu.Lock()
	var replaced []string
	if l.snapName != "" && l.snapName != w.name {
		replaced = append(replaced, l.snapName)
	}
	for _, f := range l.files[:i] {
		replaced = append(replaced, f.name)
		l.closedSize -= f.size
	}
	l.files = slices.Delete(l.files, 0, i)
	l.snapName, l.snapLSN, l.snapSize = w.name, w.base, w.size
	if err != nil {
		l.leftover = append(l.leftover, replaced...)
		l.manMu.Unlock()
		return fmt.Errorf("aof: snapshot: the manifest names %s but the directory fsync failed (the replaced files are kept): %w", w.name, err)
	}
	remove := append(l.leftover, replaced...)
	l.leftover = nil
	l.manMu.Unlock()

	var failed []string
	for _, name := range remove {
		if err := l.fsys.Remove(l.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.log.Warn("aof: cannot delete a file the manifest no longer names (the next Commit or Open will)",
				"file", l.path(name), "err", err)
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		l.manMu.Lock()
		l.leftover = append(l.leftover, failed...)
		l.manMu.Unlock()
	}
	l.log.Info("aof: switched to a new snapshot", "snapshot", final, "base_lsn", w.base,
		"bytes", w.size, "slots", w.slots, "entries", w.entries, "logs", m.logs, "deleted", remove)
	return nil
}

// LoadSnapshotFile reads a standalone snapshot (CreateSnapshotFile's) into
// ld. Any damage, truncation included, is an error wrapping ErrCorrupt
// that names the file and offset; ld's errors are returned as they are.
// fsys nil is the real filesystem.
func LoadSnapshotFile(fsys FS, path string, ld SnapshotLoader) (SnapshotInfo, error) {
	if fsys == nil {
		fsys = OSFS()
	}
	return loadSnapshot(fsys, path, ld, nil)
}

// loadSnapshot opens and reads path; with wantBase, its header must carry
// that LSN.
func loadSnapshot(fsys FS, path string, ld SnapshotLoader, wantBase *uint64) (SnapshotInfo, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return SnapshotInfo{}, err
	}
	return readSnapshot(f, fi.Size(), path, ld, wantBase)
}

// snapCorrupt is a damaged snapshot's error.
func snapCorrupt(path string, off int64, format string, args ...any) error {
	return fmt.Errorf("%w: snapshot %s at offset %d: %s", ErrCorrupt, path, off, fmt.Sprintf(format, args...))
}

// readSnapshot streams the snapshot in r (size bytes) to ld. A snapshot
// was complete and fsynced before it was named, so a short or damaged one
// is corrupt, never a torn tail. Every length is checked against the
// bytes left before anything is allocated.
func readSnapshot(r io.ReaderAt, size int64, path string, ld SnapshotLoader, wantBase *uint64) (SnapshotInfo, error) {
	info := SnapshotInfo{Size: size}
	var hdr [snapHeaderLen]byte
	n, err := r.ReadAt(hdr[:], 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return info, err
	}
	switch {
	case n < snapHeaderLen:
		return info, snapCorrupt(path, 0, "header of %d bytes, want %d", n, snapHeaderLen)
	case string(hdr[:len(snapMagic)]) != snapMagic:
		return info, snapCorrupt(path, 0, "not a shardgate snapshot (bad magic)")
	case crc32.Checksum(hdr[:snapHeaderLen-crcLen], castagnoli) != binary.LittleEndian.Uint32(hdr[snapHeaderLen-crcLen:]):
		return info, snapCorrupt(path, 0, "header checksum mismatch")
	}
	info.Base = binary.LittleEndian.Uint64(hdr[len(snapMagic):])
	if wantBase != nil && info.Base != *wantBase {
		return info, snapCorrupt(path, 0, "snapshot of LSN %d, the manifest says %d", info.Base, *wantBase)
	}

	off := int64(snapHeaderLen)
	br := bufio.NewReaderSize(io.NewSectionReader(r, off, size-off), int(min(max(size-off, 16), snapBuffer)))
	var buf []byte
	slot := -1
	for {
		rem := size - off
		if rem == 0 {
			return info, snapCorrupt(path, off, "the snapshot ends without its end item (truncated)")
		}
		peek, err := br.Peek(int(min(rem, maxUvarintLen)))
		if err != nil {
			return info, err
		}
		l, n, ok := readUvarint(peek)
		switch {
		case !ok:
			return info, snapCorrupt(path, off, "bad item length")
		case l == 0:
			return info, snapCorrupt(path, off, "empty item")
		case rem < int64(n+crcLen) || l > uint64(rem)-uint64(n+crcLen):
			return info, snapCorrupt(path, off, "an item of %d bytes (%d with its length and checksum) runs past the end of the file (%d bytes left)", l, uint64(n+crcLen)+l, rem)
		}
		frame := n + crcLen + int(l)
		if cap(buf) < frame {
			buf = make([]byte, frame)
		}
		b := buf[:frame]
		if _, err := io.ReadFull(br, b); err != nil {
			return info, err
		}
		if !crcOK(b, n) {
			return info, snapCorrupt(path, off, "item checksum mismatch")
		}
		body := b[n+crcLen:]
		kind, body := body[0], body[1:]
		switch kind {
		case itemSlot:
			s, n1, ok1 := readUvarint(body)
			lsn, n2, ok2 := readUvarint(body[min(n1, len(body)):])
			switch {
			case !ok1 || !ok2 || n1+n2 != len(body):
				return info, snapCorrupt(path, off, "bad slot item")
			case s >= NumSlots || int64(s) <= int64(slot):
				return info, snapCorrupt(path, off, "slot %d after slot %d (slots must be ascending and below %d)", s, slot, NumSlots)
			case lsn < info.Base:
				return info, snapCorrupt(path, off, "slot %d as of LSN %d, before the snapshot's %d", s, lsn, info.Base)
			}
			if err := ld.Slot(uint16(s), lsn); err != nil {
				return info, err
			}
			slot = int(s)
			info.Slots++
		case itemEntry:
			kl, n1, ok := readUvarint(body)
			switch {
			case !ok || kl > uint64(len(body)-n1):
				return info, snapCorrupt(path, off, "bad entry item")
			case slot < 0:
				return info, snapCorrupt(path, off, "an entry before any slot")
			}
			key := body[n1 : n1+int(kl) : n1+int(kl)]
			if err := ld.Entry(key, body[n1+int(kl):]); err != nil {
				return info, err
			}
			info.Entries++
		case itemEnd:
			slots, n1, ok1 := readUvarint(body)
			entries, n2, ok2 := readUvarint(body[min(n1, len(body)):])
			switch {
			case !ok1 || !ok2 || n1+n2 != len(body):
				return info, snapCorrupt(path, off, "bad end item")
			case slots != uint64(info.Slots) || entries != uint64(info.Entries):
				return info, snapCorrupt(path, off, "the end item counts %d slots and %d entries, the file holds %d and %d",
					slots, entries, info.Slots, info.Entries)
			case off+int64(frame) != size:
				return info, snapCorrupt(path, off+int64(frame), "%d bytes after the end item", size-off-int64(frame))
			}
			return info, nil
		default:
			return info, snapCorrupt(path, off, "unknown item kind %d", kind)
		}
		off += int64(frame)
	}
}
