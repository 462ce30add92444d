package node_test

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffBitsArgs covers every argument error of the bitmap commands and
// Redis 7.0's order of checks (arguments, key, type) for each.
func TestDiffBitsArgs(t *testing.T) {
	runStrScripts(t, []strScript{
		{"setbit", [][]string{
			sc("SETBIT", "k", "abc", "1"), sc("SETBIT", "k", "-1", "1"), sc("SETBIT", "k", "4294967296", "1"),
			sc("SETBIT", "k", "+1", "1"), sc("SETBIT", "k", "01", "1"), sc("SETBIT", "k", "1.0", "1"),
			sc("SETBIT", "k", " 1", "1"), sc("SETBIT", "k", "99999999999999999999", "1"),
			sc("SETBIT", "k", "1", "2"), sc("SETBIT", "k", "1", "-1"), sc("SETBIT", "k", "1", " 1"),
			sc("SETBIT", "k", "1", "x"), sc("SETBIT", "k", "1", ""), sc("SETBIT", "k", "1", "01"),
			sc("SETBIT", "list", "x", "1"), sc("SETBIT", "list", "1", "x"), sc("SETBIT", "list", "1", "1"),
			sc("SETBIT", "k"), sc("SETBIT", "k", "1", "1", "1"),
			sc("SETBIT", "k", "7", "1"), sc("SETBIT", "k", "7", "1"), sc("SETBIT", "k", "0", "0"),
			sc("GET", "k"), sc("OBJECT", "ENCODING", "k"),
		}},
		{"getbit", [][]string{
			sc("GETBIT", "nokey", "5"), sc("GETBIT", "nokey", "x"), sc("GETBIT", "list", "x"),
			sc("GETBIT", "list", "1"), sc("GETBIT", "k", "4294967296"), sc("GETBIT", "k", "-1"),
			sc("SET", "k", "foobar"), sc("GETBIT", "k", "1"), sc("GETBIT", "k", "47"), sc("GETBIT", "k", "48"),
			sc("GETBIT", "k", "4294967295"), sc("SET", "n", "12"), sc("GETBIT", "n", "2"), sc("OBJECT", "ENCODING", "n"),
		}},
		{"bitcount", [][]string{
			sc("BITCOUNT", "nokey"), sc("BITCOUNT", "nokey", "0"), sc("BITCOUNT", "nokey", "a", "b", "c", "d"),
			sc("BITCOUNT", "list"), sc("BITCOUNT", "list", "a", "b"), sc("BITCOUNT", "list", "0", "1", "x"),
			sc("SET", "k", "foobar"),
			sc("BITCOUNT", "k"), sc("BITCOUNT", "k", "1"), sc("BITCOUNT", "k", "a", "b"), sc("BITCOUNT", "k", "0", "a"),
			sc("BITCOUNT", "k", "0", "1", "x"), sc("BITCOUNT", "k", "a", "1", "x"), sc("BITCOUNT", "k", "0", "1", "byte", "x"),
			sc("BITCOUNT", "k", "0", "-1", "bit"), sc("BITCOUNT", "k", "0", "1", "BiT"), sc("BITCOUNT", "k", "0", "1", "BYTE"),
			sc("BITCOUNT", "k", "5", "30", "bit"), sc("BITCOUNT", "k", "-5", "-1", "bit"), sc("BITCOUNT", "k", "-100", "100"),
			sc("BITCOUNT", "k", "2", "1"), sc("BITCOUNT", "k", "-1", "-5"), sc("BITCOUNT", "k", "-1", "-5", "bit"),
			sc("BITCOUNT", "k", "9223372036854775807", "-9223372036854775808"),
			sc("BITCOUNT", "k", "-9223372036854775808", "-1", "bit"), sc("BITCOUNT", "k", "0", "9223372036854775807", "bit"),
			sc("BITCOUNT", "k", "1", "1", "1", "1"), sc("BITCOUNT", "k", "-1", "-5", "bits"), sc("BITCOUNT", "k", "1", "5", "bits"),
			sc("SET", "n", "-123"), sc("BITCOUNT", "n", "1", "2"),
		}},
		{"bitpos", [][]string{
			sc("BITPOS", "nokey", "1"), sc("BITPOS", "nokey", "0"), sc("BITPOS", "nokey", "2"), sc("BITPOS", "nokey", "x"),
			sc("BITPOS", "nokey", "1", "a"), sc("BITPOS", "nokey", "0", "0", "1", "x"), sc("BITPOS", "nokey", "1", "2", "3", "4", "5"),
			sc("BITPOS", "list", "2"), sc("BITPOS", "list", "1", "a"), sc("BITPOS", "list", "1"),
			sc("SET", "k", "foobar"),
			sc("BITPOS", "k", "2"), sc("BITPOS", "k", "x"), sc("BITPOS", "k", "1", "a"), sc("BITPOS", "k", "1", "0", "a"),
			sc("BITPOS", "k", "1", "0", "1", "x"), sc("BITPOS", "k", "1", "0", "a", "x"), sc("BITPOS", "k", "1", "a", "0", "x"),
			sc("BITPOS", "k", "1", "2", "3", "4", "5"), sc("BITPOS", "k", "1", "-1", "-5"), sc("BITPOS", "k", "0", "-1", "-5"),
			sc("BITPOS", "k", "0", "0", "-1", "bit"), sc("BITPOS", "k", "1", "3", "100", "BIT"),
			sc("SET", "f", "\xff\xff"), sc("BITPOS", "f", "0"), sc("BITPOS", "f", "0", "1"), sc("BITPOS", "f", "0", "0", "-1"),
			sc("BITPOS", "f", "0", "0", "-1", "bit"), sc("BITPOS", "f", "0", "3", "100", "bit"), sc("BITPOS", "f", "1", "3", "100", "bit"),
			sc("BITPOS", "f", "0", "-1"), sc("BITPOS", "f", "0", "5"), sc("BITPOS", "f", "0", "3", "10", "byte"),
			sc("SET", "z", ""), sc("BITPOS", "z", "0"), sc("BITPOS", "z", "1"), sc("BITCOUNT", "z"),
			sc("SET", "n", "7"), sc("BITPOS", "n", "0"), sc("BITPOS", "n", "1", "0", "0"),
		}},
		{"bitop", [][]string{
			sc("BITOP", "and"), sc("BITOP", "and", "{t}x"), sc("SET", "{t}k", "foobar"), sc("SET", "{t}s", "ab"),
			sc("BITOP", "foo", "{t}d", "{t}k"), sc("BITOP", "not", "{t}d", "{t}k", "{t}k"), sc("BITOP", "not", "{t}d"),
			sc("BITOP", "NoT", "{t}d", "{t}nokey"), sc("SET", "{t}d", "x"), sc("BITOP", "not", "{t}d", "{t}nokey"),
			sc("EXISTS", "{t}d"), sc("BITOP", "and", "{t}d", "{t}list"), sc("BITOP", "and", "{t}d", "{t}k", "{t}list"),
			sc("BITOP", "foo", "{t}d", "{t}list"), sc("BITOP", "not", "{t}d", "{t}list", "{t}k"),
			sc("BITOP", "and", "{t}d", "{t}nokey", "{t}list"), sc("BITOP", "or", "{t}d", "{t}k"), sc("GET", "{t}d"),
			sc("OBJECT", "ENCODING", "{t}d"), sc("BITOP", "xor", "{t}d", "{t}k", "{t}s"), sc("GET", "{t}d"),
			sc("BITOP", "AND", "{t}d", "{t}k", "{t}s"), sc("GET", "{t}d"), sc("BITOP", "not", "{t}d", "{t}s"), sc("GET", "{t}d"),
			sc("SET", "{t}d", "x", "EX", "100"), sc("BITOP", "or", "{t}d", "{t}s"), sc("TTL", "{t}d"),
			sc("BITOP", "and", "{t}d", "{t}d", "{t}k"), sc("GET", "{t}d"), sc("BITOP", "and", "{t}k", "{t}nokey", "{t}k"),
			sc("EXISTS", "{t}k"), sc("BITOP", "or", "{t}d", "{t}nokey"), sc("EXISTS", "{t}d"),
			sc("BITOP", "and", "x", "y"), sc("BITOP", "not", "{t}list", "{t}s"), sc("TYPE", "{t}list"),
		}},
		{"encodings", [][]string{
			sc("SET", "k", "123"), sc("SETBIT", "k", "0", "0"), sc("OBJECT", "ENCODING", "k"), sc("GET", "k"),
			sc("SET", "k", "abc"), sc("SETBIT", "k", "100", "0"), sc("OBJECT", "ENCODING", "k"), sc("STRLEN", "k"),
			sc("GET", "k"), sc("INCR", "k"), sc("APPEND", "k", "1"), sc("GETRANGE", "k", "0", "-1"),
		}},
	})
}

