package node

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
)

// peerConn is the source's connection to a migration's target: its own
// TCP connection to the target's RESP port, never a client's, so a big
// transfer neither waits behind client traffic nor goes through gossip.
// Commands are pipelined: send queues them, flush writes, and replies are
// read in order.
type peerConn struct {
	nc      net.Conn
	br      *bufio.Reader
	out     []byte
	in      []byte // read but not yet parsed
	pending int    // commands sent whose replies are unread
	timeout time.Duration
}

// errPeerReply wraps an error reply of the target.
var errPeerReply = errors.New("node: target refused")

func dialPeer(addr, pass string, timeout time.Duration) (*peerConn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	p := &peerConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), timeout: timeout}
	if pass != "" {
		if _, err := p.call("AUTH", pass); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return p, nil
}

func (p *peerConn) Close() error { return p.nc.Close() }

// send queues a command; it is written by flush (or once the buffer is
// big).
func (p *peerConn) send(args ...[]byte) error {
	p.out = resp.AppendCommand(p.out, args)
	p.pending++
	if len(p.out) >= 256<<10 {
		return p.flush()
	}
	return nil
}

func (p *peerConn) flush() error {
	if len(p.out) == 0 {
		return nil
	}
	p.nc.SetWriteDeadline(time.Now().Add(p.timeout))
	_, err := p.nc.Write(p.out)
	p.out = p.out[:0]
	return err
}

// drain reads every pending reply, failing on the first error reply
// (after reading the rest, so the connection stays in step).
func (p *peerConn) drain() error {
	if err := p.flush(); err != nil {
		return err
	}
	var first error
	for p.pending > 0 {
		v, err := p.read()
		if err != nil {
			return err
		}
		if v.IsError() && first == nil {
			first = fmt.Errorf("%w: %s", errPeerReply, v.Str)
		}
	}
	return first
}

// call sends one command and returns its reply (an error reply as an
// error wrapping errPeerReply), after the replies of what was pending.
func (p *peerConn) call(args ...string) (resp.Value, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	if err := p.send(bs...); err != nil {
		return resp.Value{}, err
	}
	if err := p.flush(); err != nil {
		return resp.Value{}, err
	}
	var v resp.Value
	for p.pending > 0 {
		var err error
		if v, err = p.read(); err != nil {
			return v, err
		}
		if v.IsError() && p.pending > 0 {
			return v, fmt.Errorf("%w: %s", errPeerReply, v.Str)
		}
	}
	if v.IsError() {
		return v, fmt.Errorf("%w: %s", errPeerReply, v.Str)
	}
	return v, nil
}

// read reads one reply. The target's replies are short (OK, errors, a
// status word), so a simple accumulate-and-parse loop is enough.
func (p *peerConn) read() (resp.Value, error) {
	p.nc.SetReadDeadline(time.Now().Add(p.timeout))
	for {
		if len(p.in) > 0 {
			n, err := resp.ReplyLen(p.in)
			if err != nil {
				return resp.Value{}, err
			}
			if n > 0 {
				v, _, err := resp.ParseValue(p.in[:n])
				v.Str = append([]byte(nil), v.Str...)
				p.in = append(p.in[:0], p.in[n:]...)
				p.pending--
				return v, err
			}
		}
		var chunk [4096]byte
		m, err := p.br.Read(chunk[:])
		p.in = append(p.in, chunk[:m]...)
		if err != nil && m == 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return resp.Value{}, err
		}
	}
}
