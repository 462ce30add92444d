package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestListOnListPush: the hook fires once for every command that adds
// elements to a list (and for lists stored by RENAME and COPY), never for
// one that adds none.
func TestListOnListPush(t *testing.T) {
	s := newStrEnv(t)
	var got []string
	s.ks.OnListPush = func(slot uint16, key []byte) {
		if slot != s.ks.ShardOf(key).Slot {
			t.Errorf("OnListPush(%d, %q): wrong slot", slot, key)
		}
		got = append(got, string(key))
	}
	for _, c := range []struct {
		args []string
		want string // key reported, "" none
	}{
		{[]string{"LPUSHX", "l", "a"}, ""},
		{[]string{"LPUSH", "l", "a", "b"}, "l"},
		{[]string{"RPUSH", "l", "c"}, "l"},
		{[]string{"RPUSHX", "l", "d"}, "l"},
		{[]string{"LPUSHX", "l", "e"}, "l"},
		{[]string{"LINSERT", "l", "BEFORE", "nope", "x"}, ""},
		{[]string{"LINSERT", "l", "AFTER", "a", "x"}, "l"},
		{[]string{"LSET", "l", "0", "x"}, ""},
		{[]string{"LPOP", "l"}, ""},
		{[]string{"LREM", "l", "0", "x"}, ""},
		{[]string{"LMOVE", "l", "{l}d", "LEFT", "RIGHT"}, "{l}d"},
		{[]string{"LMOVE", "l", "{l}d", "LEFT", "RIGHT"}, "{l}d"},
		{[]string{"RPOPLPUSH", "{l}d", "l"}, "l"},
		{[]string{"LMOVE", "nokey", "l", "LEFT", "RIGHT"}, ""},
		{[]string{"LMPOP", "1", "l", "LEFT"}, ""},
		{[]string{"RENAME", "l", "{l}r"}, "{l}r"},
		{[]string{"COPY", "{l}r", "{l}c"}, "{l}c"},
		{[]string{"SET", "s", "v"}, ""},
		{[]string{"LPUSH", "s", "v"}, ""},
	} {
		got = got[:0]
		s.run(c.args...)
		var want []string
		if c.want != "" {
			want = []string{c.want}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: OnListPush got %q, want %q", c.args, got, want)
		}
	}
}

// TestListAPI covers ListPop, ListMove and ListLen, the entry points of
// the blocking commands.
func TestListAPI(t *testing.T) {
	s := newStrEnv(t)
	ks, now := s.ks, s.now
	key, dst := []byte("{q}src"), []byte("{q}dst")
	sh := ks.ShardOf(key)
	if n, wrong := ks.ListLen(sh, key, now); n != 0 || wrong {
		t.Fatalf("ListLen of a missing key: %d %v", n, wrong)
	}
	if e, err := ks.ListPop(sh, key, true, 1, now); e != nil || err != "" {
		t.Fatalf("ListPop of a missing key: %q %q", e, err)
	}
	if e, err := ks.ListMove(sh, key, dst, true, true, now); e != nil || err != "" {
		t.Fatalf("ListMove of a missing key: %q %q", e, err)
	}
	s.run("RPUSH", "{q}src", "a", "b", "c", "d", "")
	if n, _ := ks.ListLen(sh, key, now); n != 5 {
		t.Fatalf("ListLen %d", n)
	}
	e, err := ks.ListPop(sh, key, true, 2, now)
	if err != "" || len(e) != 2 || string(e[0]) != "a" || string(e[1]) != "b" {
		t.Fatalf("ListPop front 2: %q %q", e, err)
	}
	e, _ = ks.ListPop(sh, key, false, 1, now)
	if len(e) != 1 || e[0] == nil || len(e[0]) != 0 {
		t.Fatalf("ListPop back: %q (want one empty, non-nil element)", e)
	}
	v, err := ks.ListMove(sh, key, dst, false, true, now)
	if err != "" || string(v) != "d" {
		t.Fatalf("ListMove: %q %q", v, err)
	}
	v, _ = ks.ListMove(sh, key, dst, true, true, now) // empties src
	if string(v) != "c" {
		t.Fatalf("ListMove: %q", v)
	}
	if got := s.run("EXISTS", "{q}src"); got != rInt(0) {
		t.Fatalf("emptied source still exists: %q", got)
	}
	if got := s.run("LRANGE", "{q}dst", "0", "-1"); got != "*2\r\n"+rBulk("c")+rBulk("d") {
		t.Fatalf("destination %q", got)
	}
	v, _ = ks.ListMove(sh, dst, dst, true, false, now) // rotation
	if string(v) != "c" || s.run("LRANGE", "{q}dst", "0", "-1") != "*2\r\n"+rBulk("d")+rBulk("c") {
		t.Fatalf("rotation: %q", v)
	}
	s.run("SET", "{q}str", "x")
	str := []byte("{q}str")
	if _, wrong := ks.ListLen(sh, str, now); !wrong {
		t.Fatal("ListLen of a string: not wrong type")
	}
	if _, err := ks.ListPop(sh, str, true, 1, now); err != resp.ErrWrongType {
		t.Fatalf("ListPop of a string: %q", err)
	}
	if _, err := ks.ListMove(sh, dst, str, true, true, now); err != resp.ErrWrongType {
		t.Fatalf("ListMove to a string: %q", err)
	}
	if got := s.run("LRANGE", "{q}dst", "0", "-1"); !strings.Contains(got, "*2\r\n") {
		t.Fatalf("a refused ListMove changed the source: %q", got)
	}
}
