package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestDiffServerRepliesProxy: keyless server commands whose reply does not
// depend on time or on the data answer through the proxy exactly as one
// plain redis-server does, in RESP2 and RESP3.
func TestDiffServerRepliesProxy(t *testing.T) {
	redisAddr := startPlainOracle(t, "server-reply")
	px := proxytest.Start(t, 3, proxy.Options{})
	cmds := [][]string{
		{"ROLE"}, {"ROLE", "x"}, {"role"},
		{"PING"}, {"PING", "hi"}, {"PING", "a", "b"},
		{"ECHO", "e"}, {"ECHO"},
		{"TIME", "x"}, {"LASTSAVE", "x"}, {"DBSIZE", "x"},
		{"WAIT", "0", "0"}, {"WAIT", "-1", "0"}, {"WAIT", "1", "10"}, {"WAIT", "x", "0"}, {"WAIT", "1", "x"},
		{"WAIT", "1", "-1"}, {"WAIT", "0", "-1"}, {"WAIT", "1", "1.5"}, {"WAIT", "1"}, {"wait", "1", "2", "3"},
	}
	for _, proto := range []int{2, 3} {
		diffSeq(t, dial(t, redisAddr, proto), dial(t, px.Addr, proto), proto, cmds)
	}
}
