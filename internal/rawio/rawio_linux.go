//go:build linux

package rawio

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

const supported = true

// maxRW bounds one system call, as internal/poll does (some kernels fail
// larger reads and writes on sockets).
const maxRW = 1 << 30

// Read reads into b; it waits on the poller while nothing is there.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) > maxRW {
		b = b[:maxRW]
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				n = int(r)
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait on the poller, then call again
			default:
				errno = e
				return true
			}
		}
	})
	switch {
	case err != nil: // closed, or a deadline passed
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of b, waiting on the poller while the socket's buffer
// is full.
func (c *Conn) Write(b []byte) (int, error) {
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			chunk := b[n:]
			if len(chunk) > maxRW {
				chunk = chunk[:maxRW]
			}
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}
