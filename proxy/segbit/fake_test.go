package segbit

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// tester is what the helpers need of *testing.T and *rapid.T.
type tester interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

// fakeBackend is an in-memory cluster: string keys in a Go map, the node
// commands segbit uses with Redis 7.0's semantics (ported from bitops.c),
// and checks of segbit's side of the contract: every BITOP's keys share a
// slot, and nothing relies on the order of commands inside one Do (they
// run shuffled).
type fakeBackend struct {
	t tester

	mu      sync.Mutex
	strs    map[string][]byte
	lists   map[string]bool   // keys of another type (WRONGTYPE)
	fail    map[string]string // key -> error reply to give
	rnd     *rand.Rand
	calls   int // Do calls
	cmds    int // commands
	doErr   error
	maxDoSz int
}

func newFake(t tester) *fakeBackend {
	return &fakeBackend{
		t: t, strs: map[string][]byte{}, lists: map[string]bool{}, fail: map[string]string{},
		rnd: rand.New(rand.NewPCG(7, 11)),
	}
}

func (f *fakeBackend) Do(ctx context.Context, cmds [][][]byte) ([]resp.Value, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.doErr != nil {
		return nil, f.doErr
	}
	f.calls++
	f.cmds += len(cmds)
	f.maxDoSz = max(f.maxDoSz, len(cmds))
	out := make([]resp.Value, len(cmds))
	for _, i := range f.rnd.Perm(len(cmds)) {
		out[i] = f.exec(cmds[i])
	}
	return out, nil
}

func errV(s string) resp.Value { return resp.Value{Type: '-', Str: []byte(s)} }
func intV(n int64) resp.Value  { return resp.Value{Type: ':', Int: n} }

func (f *fakeBackend) exec(cmd [][]byte) resp.Value {
	name := strings.ToUpper(string(cmd[0]))
	keys := cmd[1:2]
	if name == "BITOP" {
		keys = cmd[2:]
		for _, k := range keys[1:] {
			if slots.Slot(k) != slots.Slot(keys[0]) {
				f.t.Errorf("fake: BITOP keys in different slots: %q", cmd)
			}
		}
	}
	for _, k := range keys {
		if msg, ok := f.fail[string(k)]; ok {
			return errV(msg)
		}
	}
	key := string(cmd[1])
	typed := func(k string) bool { return f.lists[k] }
	wrong := errV(resp.ErrWrongType)
	atoi := func(b []byte) int64 {
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			f.t.Fatalf("fake: bad integer in %q", cmd)
		}
		return n
	}
	switch name {
	case "GET":
		if typed(key) {
			return wrong
		}
		if v, ok := f.strs[key]; ok {
			return resp.Value{Type: '$', Str: append([]byte(nil), v...)}
		}
		return resp.Value{Type: '$', Null: true}
	case "GETDEL":
		if typed(key) {
			return wrong
		}
		if v, ok := f.strs[key]; ok {
			delete(f.strs, key)
			return resp.Value{Type: '$', Str: v}
		}
		return resp.Value{Type: '$', Null: true}
	case "STRLEN":
		if typed(key) {
			return wrong
		}
		return intV(int64(len(f.strs[key])))
	case "DEL":
		var n int64
		for _, k := range cmd[1:] {
			if _, ok := f.strs[string(k)]; ok || f.lists[string(k)] {
				n++
			}
			delete(f.strs, string(k))
			delete(f.lists, string(k))
		}
		return intV(n)
	case "SETBIT":
		if typed(key) {
			return wrong
		}
		off, v := atoi(cmd[2]), atoi(cmd[3])
		if off < 0 || off >= 1<<32 {
			return errV(resp.ErrBitOffset)
		}
		s := f.strs[key]
		if need := int(off/8) + 1; len(s) < need {
			s = append(s, make([]byte, need-len(s))...)
		}
		mask := byte(0x80 >> (off & 7))
		old := s[off/8]&mask != 0
		if v == 1 {
			s[off/8] |= mask
		} else {
			s[off/8] &^= mask
		}
		f.strs[key] = s
		if old {
			return intV(1)
		}
		return intV(0)
	case "GETBIT":
		if typed(key) {
			return wrong
		}
		off := atoi(cmd[2])
		s := f.strs[key]
		if off/8 < int64(len(s)) && s[off/8]&(0x80>>(off&7)) != 0 {
			return intV(1)
		}
		return intV(0)
	case "BITCOUNT":
		if typed(key) {
			return wrong
		}
		return intV(redisBitcount(f.strs[key], cmd[2:]))
	case "BITPOS":
		if typed(key) {
			return wrong
		}
		s, ok := f.strs[key]
		return intV(redisBitpos(s, ok, cmd[2:]))
	case "BITOP":
		op := strings.ToUpper(string(cmd[1]))
		dest := string(cmd[2])
		var srcs [][]byte
		maxLen := 0
		for _, k := range cmd[3:] {
			if typed(string(k)) {
				return wrong
			}
			srcs = append(srcs, f.strs[string(k)])
			maxLen = max(maxLen, len(f.strs[string(k)]))
		}
		if maxLen == 0 {
			delete(f.strs, dest)
			delete(f.lists, dest)
			return intV(0)
		}
		res := make([]byte, maxLen)
		at := func(s []byte, j int) byte {
			if j < len(s) {
				return s[j]
			}
			return 0
		}
		for j := range res {
			out := at(srcs[0], j)
			if op == "NOT" {
				out = ^out
			}
			for _, s := range srcs[1:] {
				switch op {
				case "AND":
					out &= at(s, j)
				case "OR":
					out |= at(s, j)
				case "XOR":
					out ^= at(s, j)
				}
			}
			res[j] = out
		}
		delete(f.lists, dest)
		f.strs[dest] = res
		return intV(int64(maxLen))
	}
	f.t.Fatalf("fake: command %q not implemented", cmd)
	return resp.Value{}
}

