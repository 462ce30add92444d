package slots

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// slotCases come from a real redis-server's CLUSTER KEYSLOT.
var slotCases = []struct {
	key  string
	slot uint16
}{
	{"foo", 12182},
	{"{user1000}.following", 3443},
	{"{user1000}.followers", 3443},
	{"foo{}{bar}", 8363},
	{"foo{{bar}}zap", 4015},
	{"foo{bar}{zap}", 5061},
	{"", 0},
	{"{}", 15257},
	{"}{a}", 15495},
	{"{a", 10276},
}

func TestSlotKnownValues(t *testing.T) {
	for _, tc := range slotCases {
		if got := Slot([]byte(tc.key)); got != tc.slot {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
		if got := SlotString(tc.key); got != tc.slot {
			t.Errorf("SlotString(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

// TestSlotAgainstRedis checks random binary keys, many with braces, with
// a live redis-server's CLUSTER KEYSLOT.
func TestSlotAgainstRedis(t *testing.T) {
	o := startOracle(t)
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("{}ab\x00\xff\r\n ")
	for i := range 400 {
		key := make([]byte, rng.IntN(24))
		for j := range key {
			if i%2 == 0 {
				key[j] = alphabet[rng.IntN(len(alphabet))]
			} else {
				key[j] = byte(rng.IntN(256))
			}
		}
		rep := o.do(t, []byte("CLUSTER"), []byte("KEYSLOT"), key)
		if rep.err != "" {
			t.Fatalf("CLUSTER KEYSLOT %q: %s", key, rep.err)
		}
		if got := Slot(key); int64(got) != rep.num {
			t.Errorf("Slot(%q) = %d, redis-server says %d", key, got, rep.num)
		}
	}
}

// refSlot is an independent, deliberately plain statement of the rule:
// bitwise CRC16/XMODEM over the hash tag (the bytes between the first '{'
// and the next '}', if not empty) or over the whole key.
func refSlot(key []byte) uint16 {
	hashed := key
	open := -1
	for i, c := range key {
		if c == '{' {
			open = i
			break
		}
	}
	if open >= 0 {
		for j := open + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > open+1 {
					hashed = key[open+1 : j]
				}
				break
			}
		}
	}
	var crc uint16
	for _, b := range hashed {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % 16384
}

func TestCRC16CheckValue(t *testing.T) {
	// The standard check value of CRC-16/XMODEM.
	if got := CRC16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("CRC16(123456789) = %#x, want 0x31c3", got)
	}
}

func FuzzSlot(f *testing.F) {
	for _, tc := range slotCases {
		f.Add([]byte(tc.key))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		want := refSlot(key)
		if got := Slot(key); got != want {
			t.Fatalf("Slot(%q) = %d, reference %d", key, got, want)
		}
		if got := SlotString(string(key)); got != want {
			t.Fatalf("SlotString(%q) = %d, reference %d", key, got, want)
		}
	})
}

func BenchmarkSlot(b *testing.B) {
	long := make([]byte, 64)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	for _, bc := range []struct {
		name string
		key  []byte
	}{
		{"short", []byte("key:" + strconv.Itoa(12345))},
		{"16bytes", []byte("key:000000012345")}, // redis-benchmark's -r keys
		{"hashtag", []byte("{user1000}.following")},
		{"64bytes", long},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.key)))
			var sink uint16
			for b.Loop() {
				sink += Slot(bc.key)
			}
			_ = sink
		})
	}
}
