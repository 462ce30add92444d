package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestDiffServerRepliesProxy: keyless server commands whose reply does not
// depend on time or on the data answer through the proxy exactly as one
// plain redis-server does, in RESP2 and RESP3.
func TestDiffServerRepliesProxy(t *testing.T) {
	if !onPath(difftest.RedisBinary) {
		skipOrFail(t, "redis-server not on PATH: the server-reply differential test needs Redis 7.0")
	}
	r, err := difftest.StartPlainRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	px := proxytest.Start(t, 3, proxy.Options{})
	cmds := [][]string{
		{"ROLE"}, {"ROLE", "x"}, {"role"},
		{"PING"}, {"PING", "hi"}, {"PING", "a", "b"},
		{"ECHO", "e"}, {"ECHO"},
		{"TIME", "x"}, {"LASTSAVE", "x"}, {"DBSIZE", "x"},
	}
	for _, proto := range []int{2, 3} {
		rconn, err := difftest.DialProto(r.Addr, proto)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rconn.Close() })
		pconn := dial(t, px.Addr, proto)
		for _, args := range cmds {
			want, err := rconn.DoStrings(args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := do(t, pconn, args...); !difftest.Equal(want, got) {
				t.Errorf("%s", difftest.Mismatch(args, proto, want, got))
			}
		}
	}
}
