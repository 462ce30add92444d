// Package slots holds the pure functions and data every shardgate role
// shares: Redis Cluster's key-to-slot function (CRC16/XMODEM over the key or
// its {hash tag}, modulo 16384) and the command table that says, for every
// command, its arity, its flags and where its keys are.
//
// Nothing here does I/O or keeps mutable state; everything is safe to call
// from any goroutine and the hot paths do not allocate.
package slots

// Count is the number of hash slots in a Redis Cluster keyspace.
const Count = 16384

// crc16tab is the CRC16/XMODEM table (polynomial 0x1021, initial value 0,
// no reflection), the checksum Redis Cluster uses for key slots.
var crc16tab = makeCRC16Table()

func makeCRC16Table() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}

// CRC16 returns the CRC16/XMODEM checksum of b.
func CRC16(b []byte) uint16 { return crc16(b) }

func crc16[T ~string | ~[]byte](b T) uint16 {
	var crc uint16
	for i := 0; i < len(b); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^b[i]]
	}
	return crc
}

// HashTag returns the part of key that decides its slot: the bytes between
// the first '{' and the first '}' after it, when at least one byte stands
// between them; otherwise the whole key.
func HashTag(key []byte) []byte { return hashTag(key) }

func hashTag[T ~string | ~[]byte](key T) T {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}": the whole key is hashed
				}
				return key[i+1 : j]
			}
		}
		return key // no closing brace after the first '{'
	}
	return key
}

// Slot returns the hash slot (0..16383) of key.
func Slot(key []byte) uint16 { return crc16(hashTag(key)) & (Count - 1) }

// SlotString is Slot for a string key.
func SlotString(key string) uint16 { return crc16(hashTag(key)) & (Count - 1) }
