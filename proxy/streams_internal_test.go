package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/slots"
)

// TestXReadOptions: which XREAD/XREADGROUP commands may block on the node,
// for how long, and what the proxy tries first without BLOCK. Options are
// read as Redis reads them: COUNT's and BLOCK's argument, GROUP's two
// (XREADGROUP only), NOACK (XREADGROUP only), up to the first STREAMS with
// something after it; a group, consumer or count named BLOCK or STREAMS
// is not an option.
func TestXReadOptions(t *testing.T) {
	for _, name := range []string{"xread", "xreadgroup"} {
		if slots.Lookup([]byte(name)) == nil {
			t.Skipf("the command table has no %s yet", name)
		}
	}
	cases := []struct {
		cmd     string
		blocks  bool
		timeout time.Duration
		fast    string // the command tried without BLOCK; "" for none
	}{
		{"XREAD STREAMS s 0", false, 0, ""},
		{"XREAD BLOCK 100 STREAMS s 0", true, 100 * time.Millisecond, "XREAD STREAMS s 0"},
		{"xread count 5 block 0 streams s 1-1", true, 0, "xread count 5 streams s 1-1"},
		{"XREAD BLOCK 10 STREAMS a b $ 0", true, 10 * time.Millisecond, ""}, // '$': nothing without BLOCK
		{"XREAD BLOCK 10 STREAMS $ 0", true, 10 * time.Millisecond, "XREAD STREAMS $ 0"},
		{"XREAD BLOCK 10 STREAMS a b 0", false, 0, ""}, // unbalanced: refused
		{"XREAD BLOCK 10 BLOCK 20 STREAMS s 0", true, 20 * time.Millisecond, ""},
		{"XREAD BLOCK -1 STREAMS s 0", true, 0, ""},
		{"XREAD BLOCK 05 STREAMS s 0", true, 5 * time.Millisecond, ""},
		{"XREAD BLOCK +5 STREAMS s 0", true, 5 * time.Millisecond, ""},
		{"XREAD BLOCK abc STREAMS s 0", true, 0, ""},
		{"XREAD COUNT BLOCK STREAMS s 0", false, 0, ""},
		{"XREAD COUNT 1 FOO BLOCK 10 STREAMS s 0", false, 0, ""},
		{"XREAD BLOCK 10 NOACK STREAMS s 0", false, 0, ""},
		{"XREAD BLOCK 10 GROUP g c STREAMS s 0", false, 0, ""},
		{"XREAD BLOCK 10 STREAMS", false, 0, ""},
		{"XREAD STREAMS BLOCK 10 0", false, 0, ""}, // a stream named BLOCK
		{"XREADGROUP GROUP g c STREAMS s >", false, 0, ""},
		{"XREADGROUP GROUP g c BLOCK 0 STREAMS s >", true, 0, "XREADGROUP GROUP g c STREAMS s >"},
		{"XREADGROUP GROUP block c STREAMS s >", false, 0, ""},
		{"XREADGROUP GROUP g block STREAMS s >", false, 0, ""},
		{"XREADGROUP GROUP block block BLOCK 5 STREAMS s >", true, 5 * time.Millisecond, "XREADGROUP GROUP block block STREAMS s >"},
		{"XREADGROUP GROUP g c COUNT 10 BLOCK 2000 NOACK STREAMS a b > 0", true, 2 * time.Second, "XREADGROUP GROUP g c COUNT 10 NOACK STREAMS a b > 0"},
		{"XREADGROUP BLOCK 5 GROUP g c STREAMS $ $", true, 5 * time.Millisecond, "XREADGROUP GROUP g c STREAMS $ $"},
		{"XREADGROUP GROUP g c BLOCK 5 STREAMS s", false, 0, ""},
		{"XREADGROUP GROUP g BLOCK 5 STREAMS s", false, 0, ""},
	}
	for _, tc := range cases {
		args := bytesArgs(strings.Fields(tc.cmd))
		cmd := slots.Lookup(args[0])
		if got := blocksOnNode(cmd, args); got != tc.blocks {
			t.Errorf("%s: blocks %v, want %v", tc.cmd, got, tc.blocks)
		}
		if !tc.blocks {
			continue
		}
		if got := blockTimeout(cmd, args); got != tc.timeout {
			t.Errorf("%s: timeout %v, want %v", tc.cmd, got, tc.timeout)
		}
		fast, pair := nonBlockingForm(cmd, args)
		got := string(joinArgs(fast))
		if got != tc.fast || pair {
			t.Errorf("%s: tried first as %q (pair %v), want %q", tc.cmd, got, pair, tc.fast)
		}
	}
}

func bytesArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func joinArgs(args [][]byte) []byte {
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, a...)
	}
	return b
}
