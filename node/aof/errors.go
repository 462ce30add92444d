package aof

import "errors"

var (
	// ErrCorrupt marks a log or manifest that is damaged other than by a
	// torn tail; the wrapping error names the file and offset.
	ErrCorrupt = errors.New("aof: corrupt log")
	// ErrNoManifest is returned by Replay when the manifest is missing
	// but the directory holds a snapshot or log records of ours.
	ErrNoManifest = errors.New("aof: manifest missing")
	// ErrClosed is returned by Wait for a record that was not made durable
	// before Close.
	ErrClosed = errors.New("aof: log closed")
	// ErrUnknownLSN is returned by Wait for an LSN that Append never
	// returned.
	ErrUnknownLSN = errors.New("aof: wait for an LSN that was never appended")
	// ErrBusy is returned by Rotate and CreateSnapshot while another
	// Rotate or snapshot of the same log is in flight.
	ErrBusy = errors.New("aof: a rotation or snapshot is already in progress")
	// ErrNoSnapshotLoader is returned by Replay when the manifest names a
	// snapshot and ReplayOptions.Snapshot is nil.
	ErrNoSnapshotLoader = errors.New("aof: the manifest names a snapshot but no snapshot loader was given")
)
