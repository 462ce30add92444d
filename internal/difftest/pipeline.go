package difftest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// WriteAllThenRead sets key to a 100-byte value on the server at addr,
// then writes n GETs of it in one go before reading any reply, as
// redis-py's pipeline execute and go-redis's Pipeline send, and reads the
// n replies. The replies outweigh the requests about five to one, so a
// server that stops reading while it cannot write them leaves the two
// sides waiting on each other: the error then says which side stalled
// (within timeout).
func WriteAllThenRead(addr, key string, n int, timeout time.Duration) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	value := strings.Repeat("v", 100)
	set := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(value), value)
	get := fmt.Sprintf("*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)
	var req bytes.Buffer
	req.WriteString(set)
	for range n {
		req.WriteString(get)
	}
	nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(req.Bytes()); err != nil {
		return fmt.Errorf("writing %d bytes of requests before reading: %w", req.Len(), err)
	}
	rd := bufio.NewReader(nc)
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(value), value)
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		return fmt.Errorf("SET: %q, %v", line, err)
	}
	buf := make([]byte, len(want))
	for i := range n {
		if _, err := io.ReadFull(rd, buf); err != nil {
			return fmt.Errorf("reply %d of %d: %w", i+1, n, err)
		}
		if string(buf) != want {
			return fmt.Errorf("reply %d of %d: %q", i+1, n, buf)
		}
	}
	return nil
}