// TestDiffBitsLarge writes past the plain-string threshold so the node
// keeps a paged Bitmap, and checks that every strings command sees
// Redis's bytes: GET of a few-MB sparse bitmap, ranges, APPEND, SETRANGE,
// INCR refusing it, COPY, RENAME, and BITOP results of several lengths.
func TestDiffBitsLarge(t *testing.T) {
	p := difftest.Start(t)
	steps := [][]string{
		sc("SETBIT", "{b}a", "16777215", "1"), sc("SETBIT", "{b}a", "5", "1"), sc("SETBIT", "{b}a", "70000", "1"),
		sc("STRLEN", "{b}a"), sc("GET", "{b}a"), sc("BITCOUNT", "{b}a"), sc("BITPOS", "{b}a", "1", "1"),
		sc("BITPOS", "{b}a", "0"), sc("BITPOS", "{b}a", "1", "10"), sc("BITPOS", "{b}a", "1", "8751", "-1"),
		sc("BITCOUNT", "{b}a", "8750", "8752"), sc("BITCOUNT", "{b}a", "69999", "70001", "bit"),
		sc("GETRANGE", "{b}a", "8740", "8760"), sc("GETRANGE", "{b}a", "-3", "-1"), sc("OBJECT", "ENCODING", "{b}a"),
		sc("APPEND", "{b}a", "tail"), sc("GETRANGE", "{b}a", "-6", "-1"), sc("SETRANGE", "{b}a", "100000", "hello"),
		sc("GETRANGE", "{b}a", "99998", "100006"), sc("BITCOUNT", "{b}a"), sc("INCR", "{b}a"), sc("INCRBYFLOAT", "{b}a", "1"),
		sc("COPY", "{b}a", "{b}c"), sc("GET", "{b}c"), sc("RENAME", "{b}c", "{b}r"), sc("BITCOUNT", "{b}r"), sc("EXISTS", "{b}c"),
		sc("SET", "{b}s", "short"), sc("BITOP", "or", "{b}o", "{b}a", "{b}s"), sc("GET", "{b}o"),
		sc("BITOP", "and", "{b}o", "{b}a", "{b}s"), sc("GET", "{b}o"), sc("BITOP", "xor", "{b}o", "{b}a", "{b}r"),
		sc("STRLEN", "{b}o"), sc("BITCOUNT", "{b}o"), sc("BITOP", "not", "{b}o", "{b}a"), sc("BITCOUNT", "{b}o"),
		sc("BITPOS", "{b}o", "0"), sc("BITPOS", "{b}o", "1", "2097151"), sc("GETRANGE", "{b}o", "2097140", "2097160"),
		sc("SETBIT", "{b}a", "16777215", "0"), sc("BITPOS", "{b}a", "0", "2097151"), sc("BITPOS", "{b}a", "1", "-1"),
		sc("GETSET", "{b}a", "v"), sc("GET", "{b}a"), sc("SETRANGE", "{b}g", "3000000", "x"), sc("GET", "{b}g"),
		sc("SETRANGE", "{b}g", "0", "\xff"), sc("BITPOS", "{b}g", "1"), sc("BITPOS", "{b}g", "0"),
		sc("SET", "{b}big", string(make([]byte, 20000))), sc("SETBIT", "{b}big", "200000", "1"), sc("GET", "{b}big"),
		sc("SETBIT", "{b}big", "0", "1"), sc("BITPOS", "{b}big", "1", "1"), sc("MEMORY", "USAGE", "{b}nokey"),
	}
	for _, proto := range []int{2, 3} {
		p.Flush(t)
		for _, args := range steps {
			p.DoProto(t, proto, args...)
		}
	}
}

