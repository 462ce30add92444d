package clusterfmt

import "testing"

// TestBusPort: the cport CLUSTER NODES shows is the given bus port, else
// the client port + 10000 while that is a port, else 0.
func TestBusPort(t *testing.T) {
	for _, tc := range []struct{ port, bus, want int }{
		{7379, 0, 17379},
		{7379, 4242, 4242},
		{55535, 0, 65535},
		{55536, 0, 0}, // Redis refuses such a port in cluster mode; no bus port to show
	} {
		n := Node{Port: tc.port, BusPort: tc.bus}
		if got := n.busPort(); got != tc.want {
			t.Errorf("port %d bus %d: busPort() = %d, want %d", tc.port, tc.bus, got, tc.want)
		}
	}
}
