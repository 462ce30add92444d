package aof

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20)
	tests := []struct {
		name string
		r    Record
	}{
		{"command", Record{LSN: 1, Kind: KindCommand, Slot: 42, Now: 1700000000123,
			Cmds: [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}}}},
		{"command empty arg", Record{LSN: 2, Kind: KindCommand, Slot: 0, Now: 0,
			Cmds: [][][]byte{{[]byte("SET"), []byte("k"), {}}}}},
		{"command big arg", Record{LSN: 1 << 40, Kind: KindCommand, Slot: 16383, Now: math.MaxInt64,
			Cmds: [][][]byte{{[]byte("SET"), []byte("k"), big}}}},
		{"keyless", Record{LSN: math.MaxUint64, Kind: KindCommand, Slot: -1, Now: math.MinInt64,
			Cmds: [][][]byte{{[]byte("FLUSHALL")}}}},
		{"tx", Record{LSN: 7, Kind: KindTx, Slot: 9, Now: 5,
			Cmds: [][][]byte{{[]byte("INCR"), []byte("a")}, {[]byte("XADD"), []byte("s"), []byte("1-1"), []byte("f"), []byte("v")}, {}}}},
		{"install", Record{LSN: 8, Kind: KindInstall, Slot: 100, Now: -1,
			Cmds: [][][]byte{{[]byte("key"), {0x01, 0x00, 0xff, 0x80}}}}},
		{"drop slot", Record{LSN: 9, Kind: KindDropSlot, Slot: 100, Now: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := EncodeRecord([]byte("prefix"), &tc.r)
			got, n, err := DecodeRecord(b[len("prefix"):])
			if err != nil {
				t.Fatal(err)
			}
			if n != len(b)-len("prefix") {
				t.Fatalf("decoded %d bytes of %d", n, len(b)-len("prefix"))
			}
			// A record without commands decodes with an empty, not nil, slice.
			if len(tc.r.Cmds) == 0 && len(got.Cmds) == 0 {
				got.Cmds = tc.r.Cmds
			}
			if !recordsEqual(got, &tc.r) {
				t.Fatalf("got %+v, want %+v", got, tc.r)
			}
			if want := restSize(&tc.r) + uvarintLen(tc.r.LSN); n != uvarintLen(uint64(want))+crcLen+want {
				t.Fatalf("size %d, restSize says body %d", n, want)
			}
		})
	}
}

func TestUvarintLen(t *testing.T) {
	var buf [binary.MaxVarintLen64]byte
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<63 - 1, 1 << 63, math.MaxUint64} {
		if got, want := uvarintLen(v), binary.PutUvarint(buf[:], v); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
	for _, v := range []int64{0, -1, 1, -64, 63, 64, -65, math.MaxInt64, math.MinInt64} {
		if got, want := varintLen(v), binary.PutVarint(buf[:], v); got != want {
			t.Errorf("varintLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// frame wraps a hand-built body in a length and a good CRC.
func frame(body []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(body)))
	n := len(b)
	b = append(b, 0, 0, 0, 0)
	b = append(b, body...)
	crc := crcOfFrame(b, n)
	binary.LittleEndian.PutUint32(b[n:], crc)
	return b
}

func crcOfFrame(b []byte, n int) uint32 {
	lenAndBody := append(append([]byte{}, b[:n]...), b[n+crcLen:]...)
	return crc32.Checksum(lenAndBody, castagnoli)
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short length", []byte{0x80}},
		{"non-minimal length", append([]byte{0x85, 0x00}, make([]byte, 9)...)},
		{"length too small", frame([]byte{1, 1, 0, 0})},
		{"length past end", []byte{100, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
		{"bad crc", func() []byte {
			b := frame([]byte{1, KindDropSlot, 0, 0, 0})
			b[len(b)-1] ^= 1
			return b
		}()},
		{"unknown kind", frame([]byte{1, 9, 0, 0, 0})},
		{"kind zero", frame([]byte{1, 0, 0, 0, 0})},
		{"slot too big", frame(append(binary.AppendVarint([]byte{1, KindCommand}, NumSlots), 0, 0))},
		{"slot below -1", frame(append(binary.AppendVarint([]byte{1, KindCommand}, -2), 0, 0))},
		{"ncmds past end", frame([]byte{1, KindTx, 0, 0, 5, 0})},
		{"argc past end", frame([]byte{1, KindCommand, 0, 0, 1, 3, 0})},
		{"arg past end", frame([]byte{1, KindCommand, 0, 0, 1, 1, 5, 'a'})},
		{"stray bytes", frame([]byte{1, KindDropSlot, 0, 0, 0, 0})},
		{"huge argc", frame(append([]byte{1, KindCommand, 0, 0, 1}, binary.AppendUvarint(nil, math.MaxUint64)...))},
		{"huge arg length", frame(append([]byte{1, KindCommand, 0, 0, 1, 1}, binary.AppendUvarint(nil, 1<<62)...))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r, _, err := DecodeRecord(tc.b); err == nil {
				t.Fatalf("decoded %+v, want an error", r)
			}
		})
	}
}

func TestAppendPanicsOnInvalidRecord(t *testing.T) {
	l, err := Open(Options{Dir: t.TempDir(), Policy: No, Logger: quietLogger()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, r := range []Record{{Kind: 0}, {Kind: 5}, {Kind: KindCommand, Slot: NumSlots}, {Kind: KindCommand, Slot: -2}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Append(%+v) did not panic", r)
				}
			}()
			l.Append(&r)
		}()
	}
	if got := l.LastLSN(); got != 0 {
		t.Fatalf("invalid records took LSNs: last %d", got)
	}
}
