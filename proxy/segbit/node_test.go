package segbit

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { difftest.Main(m) }

// nodeBackend sends every command to one real node (which owns every
// slot) over one pipelined connection.
type nodeBackend struct {
	mu sync.Mutex
	c  *difftest.Conn
}

func dialNode(t *testing.T, addr string) *nodeBackend {
	t.Helper()
	c, err := difftest.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &nodeBackend{c: c}
}

func (nb *nodeBackend) Do(ctx context.Context, cmds [][][]byte) ([]resp.Value, error) {
	nb.mu.Lock()
	defer nb.mu.Unlock()
	for _, cmd := range cmds {
		if err := nb.c.Send(cmd...); err != nil {
			return nil, err
		}
	}
	out := make([]resp.Value, len(cmds))
	for i := range cmds {
		v, err := nb.c.Receive()
		if err != nil {
			return nil, err
		}
		out[i] = toResp(v)
	}
	return out, nil
}

// toResp converts a difftest reply to a resp.Value.
func toResp(v difftest.Value) resp.Value {
	switch v.Kind {
	case difftest.NullBulk:
		return resp.Value{Type: '$', Null: true}
	case difftest.NullArray:
		return resp.Value{Type: '*', Null: true}
	}
	r := resp.Value{Type: byte(v.Kind), Int: v.Int, Str: v.Str}
	for _, e := range v.Elems {
		r.Elems = append(r.Elems, toResp(e))
	}
	return r
}

