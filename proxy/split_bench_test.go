package proxy_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"

	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// BenchmarkMSetSplit sends MSETs of 10 keys in different slots through a
// proxy in split mode over 3 in-process nodes, one at a time, and reads
// each +OK. Its allocations are the proxy's and the nodes' together; run
// with -memprofile to tell them apart.
func BenchmarkMSetSplit(b *testing.B) {
	c := proxytest.Start(b, 3, proxy.Options{CrossSlot: proxy.CrossSlotSplit})
	nc, err := net.Dial("tcp", c.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	var cmd []byte
	cmd = fmt.Appendf(cmd, "*21\r\n$4\r\nMSET\r\n")
	for i := range 10 {
		k := fmt.Sprintf("key:%06d", i*7919)
		cmd = fmt.Appendf(cmd, "$%d\r\n%s\r\n$3\r\nxxx\r\n", len(k), k)
	}
	r := bufio.NewReader(nc)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nc.Write(cmd); err != nil {
			b.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != "+OK\r\n" {
			b.Fatalf("reply %q, %v", line, err)
		}
	}
}
