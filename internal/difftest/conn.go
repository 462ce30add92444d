package difftest

import (
	"bufio"
	"fmt"
	"net"
	"time"
)

// DefaultTimeout bounds every network operation of a Conn, so that a
// server that never answers fails the test instead of hanging it.
const DefaultTimeout = 10 * time.Second

// Conn is a minimal RESP client for tests: one request, one reply, with a
// deadline on each. It is not safe for concurrent use.
type Conn struct {
	nc net.Conn
	br *bufio.Reader
	wb []byte

	// Timeout bounds each Do, Send and Receive; zero means DefaultTimeout.
	Timeout time.Duration
}

// Dial connects to addr (host:port) within DefaultTimeout.
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		return nil, err
	}
	return NewConn(nc), nil
}

// DialProto connects and, for proto 3, switches the connection to RESP3
// with HELLO 3.
func DialProto(addr string, proto int) (*Conn, error) {
	c, err := Dial(addr)
	if err != nil {
		return nil, err
	}
	if proto == 2 {
		return c, nil
	}
	v, err := c.DoStrings("HELLO", fmt.Sprint(proto))
	if err != nil {
		c.Close()
		return nil, err
	}
	if v.Kind != Map && v.Kind != Array {
		c.Close()
		return nil, fmt.Errorf("difftest: HELLO %d to %s: %s", proto, addr, v)
	}
	return c, nil
}

// NewConn wraps an established connection.
func NewConn(nc net.Conn) *Conn {
	return &Conn{nc: nc, br: bufio.NewReaderSize(nc, 64*1024)}
}

func (c *Conn) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Do sends one command and reads its reply.
func (c *Conn) Do(args ...[]byte) (Value, error) {
	if err := c.Send(args...); err != nil {
		return Value{}, err
	}
	return c.Receive()
}

// DoStrings is Do with string arguments.
func (c *Conn) DoStrings(args ...string) (Value, error) {
	return c.Do(toBytes(args)...)
}

// Send writes one command without reading a reply (for pipelining).
func (c *Conn) Send(args ...[]byte) error {
	c.wb = AppendCommand(c.wb[:0], args...)
	return c.WriteRaw(c.wb)
}

// WriteRaw writes bytes as they are, e.g. an inline command or a
// deliberately malformed request.
func (c *Conn) WriteRaw(b []byte) error {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.timeout())); err != nil {
		return err
	}
	_, err := c.nc.Write(b)
	return err
}

// Receive reads one reply (a pipelined reply or a RESP3 push).
func (c *Conn) Receive() (Value, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(c.timeout())); err != nil {
		return Value{}, err
	}
	return ReadValue(c.br)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// NetConn is the underlying connection (for tests that half-close it or
// read raw bytes).
func (c *Conn) NetConn() net.Conn { return c.nc }

func toBytes(args []string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}