// TestRealNode runs the huge-offset scenario on a real node: the node's
// own BITCOUNT/BITPOS (BIT ranges) and BITOP do the segment work.
func TestRealNode(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	b := dialNode(t, addr)
	h := newHandler(t, 0, "dau:*")
	ids := []uint64{5_000_000_000, 5_000_000_003, 4_999_999_999, 1 << 40, 1<<40 + 1, 7}
	for _, id := range ids {
		mustInt(t, h, b, "SETBIT", "dau:mon", u(id), "1")
	}
	for _, id := range []uint64{5_000_000_003, 1 << 40, 99} {
		mustInt(t, h, b, "SETBIT", "dau:tue", u(id), "1")
	}
	for _, c := range []struct {
		args []string
		want int64
	}{
		{[]string{"BITCOUNT", "dau:mon"}, 6},
		{[]string{"BITCOUNT", "dau:mon", u(5_000_000_000), u(5_000_000_003), "BIT"}, 2},
		{[]string{"BITCOUNT", "dau:mon", "0", u(5_000_000_000/8 - 1)}, 2},
		{[]string{"BITCOUNT", "dau:mon", "-1", "-1"}, 2},
		{[]string{"BITPOS", "dau:mon", "1", "1"}, 4_999_999_999},
		{[]string{"BITPOS", "dau:mon", "1", u(5_000_000_001), "-1", "BIT"}, 5_000_000_003},
		{[]string{"BITPOS", "dau:mon", "0", u(1 << 40), "-1", "BIT"}, 1<<40 + 2},
		{[]string{"BITPOS", "dau:mon", "0", "-1"}, 1<<40 + 2},
		{[]string{"BITPOS", "dau:mon", "0", "-1", "-1", "BIT"}, 1<<40 + 7},
		{[]string{"GETBIT", "dau:mon", u(1<<40 + 1)}, 1},
		{[]string{"GETBIT", "dau:mon", u(1<<40 + 2)}, 0},
		{[]string{"BITOP", "AND", "dau:both", "dau:mon", "dau:tue"}, (1<<40+1)/8 + 1},
		{[]string{"BITCOUNT", "dau:both"}, 2},
		{[]string{"BITPOS", "dau:both", "1"}, 5_000_000_003},
		{[]string{"BITOP", "XOR", "dau:both", "dau:mon", "dau:tue"}, (1<<40+1)/8 + 1},
		{[]string{"BITCOUNT", "dau:both"}, 5},
		{[]string{"SEGBIT.DEL", "dau:mon", "dau:tue", "dau:both"}, 3},
		{[]string{"BITCOUNT", "dau:mon"}, 0},
		{[]string{"BITPOS", "dau:mon", "0"}, 0},
	} {
		if got := mustInt(t, h, b, c.args...); got != c.want {
			t.Errorf("%q = %d, want %d", c.args, got, c.want)
		}
	}
	v, err := b.Do(context.Background(), [][][]byte{{[]byte("KEYS"), []byte("*")}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range v[0].Elems {
		keys = append(keys, string(e.Str))
	}
	if bad := notUpperIndex(h, keys); len(bad) > 0 {
		t.Errorf("after DEL these keys remain: %v", bad)
	}
}

// TestAgainstRedis runs random BIT* sequences on a plain bitmap in a real
// redis-server and on a segmented bitmap (512-byte segments) over a real
// node, and demands the same replies, errors included, and the same
// bytes.
func TestAgainstRedis(t *testing.T) {
	p := difftest.Start(t)
	b := dialNode(t, p.NodeAddr)
	h := newHandler(t, 12, "*")
	r := p.Redis
	keys := []string{"{x}a", "{x}b", "{x}c"}
	check := func(rt *rapid.T, args []string) {
		want, err := r.DoStrings(args...)
		if err != nil {
			rt.Fatalf("redis %q: %v", args, err)
		}
		got, gerr := do(rt, h, b, args...)
		switch {
		case want.Kind == difftest.Error:
			var e Error
			if !errors.As(gerr, &e) || string(e) != string(want.Str) {
				rt.Fatalf("%q: redis %q, segbit %v %+v", args, want.Str, gerr, got)
			}
		case gerr != nil:
			rt.Fatalf("%q: redis %s, segbit error %v", args, want, gerr)
		case want.Kind != difftest.Integer || got.Type != ':' || got.Int != want.Int:
			rt.Fatalf("%q: redis %s, segbit %+v", args, want, got)
		}
	}
	num := func(rt *rapid.T, label string, lo, hi int64) string {
		switch rapid.IntRange(0, 12).Draw(rt, label+"kind") {
		case 0:
			return rapid.SampledFrom([]string{"x", "01", "-0", "", "9223372036854775808", "+1"}).Draw(rt, label)
		case 1:
			if lo >= -2 { // offsets: segbit accepts up to 2^63-1 on purpose
				return "-9223372036854775808"
			}
			return rapid.SampledFrom([]string{"-9223372036854775808", "9223372036854775807"}).Draw(rt, label)
		}
		return strconv.FormatInt(rapid.Int64Range(lo, hi).Draw(rt, label), 10)
	}
	rapid.Check(t, func(rt *rapid.T) {
		for _, k := range keys {
			r.DoStrings("DEL", k)
			do(rt, h, b, "SEGBIT.DEL", k)
		}
		const maxBit = 1 << 15
		for step := rapid.IntRange(1, 30).Draw(rt, "steps"); step > 0; step-- {
			k := rapid.SampledFrom(keys).Draw(rt, "key")
			var args []string
			switch rapid.IntRange(0, 6).Draw(rt, "op") {
			case 0, 1:
				args = []string{"SETBIT", k, num(rt, "off", 0, maxBit), rapid.SampledFrom([]string{"0", "1", "1", "2", "-1"}).Draw(rt, "val")}
			case 2:
				args = []string{"GETBIT", k, num(rt, "off", -2, maxBit+8)}
			case 3:
				args = []string{"BITCOUNT", k}
				switch rapid.IntRange(0, 4).Draw(rt, "form") {
				case 1:
					args = append(args, num(rt, "s", -maxBit/4, maxBit/4))
				case 2, 3, 4:
					args = append(args, num(rt, "s", -maxBit, maxBit), num(rt, "e", -maxBit, maxBit))
					if rapid.Bool().Draw(rt, "unit") {
						args = append(args, rapid.SampledFrom([]string{"BIT", "bit", "BYTE", "bits"}).Draw(rt, "u"))
					}
				}
			case 4:
				args = []string{"BITPOS", k, rapid.SampledFrom([]string{"0", "1", "1", "0", "2", "x"}).Draw(rt, "bit")}
				n := rapid.IntRange(0, 4).Draw(rt, "n")
				if n >= 1 {
					args = append(args, num(rt, "s", -maxBit, maxBit))
				}
				if n >= 2 {
					args = append(args, num(rt, "e", -maxBit, maxBit))
				}
				if n >= 3 {
					args = append(args, rapid.SampledFrom([]string{"BIT", "byte", "bit", "x"}).Draw(rt, "u"))
				}
				if n == 4 && rapid.IntRange(0, 5).Draw(rt, "extra") == 0 {
					args = append(args, "1")
				}
			case 5:
				op := rapid.SampledFrom([]string{"AND", "or", "Xor", "NOT", "NOT", "nand"}).Draw(rt, "bitop")
				args = []string{"BITOP", op, k}
				for n := rapid.IntRange(1, 3).Draw(rt, "nsrc"); n > 0; n-- {
					args = append(args, rapid.SampledFrom(keys).Draw(rt, "src"))
				}
			case 6:
				args = []string{"DEL", k}
			}
			check(rt, args)
		}
		for _, k := range keys {
			want, err := r.DoStrings("GET", k)
			if err != nil {
				rt.Fatal(err)
			}
			got := readLogical(rt, h, b, k)
			if !bytes.Equal(want.Str, got) {
				rt.Fatalf("%s: redis has %d bytes %x, segbit %d bytes %x", k, len(want.Str), want.Str, len(got), got)
			}
		}
	})
}

// readLogical reassembles a segmented bitmap's bytes from its segments.
func readLogical(t tester, h *Handler, b Backend, key string) []byte {
	t.Helper()
	info, err := do(t, h, b, "SEGBIT.INFO", key)
	if err != nil {
		t.Fatalf("INFO %s: %v", key, err)
	}
	var length, top int64
	for i := 0; i+1 < len(info.Elems); i += 2 {
		switch string(info.Elems[i].Str) {
		case "length":
			length = info.Elems[i+1].Int
		case "highest_segment":
			top = info.Elems[i+1].Int
		}
	}
	out := make([]byte, 0, length)
	l := h.Layout()
	for seg := int64(0); seg <= top; seg++ {
		rs, err := b.Do(context.Background(), [][][]byte{{[]byte("GET"), l.SegmentKey([]byte(key), uint64(seg))}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rs[0].Str...)
		if seg < top {
			out = append(out, make([]byte, int(l.segmentBytes())-len(rs[0].Str))...)
		}
	}
	if int64(len(out)) != length {
		t.Fatalf("%s: segments hold %d bytes, INFO says %d", key, len(out), length)
	}
	if length == 0 {
		return nil
	}
	return out
}