// TestDiffBitsMaxOffset sets the last addressable bit, which makes Redis
// allocate 512 MB (the node: one page), and compares everything but a full
// GET (512 MB through the test client twice would be too heavy for the
// shared machine; TestBitmapHugeOffsets and the GET tests above cover
// that path).
func TestDiffBitsMaxOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 512 MB in redis-server")
	}
	p := difftest.Start(t)
	// Each 512 MB operation takes redis-server a fraction of a second
	// alone, but seconds on a loaded machine (seen over 10 s while the
	// race detector ran other packages' tests).
	p.Redis.Timeout, p.Node.Timeout = time.Minute, time.Minute
	p.Flush(t)
	for _, args := range [][]string{
		sc("SETBIT", "{m}k", "4294967295", "1"), sc("SETBIT", "{m}k", "4294967296", "1"), sc("STRLEN", "{m}k"),
		sc("GETBIT", "{m}k", "4294967295"), sc("GETBIT", "{m}k", "4294967294"), sc("BITCOUNT", "{m}k"),
		sc("BITPOS", "{m}k", "1"), sc("BITPOS", "{m}k", "0"), sc("BITPOS", "{m}k", "1", "-1"),
		sc("BITCOUNT", "{m}k", "-1", "-1"), sc("BITCOUNT", "{m}k", "4294967000", "-1", "bit"),
		sc("GETRANGE", "{m}k", "-2", "-1"), sc("GETRANGE", "{m}k", "536870900", "536870912"),
		sc("SETRANGE", "{m}k", "536870911", "ab"), sc("APPEND", "{m}k", "x"), sc("SETRANGE", "{m}k", "536870910", "x"),
		sc("SETBIT", "{m}k", "0", "1"), sc("BITPOS", "{m}k", "1", "1"), sc("BITPOS", "{m}k", "0", "0", "0"),
		sc("BITOP", "and", "{m}d", "{m}k", "{m}nokey"), sc("STRLEN", "{m}d"), sc("BITCOUNT", "{m}d"),
		sc("SET", "{m}s", "\x80"), sc("BITOP", "and", "{m}d", "{m}k", "{m}s"), sc("BITCOUNT", "{m}d"), sc("STRLEN", "{m}d"),
		sc("DEL", "{m}d", "{m}k"),
	} {
		p.Do(t, args...)
	}
	p.Flush(t)
}

