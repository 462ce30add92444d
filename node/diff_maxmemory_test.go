package node_test

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffMaxMemory runs scripts over maxmemory on a real redis-server and
// on the node. maxmemory 1 puts both over the limit at once, whatever they
// hold: commands that may grow the data get OOM, reads and deletes run,
// and a transaction fails as Redis 7.0's processCommand makes it fail.
func TestDiffMaxMemory(t *testing.T) {
	tests := []struct {
		name  string
		steps []txDiffStep
	}{
		{"config", []txDiffStep{
			txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "10mb"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "1k"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "2GB"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "-1"), txOn(0, "CONFIG", "SET", "maxmemory", "1.5mb"),
			txOn(0, "CONFIG", "SET", "maxmemory", "lots"), txOn(0, "CONFIG", "GET", "maxmemory"),
			// memtoull's corners: no digits, saturation, wrapping.
			txOn(0, "CONFIG", "SET", "maxmemory", ""), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "mb"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "99999999999999999999999"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "18446744073709551615kb"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "17179869184gb"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", "01MB"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", strings.Repeat("9", 127)), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", strings.Repeat("1", 128)), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory", " 1"), txOn(0, "CONFIG", "SET", "maxmemory", "1 "),
			txOn(0, "CONFIG", "SET", "maxmemory", "1t"),
			txOn(0, "CONFIG", "SET", "maxmemory", "0"), txOn(0, "CONFIG", "GET", "maxmemory"),
			txOn(0, "CONFIG", "SET", "maxmemory-policy", "noeviction"),
		}},
		{"commands over the limit", []txDiffStep{
			txOn(0, "SET", "s", "v"), txOn(0, "RPUSH", "l", "a", "b", "c"), txOn(0, "XADD", "x", "1-1", "f", "v"),
			txOn(0, "XGROUP", "CREATE", "x", "g", "0"),
			txOn(0, "CONFIG", "SET", "maxmemory", "1"),
			txOn(0, "SET", "s", "w"), txOn(0, "GET", "s"), txOn(0, "APPEND", "s", "x"), txOn(0, "INCR", "n"),
			txOn(0, "SETBIT", "b", "7", "1"), txOn(0, "BITFIELD", "b", "GET", "u8", "0"),
			txOn(0, "BITFIELD", "b", "SET", "u8", "0", "1"), txOn(0, "BITFIELD_RO", "b", "GET", "u8", "0"),
			txOn(0, "PFADD", "h", "a"), txOn(0, "PFCOUNT", "h"),
			txOn(0, "LPUSH", "l", "z"), txOn(0, "LRANGE", "l", "0", "-1"), txOn(0, "LPOP", "l"),
			txOn(0, "LMOVE", "l", "l", "LEFT", "RIGHT"), txOn(0, "LSET", "l", "0", "q"),
			txOn(0, "XADD", "x", "*", "f", "v"), txOn(0, "XLEN", "x"),
			txOn(0, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"),
			txOn(0, "XACK", "x", "g", "1-1"), txOn(0, "XGROUP", "CREATE", "x", "g2", "0"),
			txOn(0, "XGROUP", "CREATECONSUMER", "x", "g", "c2"),
			txOn(0, "EXPIRE", "s", "100"), txOn(0, "PERSIST", "s"), txOn(0, "RENAME", "s", "s2"),
			txOn(0, "COPY", "s2", "s3"), txOn(0, "DEL", "s2"), txOn(0, "EXISTS", "s2"),
			txOn(0, "PING"), txOn(0, "DBSIZE"), txOn(0, "GET"), txOn(0, "SET", "a"),
			txOn(0, "CONFIG", "SET", "maxmemory", "0"),
			txOn(0, "SET", "s", "w"), txOn(0, "GET", "s"),
		}},
		{"transactions over the limit", []txDiffStep{
			txOn(0, "CONFIG", "SET", "maxmemory", "1"),
			txOn(0, "MULTI"), txOn(0, "GET", "a"), txOn(0, "EXEC"),
			txOn(0, "MULTI"), txOn(0, "MULTI"), txOn(0, "WATCH", "a"), txOn(0, "SET", "a"), txOn(0, "SAVE"),
			txOn(0, "DISCARD"),
			txOn(0, "MULTI"), txOn(0, "EXEC"),
			txOn(0, "WATCH", "a"), txOn(0, "MULTI"), txOn(0, "EXEC"),
			txOn(0, "CONFIG", "SET", "maxmemory", "0"),
			// Queued while under the limit, EXEC over it.
			txOn(0, "MULTI"), txOn(0, "SET", "a", "1"), txOn(1, "CONFIG", "SET", "maxmemory", "1"), txOn(0, "EXEC"),
			txOn(0, "GET", "a"),
			txOn(1, "CONFIG", "SET", "maxmemory", "0"),
			txOn(0, "SET", "a", "1"),
			txOn(0, "MULTI"), txOn(0, "GET", "a"), txOn(0, "DEL", "a"), txOn(1, "CONFIG", "SET", "maxmemory", "1"),
			txOn(0, "EXEC"), txOn(0, "EXISTS", "a"),
			txOn(1, "CONFIG", "SET", "maxmemory", "0"),
		}},
	}
	for _, proto := range []int{2, 3} {
		for _, tt := range tests {
			t.Run(tt.name+"/RESP"+string(rune('0'+proto)), func(t *testing.T) {
				p := difftest.Start(t)
				conns := []*difftest.ConnPair{p.NewConnProto(t, proto), p.NewConnProto(t, proto)}
				// The oracle is shared: never leave it refusing writes.
				t.Cleanup(func() { p.Do(t, "CONFIG", "SET", "maxmemory", "0") })
				for _, st := range tt.steps {
					conns[st.conn].Do(t, st.args...)
				}
			})
		}
	}
}
