package aof

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// File names in Options.Dir.
const (
	ManifestName = "appendonly.manifest"
	filePrefix   = "appendonly."
	logSuffix    = ".aof"
	snapSuffix   = ".snap"
	tmpSuffix    = ".tmp" // a file being written, renamed into place when whole
	manifestHead = "shardgate-aof-manifest 1"
	// maxManifest bounds the manifest's size (it names a few files).
	maxManifest = 1 << 20
)

var errTooBig = errors.New("file too large")

// manifest is the parsed appendonly.manifest.
type manifest struct {
	snapshot    string // "" for none
	snapshotLSN uint64
	logs        []string // at least one
}

// LogName returns the name of log file n (appendonly.<n>.aof).
func LogName(n uint64) string { return filePrefix + strconv.FormatUint(n, 10) + logSuffix }

// SnapshotName returns the name of snapshot file n (appendonly.<n>.snap).
func SnapshotName(n uint64) string { return filePrefix + strconv.FormatUint(n, 10) + snapSuffix }

// fileSeq parses appendonly.<n><suffix>, rejecting anything else (so a
// manifest can never name a path outside the directory).
func fileSeq(name, suffix string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, suffix)
	if !ok || s == "" || s[0] == '0' || len(s) > 19 {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// ourFile reports whether name is one of the files the log writes
// (appendonly.<n>.aof, appendonly.<n>.snap, those with .tmp, and
// appendonly.manifest.tmp), which Open may remove when the manifest does
// not name it. Anything else in the directory belongs to someone else.
func ourFile(name string) bool {
	if name == ManifestName+tmpSuffix {
		return true
	}
	name = strings.TrimSuffix(name, tmpSuffix)
	_, isLog := fileSeq(name, logSuffix)
	_, isSnap := fileSeq(name, snapSuffix)
	return isLog || isSnap
}

// maxSeq returns the largest file number m names.
func (m *manifest) maxSeq() uint64 {
	var n uint64
	if s, ok := fileSeq(m.snapshot, snapSuffix); ok {
		n = s
	}
	for _, l := range m.logs {
		if s, ok := fileSeq(l, logSuffix); ok {
			n = max(n, s)
		}
	}
	return n
}

func (m *manifest) encode() []byte {
	var b bytes.Buffer
	b.WriteString(manifestHead + "\n")
	if m.snapshot != "" {
		fmt.Fprintf(&b, "snapshot %s %d\n", m.snapshot, m.snapshotLSN)
	}
	for _, l := range m.logs {
		fmt.Fprintf(&b, "log %s\n", l)
	}
	return b.Bytes()
}

func parseManifest(b []byte) (*manifest, error) {
	text, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return nil, errors.New("no final newline")
	}
	lines := strings.Split(text, "\n")
	if lines[0] != manifestHead {
		return nil, fmt.Errorf("first line %q, want %q", lines[0], manifestHead)
	}
	m := new(manifest)
	seen := map[string]bool{}
	for i, line := range lines[1:] {
		f := strings.Split(line, " ")
		switch {
		case f[0] == "snapshot" && len(f) == 3 && i == 0:
			if _, ok := fileSeq(f[1], snapSuffix); !ok {
				return nil, fmt.Errorf("bad snapshot name %q", f[1])
			}
			lsn, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad snapshot LSN %q", f[2])
			}
			m.snapshot, m.snapshotLSN = f[1], lsn
		case f[0] == "log" && len(f) == 2:
			if _, ok := fileSeq(f[1], logSuffix); !ok || seen[f[1]] {
				return nil, fmt.Errorf("bad or repeated log name %q", f[1])
			}
			seen[f[1]] = true
			m.logs = append(m.logs, f[1])
		default:
			return nil, fmt.Errorf("bad line %q", line)
		}
	}
	if len(m.logs) == 0 {
		return nil, errors.New("no log file")
	}
	return m, nil
}

// The log file header.
const (
	headerMagic = "SGAOFv1\n"
	headerLen   = len(headerMagic) + 8 + crcLen
)

func encodeHeader(base uint64) []byte {
	b := make([]byte, 0, headerLen)
	b = append(b, headerMagic...)
	b = binary.LittleEndian.AppendUint64(b, base)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeHeader returns the base LSN of a file header.
func decodeHeader(b []byte) (uint64, error) {
	if len(b) < headerLen {
		return 0, fmt.Errorf("header of %d bytes, want %d", len(b), headerLen)
	}
	if string(b[:len(headerMagic)]) != headerMagic {
		return 0, errors.New("not a shardgate log file (bad magic)")
	}
	if crc32.Checksum(b[:headerLen-crcLen], castagnoli) != binary.LittleEndian.Uint32(b[headerLen-crcLen:]) {
		return 0, errors.New("header checksum mismatch")
	}
	return binary.LittleEndian.Uint64(b[len(headerMagic):]), nil
}