// TestDiffBitsRandomRanges compares BITCOUNT and BITPOS over many random
// ranges (both units, negative and out-of-range indexes) on values of a
// few shapes: plain short strings, strings of ones, and Bitmaps with
// pages of every kind.
func TestDiffBitsRandomRanges(t *testing.T) {
	p := difftest.Start(t)
	p.Flush(t)
	rng := rand.New(rand.NewSource(3))
	for _, args := range [][]string{
		sc("SET", "short", "foobar\x00\xff\x01"),
		sc("SET", "ones", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
		sc("SETRANGE", "dense", "9000", string(bytesOf(0xff, 10000))),
		sc("SETBIT", "dense", "100", "1"), sc("SETBIT", "dense", "150000", "0"),
	} {
		p.Do(t, args...)
	}
	for i := 0; i < 200; i++ {
		off := rng.Intn(40000 * 8)
		p.Do(t, "SETBIT", "sparse", strconv.Itoa(off), "1")
	}
	keys := []string{"short", "ones", "dense", "sparse"}
	lens := map[string]int{"short": 9, "ones": 17, "dense": 19000, "sparse": 40000}
	idx := func(n int, bit bool) string {
		if bit {
			n *= 8
		}
		return strconv.Itoa(rng.Intn(2*n+20) - n - 10)
	}
	for i := 0; i < 600; i++ {
		k := keys[rng.Intn(len(keys))]
		bit := rng.Intn(2) == 0
		unit := "BYTE"
		if bit {
			unit = "BIT"
		}
		n := lens[k]
		switch rng.Intn(6) {
		case 0:
			p.Do(t, "BITCOUNT", k, idx(n, bit), idx(n, bit), unit)
		case 1:
			p.Do(t, "BITCOUNT", k, idx(n, false), idx(n, false))
		case 2:
			p.Do(t, "BITPOS", k, fmt.Sprint(rng.Intn(2)), idx(n, bit), idx(n, bit), unit)
		case 3:
			p.Do(t, "BITPOS", k, fmt.Sprint(rng.Intn(2)), idx(n, false))
		case 4:
			p.Do(t, "BITPOS", k, fmt.Sprint(rng.Intn(2)), idx(n, false), idx(n, false))
		case 5:
			p.Do(t, "GETRANGE", k, idx(n, false), idx(n, false))
		}
	}
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestDiffBitsWatchAndStats checks what WATCH and INFO observe: SETBIT
// that changes nothing does not touch the key nor count as a change, a
// BITOP that deletes dest does, and reads count hits and misses.
func TestDiffBitsWatchAndStats(t *testing.T) {
	p := difftest.Start(t)
	p.Flush(t)
	a := p.NewConn(t)
	b := p.NewConn(t)
	a.Do(t, "SET", "{w}k", "a")
	for _, write := range [][]string{
		sc("SETBIT", "{w}k", "1", "1"), // already set: no change
		sc("SETBIT", "{w}k", "0", "1"),
		sc("SETBIT", "{w}k", "100", "0"), // grows: a change
		sc("BITOP", "and", "{w}k", "{w}nokey"),
		sc("BITOP", "and", "{w}k", "{w}nokey"), // nothing to delete
	} {
		a.Do(t, "WATCH", "{w}k")
		a.Do(t, "MULTI")
		a.Do(t, "GET", "{w}k")
		b.Do(t, write...)
		a.Do(t, "EXEC")
	}
	for _, c := range [][]string{
		sc("GETBIT", "{w}k", "1"), sc("GETBIT", "{w}x", "1"), sc("BITCOUNT", "{w}x"), sc("BITPOS", "{w}k", "1"),
		sc("BITOP", "or", "{w}d", "{w}k", "{w}x", "{w}y"), sc("BITOP", "or", "{w}d", "{w}x"), sc("BITOP", "or", "{w}d", "{w}x"),
		sc("SETBIT", "{w}k", "1", "1"), sc("SETBIT", "{w}k", "1", "1"), sc("SETBIT", "{w}k", "1000", "0"),
		sc("BITCOUNT", "{w}k", "0", "1"), sc("BITPOS", "{w}x", "0"),
	} {
		counters := func() [3][2]string {
			var out [3][2]string
			for i, f := range []string{"keyspace_hits", "keyspace_misses", "rdb_changes_since_last_save"} {
				sec := "stats"
				if i == 2 {
					sec = "persistence"
				}
				out[i][0], out[i][1] = infoBoth(t, p, sec, f)
			}
			return out
		}
		before := counters()
		p.Do(t, c...)
		after := counters()
		for i := range after {
			if r, n := delta(after[i][0], before[i][0]), delta(after[i][1], before[i][1]); r != n {
				t.Errorf("after %q: counter %d moved by %s in redis, %s in the node", c, i, r, n)
			}
		}
	}
}
