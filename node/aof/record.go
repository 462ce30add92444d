package aof

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"slices"
)

// Record kinds.
const (
	KindCommand  byte = 1 // Cmds[0] is one write command's args, run at Now
	KindTx       byte = 2 // Cmds are the write commands of one MULTI/EXEC, all or nothing
	KindInstall  byte = 3 // Cmds[0] = [key, payload]: a value installed by a slot migration (payload is engine.AppendEntry's)
	KindDropSlot byte = 4 // the keys of Slot were dropped (the slot moved away)
)

// NumSlots bounds Record.Slot: -1 (keyless) or 0..NumSlots-1.
const NumSlots = 16384

// Record is one entry of the log.
type Record struct {
	LSN  uint64 // assigned by Append (which also stores it here), strictly increasing from 1 across restarts
	Kind byte
	Slot int32 // the slot the record touches, -1 for keyless records (FLUSHALL)
	Now  int64 // unix ms the command ran with (replay runs it with the same clock)
	Cmds [][][]byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	maxUvarintLen = binary.MaxVarintLen64
	crcLen        = 4
	// minBody is the smallest body: one byte each for LSN, kind, slot, now
	// and ncmds.
	minBody = 5
	// minFrame is the smallest record on disk.
	minFrame = 1 + crcLen + minBody
)

func uvarintLen(v uint64) int {
	// 7 bits per byte; 0 still takes one byte.
	return (bits.Len64(v|1) + 6) / 7
}

func varintLen(v int64) int {
	return uvarintLen(uint64(v<<1) ^ uint64(v>>63))
}

func validKind(k byte) bool { return k >= KindCommand && k <= KindDropSlot }

func validSlot(s int64) bool { return s >= -1 && s < NumSlots }

// restSize is the encoded size of r's body without its LSN, which is only
// known under the append lock.
func restSize(r *Record) int {
	n := 1 + varintLen(int64(r.Slot)) + varintLen(r.Now) + uvarintLen(uint64(len(r.Cmds)))
	for _, c := range r.Cmds {
		n += uvarintLen(uint64(len(c)))
		for _, a := range c {
			n += uvarintLen(uint64(len(a))) + len(a)
		}
	}
	return n
}

// appendRecord appends r as one record with the given LSN; rest is
// restSize(r).
func appendRecord(dst []byte, r *Record, lsn uint64, rest int) []byte {
	body := uvarintLen(lsn) + rest
	dst = slices.Grow(dst, uvarintLen(uint64(body))+crcLen+body)
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(body))
	crcAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, lsn)
	dst = append(dst, r.Kind)
	dst = binary.AppendVarint(dst, int64(r.Slot))
	dst = binary.AppendVarint(dst, r.Now)
	dst = binary.AppendUvarint(dst, uint64(len(r.Cmds)))
	for _, c := range r.Cmds {
		dst = binary.AppendUvarint(dst, uint64(len(c)))
		for _, a := range c {
			dst = binary.AppendUvarint(dst, uint64(len(a)))
			dst = append(dst, a...)
		}
	}
	crc := crc32.Update(crc32.Update(0, castagnoli, dst[start:crcAt]), castagnoli, dst[crcAt+crcLen:])
	binary.LittleEndian.PutUint32(dst[crcAt:], crc)
	return dst
}

// EncodeRecord appends r, with its own LSN, as one record in the log file
// format. The log uses it through Append; it is exported for tests and
// tools that build log files.
func EncodeRecord(dst []byte, r *Record) []byte {
	return appendRecord(dst, r, r.LSN, restSize(r))
}

// readUvarint decodes a minimally encoded uvarint at the start of b.
func readUvarint(b []byte) (uint64, int, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n != uvarintLen(v) {
		return 0, 0, false
	}
	return v, n, true
}

func readVarint(b []byte) (int64, int, bool) {
	u, n, ok := readUvarint(b)
	if !ok {
		return 0, 0, false
	}
	return int64(u>>1) ^ -int64(u&1), n, true
}

var errShortBody = errors.New("record body ends early")

// decoder turns bodies into Records, reusing its slices across calls.
type decoder struct {
	cmds [][][]byte
	args [][]byte
	// steps counts fields visited, the cost of decoding (for the scan's
	// work budget).
	steps int
}

// decode parses body into r. r's slices alias body and d's buffers: they
// are valid until the next decode.
func (d *decoder) decode(body []byte, r *Record) error {
	b := body
	lsn, n, ok := readUvarint(b)
	if !ok {
		return errors.New("bad LSN")
	}
	b = b[n:]
	if len(b) < 1 {
		return errShortBody
	}
	kind := b[0]
	if !validKind(kind) {
		return fmt.Errorf("unknown record kind %d", kind)
	}
	b = b[1:]
	slot, n, ok := readVarint(b)
	if !ok || !validSlot(slot) {
		return errors.New("bad slot")
	}
	b = b[n:]
	now, n, ok := readVarint(b)
	if !ok {
		return errors.New("bad time")
	}
	b = b[n:]
	ncmds, n, ok := readUvarint(b)
	// Each command takes at least one byte (its argc).
	if !ok || ncmds > uint64(len(b)-n) {
		return errors.New("bad command count")
	}
	b = b[n:]
	d.steps += 5
	cmds := d.cmds[:0]
	args := d.args[:0]
	for range ncmds {
		d.steps++
		argc, n, ok := readUvarint(b)
		if !ok || argc > uint64(len(b)-n) {
			return errors.New("bad argument count")
		}
		b = b[n:]
		first := len(args)
		for range argc {
			d.steps++
			l, n, ok := readUvarint(b)
			if !ok || l > uint64(len(b)-n) {
				return errors.New("bad argument length")
			}
			args = append(args, b[n:n+int(l):n+int(l)])
			b = b[n+int(l):]
		}
		cmds = append(cmds, args[first:len(args):len(args)])
	}
	if len(b) != 0 {
		return fmt.Errorf("%d stray bytes after the commands", len(b))
	}
	d.cmds, d.args = cmds, args
	*r = Record{LSN: lsn, Kind: kind, Slot: int32(slot), Now: now, Cmds: cmds}
	return nil
}

// DecodeRecord parses one record at the start of b, checking its CRC, and
// returns it with the number of bytes it took. The record's slices alias b.
// It is exported for tests and tools; Replay does the same while streaming.
func DecodeRecord(b []byte) (*Record, int, error) {
	body, n, err := frameAt(b)
	if err != nil {
		return nil, 0, err
	}
	var d decoder
	r := new(Record)
	if err := d.decode(body, r); err != nil {
		return nil, 0, err
	}
	return r, n, nil
}

// frameAt checks the framing and CRC of the record at the start of b and
// returns its body and total length.
func frameAt(b []byte) ([]byte, int, error) {
	l, n, ok := readUvarint(b)
	if !ok {
		return nil, 0, errors.New("bad record length")
	}
	if len(b) < n+crcLen || l < minBody || l > uint64(len(b)-n-crcLen) {
		return nil, 0, errors.New("record length out of range")
	}
	end := n + crcLen + int(l)
	if !crcOK(b[:end], n) {
		return nil, 0, errors.New("record checksum mismatch")
	}
	return b[n+crcLen : end], end, nil
}

// crcOK checks the CRC of frame, whose length prefix takes n bytes.
func crcOK(frame []byte, n int) bool {
	want := binary.LittleEndian.Uint32(frame[n:])
	got := crc32.Update(crc32.Update(0, castagnoli, frame[:n]), castagnoli, frame[n+crcLen:])
	return got == want
}
