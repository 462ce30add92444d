// Package aof is the node's append-only log: the bytes and the files, not
// the commands. The node appends every write (in a form that replays
// deterministically) before it replies, waits until the record is durable
// by the --appendfsync policy, and replays the log at startup.
//
// # Model
//
// Append encodes a Record into an in-memory buffer under a mutex and
// returns its LSN (log sequence number: 1, 2, 3, … across restarts). It
// does no I/O, so callers may hold keyspace locks while appending, and one
// Append is one contiguous record. A single writer goroutine swaps the
// buffer out, writes it with one write(2) and, with Always, fsyncs it
// before it advances the durable LSN and wakes every Wait that it covers:
// many clients share one write and one fsync (group commit). With
// EverySec another goroutine fsyncs at most once a second; with No only
// Close fsyncs.
//
// A failed write or fsync makes the log's error sticky (Err, and Wait for
// anything not yet durable): the node must answer MISCONF instead of
// acknowledging. Records appended meanwhile stay buffered in order; the
// writer retries every RetryInterval and clears the error once a write and
// an fsync both succeed. Because Linux may drop dirty pages after a failed
// fsync and report success on the next one, the writer keeps every byte
// written since the last good fsync (Always and EverySec) and, after a
// failed fsync, truncates the file back to the last fsynced size and
// writes those bytes again before it fsyncs.
//
// # Compaction
//
// The log is compacted as Redis's BGREWRITEAOF does, in three steps that
// leave appenders running:
//
//  1. Rotate ends the current log file and starts a new one. It hands the
//     bytes appended so far to the writer goroutine and gives Append a
//     fresh buffer; the writer writes and fsyncs the old file, creates the
//     new one (its header's base is B, the old file's last LSN), fsyncs it
//     and the directory, names it last in a new manifest, switches its
//     per-file state (the file, the fsync and rewrite bookkeeping that
//     EverySec's syncer shares) and returns B. Appends never wait on this
//     I/O, only on the usual durability.
//  2. The caller writes a snapshot through CreateSnapshot(B)'s
//     SnapshotWriter, slot by slot while clients keep writing; each slot
//     carries the LSN its data is as of (>= B), and at replay the caller
//     skips that slot's records up to it.
//  3. Commit fsyncs the snapshot, renames it to appendonly.<n>.snap (n the
//     number of the log file whose base is B), then replaces the manifest
//     with one naming the snapshot and the log files from that one on, and
//     only then deletes the snapshot and log files it replaced.
//
// Every file is whole and fsynced, and its directory entry fsynced, before
// a manifest names it, and a file is deleted only once a manifest that no
// longer names it is durable, so a crash at any moment leaves one valid
// set of files: the old manifest's or the new one's. Files of ours that
// the manifest does not name (a crash's leftovers) are removed by Open.
// One Rotate or snapshot runs at a time (ErrBusy). A failure at any step
// keeps the previous manifest and every record; the one exception is a
// directory fsync failing after a manifest's rename: the new manifest
// stands, and after a Rotate the log's error stays sticky until a
// directory fsync succeeds (records in the new file are not acknowledged
// while a crash could bring back the manifest without it).
//
// # Files
//
// The log lives in Options.Dir:
//
//	appendonly.manifest  names the current files, replaced atomically
//	                     (written to appendonly.manifest.tmp, fsynced,
//	                     renamed, directory fsynced)
//	appendonly.<n>.aof   log files, n = 1, 2, … in the order they were
//	                     started (a new one is numbered after the largest
//	                     number the manifest names)
//	appendonly.<n>.snap  the snapshot the manifest names, if any; n is the
//	                     number of the first log file replayed after it
//	*.tmp                files being written, renamed into place when whole
//	*.aof.dropped        log files Replay's CutCorrupt dropped, kept for
//	                     inspection
//
// The directory may hold other files (cluster.json and the like): Open
// removes only appendonly.<n>.aof, appendonly.<n>.snap, those with .tmp
// and appendonly.manifest.tmp, when the manifest parsed and does not name
// them.
//
// The manifest is text:
//
//	shardgate-aof-manifest 1
//	snapshot appendonly.3.snap 1234   (optional: the snapshot covers LSNs <= 1234)
//	log appendonly.3.aof              (one or more, in replay order)
//
// The first log file after a snapshot starts where the snapshot does (its
// header's base is the snapshot's LSN), and each later file where the one
// before it ends. Replay reads only the files the manifest names. A
// missing manifest is an empty log if the directory holds no snapshot and
// no log file longer than its header (a crash while the first file was
// being created); otherwise Replay refuses (ErrNoManifest) rather than
// start empty and overwrite them.
//
// # Log file format
//
// A log file is a header then records, back to back:
//
//	header = magic base crc                       (20 bytes)
//	magic:  "SGAOFv1\n"
//	base:   8 bytes little endian, the LSN before the file's first record
//	        (the previous file's last LSN, or the snapshot's)
//	crc:    4 bytes little endian, CRC-32C (Castagnoli) of magic and base
//
//	record = len crc body
//	len:    uvarint, the body's length in bytes (minimal encoding)
//	crc:    4 bytes little endian, CRC-32C of len's bytes and the body
//	body:   uvarint LSN (the previous record's + 1)
//	        kind byte (KindCommand, KindTx, KindInstall, KindDropSlot)
//	        varint slot (zigzag; -1 for keyless records, else 0..16383)
//	        varint now (zigzag; unix ms)
//	        uvarint ncmds, then per command:
//	          uvarint argc, then per argument: uvarint length, the bytes
//
// Numbers are encoding/binary uvarints and varints. Every length is
// checked against the bytes that remain before anything is allocated, so
// a hostile file costs at most its own size in memory.
//
// # Snapshot file format
//
// A snapshot is a header then items framed like records, the last being
// an end item:
//
//	header = magic base crc                       (20 bytes)
//	magic:  "SGSNAPv1"
//	base:   8 bytes little endian, the LSN the snapshot is based on (the
//	        manifest's snapshot LSN; 0 for a standalone snapshot)
//	crc:    4 bytes little endian, CRC-32C of magic and base
//
//	item = len crc body
//	len:    uvarint, the body's length (minimal encoding, at least 1)
//	crc:    4 bytes little endian, CRC-32C of len's bytes and the body
//	body:   kind byte, then
//	  1 slot:  uvarint slot (ascending, < 16384), uvarint LSN (>= base):
//	           the entries that follow belong to slot, whose data is as of
//	           that LSN
//	  2 entry: uvarint key length, the key, the value (the rest of the
//	           body; opaque, the caller's serialized value)
//	  3 end:   uvarint slots, uvarint entries (the counts before it)
//
// All numbers are minimally encoded and an entry needs a slot before it,
// so the format has exactly one encoding for a sequence of calls. A
// snapshot is complete and fsynced before it is renamed into place, so
// any damage (a bad checksum, a missing end item, wrong counts, bytes
// after the end item, slots out of order) is corruption, never a torn
// tail: reading fails with ErrCorrupt naming the file and offset.
//
// # Replay and damage
//
// Replay checks every record's CRC, structure and LSN. A crash mid-write
// leaves a torn tail: a partial or bad last record with nothing valid after
// it. Replay cuts it off (truncates the file to the last good record and
// fsyncs) and logs how many bytes it dropped, like redis-check-aof --fix.
// To tell a torn tail from damage in the middle, Replay looks for any valid
// record (good length, LSN in range, structure and CRC) after the bad one;
// if it finds one, or the search exceeds its work budget, the log is
// corrupt and Replay stops with ErrCorrupt naming the file and offset,
// unless ReplayOptions.CutCorrupt, which cuts there instead (and drops any
// later log files from the manifest, renaming them *.aof.dropped) with an
// Error log line. A snapshot named by the manifest is read first, through
// ReplayOptions.Snapshot; its damage is always an error.
package aof
