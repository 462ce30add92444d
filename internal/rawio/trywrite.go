package rawio

import "net"

// TryWrite writes what of b the socket takes now, without waiting for
// room: n < len(b) with a nil error means the socket's buffer is full.
// A connection without raw writes (not Wrap'ped, or a platform without
// them) is written to in full, waiting as net.Conn.Write does.
func TryWrite(nc net.Conn, b []byte) (n int, err error) {
	c, ok := nc.(*Conn)
	if !ok || !supported {
		return nc.Write(b)
	}
	return c.tryWrite(b)
}