// redisBitcount is bitcountCommand on s (nil: missing key) with the
// arguments after the key, which segbit always sends well formed.
func redisBitcount(s []byte, args [][]byte) int64 {
	if s == nil {
		return 0
	}
	var start, end int64 = 0, int64(len(s)) - 1
	isBit := false
	var firstMask, lastMask byte
	if len(args) >= 2 {
		start, _ = strconv.ParseInt(string(args[0]), 10, 64)
		end, _ = strconv.ParseInt(string(args[1]), 10, 64)
		isBit = len(args) == 3 && strings.EqualFold(string(args[2]), "BIT")
		totlen := int64(len(s))
		if start < 0 && end < 0 && start > end {
			return 0
		}
		if isBit {
			totlen <<= 3
		}
		if start < 0 {
			start += totlen
		}
		if end < 0 {
			end += totlen
		}
		start, end = max(start, 0), max(end, 0)
		if end >= totlen {
			end = totlen - 1
		}
		if isBit && start <= end {
			firstMask = ^byte((1<<(8-(start&7)))-1) & 0xff
			lastMask = byte((1 << (7 - (end & 7))) - 1)
			start >>= 3
			end >>= 3
		}
	}
	if start > end {
		return 0
	}
	var n int64
	for _, c := range s[start : end+1] {
		n += int64(bits.OnesCount8(c))
	}
	if firstMask != 0 {
		n -= int64(bits.OnesCount8(s[start] & firstMask))
	}
	if lastMask != 0 {
		n -= int64(bits.OnesCount8(s[end] & lastMask))
	}
	return n
}

// firstBit is redisBitpos: the first bit equal to bit in p, or, if none,
// -1 for 1 and len(p)*8 for 0.
func firstBit(p []byte, bit int64) int64 {
	for j, c := range p {
		if bit == 0 {
			c = ^c
		}
		if c != 0 {
			return int64(j)*8 + int64(bits.LeadingZeros8(c))
		}
	}
	if bit == 1 {
		return -1
	}
	return int64(len(p)) * 8
}

// redisBitpos is bitposCommand on s with the arguments after the key.
func redisBitpos(s []byte, exists bool, args [][]byte) int64 {
	bit, _ := strconv.ParseInt(string(args[0]), 10, 64)
	var start, end int64 = 0, -1
	endGiven, isBit := false, false
	if len(args) >= 2 {
		start, _ = strconv.ParseInt(string(args[1]), 10, 64)
	}
	if len(args) >= 3 {
		end, _ = strconv.ParseInt(string(args[2]), 10, 64)
		endGiven = true
	}
	if len(args) == 4 {
		isBit = strings.EqualFold(string(args[3]), "BIT")
	}
	if !exists {
		if bit == 1 {
			return -1
		}
		return 0
	}
	totlen := int64(len(s))
	if isBit {
		totlen <<= 3
	}
	if start < 0 {
		start += totlen
	}
	if end < 0 {
		end += totlen
	}
	start, end = max(start, 0), max(end, 0)
	if end >= totlen {
		end = totlen - 1
	}
	var firstMask, lastMask byte
	if isBit && start <= end {
		firstMask = ^byte((1<<(8-(start&7)))-1) & 0xff
		lastMask = byte((1 << (7 - (end & 7))) - 1)
		start >>= 3
		end >>= 3
	}
	if start > end {
		return -1
	}
	bytes := end - start + 1
	var pos int64
	one := func(c byte) int64 { return firstBit([]byte{c}, bit) }
	func() {
		if firstMask != 0 {
			var c byte
			if bit == 1 {
				c = s[start] &^ firstMask
			} else {
				c = s[start] | firstMask
			}
			if lastMask != 0 && bytes == 1 {
				if bit == 1 {
					c &^= lastMask
				} else {
					c |= lastMask
				}
			}
			pos = one(c)
			if bytes == 1 || (pos != -1 && pos != 8) {
				return
			}
			start++
			bytes--
		}
		cur := bytes
		if lastMask != 0 {
			cur--
		}
		if cur > 0 {
			pos = firstBit(s[start:start+cur], bit)
			if bytes == cur || (pos != -1 && pos != cur<<3) {
				return
			}
			start += cur
			bytes -= cur
		}
		var c byte
		if bit == 1 {
			c = s[end] &^ lastMask
		} else {
			c = s[end] | lastMask
		}
		pos = one(c)
	}()
	if endGiven && bit == 0 && pos == bytes<<3 {
		return -1
	}
	if pos != -1 {
		pos += start << 3
	}
	return pos
}

// do runs a command through h with string arguments.
func do(t tester, h *Handler, b Backend, args ...string) (resp.Value, error) {
	t.Helper()
	a := make([][]byte, len(args))
	for i, s := range args {
		a[i] = []byte(s)
	}
	return h.Exec(context.Background(), b, a)
}

// mustInt runs a command that must reply an integer.
func mustInt(t tester, h *Handler, b Backend, args ...string) int64 {
	t.Helper()
	v, err := do(t, h, b, args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if v.Type != ':' {
		t.Fatalf("%q: reply %+v, want an integer", args, v)
	}
	return v.Int
}

func newHandler(t tester, segBits int, patterns ...string) *Handler {
	t.Helper()
	h, err := New(Options{SegmentBits: segBits, SegmentKeys: patterns})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// String for test failure messages.
func (f *fakeBackend) String() string { return fmt.Sprintf("fake(%d keys)", len(f.strs)) }
