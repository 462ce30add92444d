// Command streamq measures one stream command against one server, the way
// redis-benchmark measures a command (C clients, each with P requests in
// flight, N requests in all, requests per second), but with the setup each
// consumer-group command needs to mean something and requests that differ
// where they must (XACK acknowledges a different pending entry each time).
// bench/streams.sh runs it against redis-server, a shardgate node and the
// proxy in interleaved rounds.
//
// Tests (the stream is {bench}s, so through the proxy it is one node's):
//
//   - xadd: XADD {bench}s * f <value> on an empty stream.
//   - xreadgroup: XREADGROUP GROUP g c<k> COUNT 10 STREAMS {bench}s >, client
//     k reading as consumer c<k>, on a stream of 10·N entries and a group
//     created at 0: every call delivers 10 new entries (reads them and adds
//     them to the group's and the consumer's pending lists).
//   - xack: XACK {bench}s g <id>, each call a different pending entry (N
//     entries read into consumer c's pending list beforehand): every call
//     acknowledges one entry (answers 1).
//   - xpending: XPENDING {bench}s g - + 10, the extended form a reclaimer
//     uses (id, owner, idle time, delivery count of the 10 oldest pending
//     entries), with 10,000 entries pending over 10 consumers.
//   - xpending_summary: XPENDING {bench}s g, the summary form (count,
//     smallest and greatest id, per-consumer counts), same setup.
//   - xautoclaim: XAUTOCLAIM {bench}s g claimer 0 0-0 COUNT 10 with 10,000
//     entries pending for consumer c: every call claims the 10 oldest
//     pending entries (minimum idle time 0, so the same ones again and
//     again, each time a delivery more) and returns them with their fields.
//
// Every reply is checked (no errors; XREADGROUP never empty, XACK 1,
// XAUTOCLAIM three elements), so a server that does not do the work cannot
// look fast.
//
// Usage:
//
//	go run ./bench/streamq -addr 127.0.0.1:6379 -test xreadgroup -n 50000 -c 50 -P 16
//
// It prints "test,rps".
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

const key = "{bench}s"

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	test := flag.String("test", "xadd", "xadd, xreadgroup, xack, xpending, xpending_summary or xautoclaim")
	n := flag.Int("n", 100000, "requests")
	clients := flag.Int("c", 50, "parallel connections")
	pipeline := flag.Int("P", 1, "requests in flight per connection")
	valueSize := flag.Int("d", 16, "field value size in bytes")
	flag.Parse()
	log.SetFlags(0)
	if *n < *clients || *clients < 1 || *pipeline < 1 {
		log.Fatal("need -n >= -c >= 1 and -P >= 1")
	}
	value := strings.Repeat("x", *valueSize)

	t, ok := tests[*test]
	if !ok {
		log.Fatalf("unknown test %q", *test)
	}
	admin, err := dial(*addr)
	if err != nil {
		log.Fatal(err)
	}
	defer admin.nc.Close()
	if _, err := admin.do("DEL", key); err != nil {
		log.Fatalf("DEL: %v", err)
	}
	if t.setup != nil {
		if err := t.setup(admin, *n, value); err != nil {
			log.Fatalf("%s setup: %v", *test, err)
		}
	}
	rps, err := run(*addr, *n, *clients, *pipeline, func(client, i int) []string { return t.request(client, i, value) }, t.check)
	if err != nil {
		log.Fatalf("%s: %v", *test, err)
	}
	// Free the server's memory before the next run.
	if _, err := admin.do("DEL", key); err != nil {
		log.Fatalf("DEL: %v", err)
	}
	fmt.Printf("%s,%.0f\n", *test, rps)
}

type benchTest struct {
	setup   func(c *conn, n int, value string) error
	request func(client, i int, value string) []string // i: 0..n-1, unique over clients
	check   func(v reply) error
}

var tests = map[string]benchTest{
	"xadd": {
		request: func(_, _ int, value string) []string { return []string{"XADD", key, "*", "f", value} },
		check:   isBulk,
	},
	"xreadgroup": {
		setup: func(c *conn, n int, value string) error {
			if err := fill(c, 10*n, value); err != nil {
				return err
			}
			return group(c)
		},
		request: func(client, _ int, _ string) []string {
			return []string{"XREADGROUP", "GROUP", "g", "c" + strconv.Itoa(client), "COUNT", "10", "STREAMS", key, ">"}
		},
		check: func(v reply) error {
			if v.kind != '*' && v.kind != '%' || v.null || v.n != 1 {
				return fmt.Errorf("XREADGROUP answered %s, want one stream's entries", v)
			}
			return nil
		},
	},
	"xack": {
		setup: func(c *conn, n int, value string) error { return pending(c, n, 1, value) },
		request: func(_, i int, _ string) []string {
			return []string{"XACK", key, "g", strconv.Itoa(i+1) + "-1"}
		},
		check: func(v reply) error {
			if v.kind != ':' || v.int != 1 {
				return fmt.Errorf("XACK answered %s, want 1", v)
			}
			return nil
		},
	},
	"xpending": {
		setup:   func(c *conn, _ int, value string) error { return pending(c, 10000, 10, value) },
		request: func(_, _ int, _ string) []string { return []string{"XPENDING", key, "g", "-", "+", "10"} },
		check:   arrayOf(10),
	},
	"xpending_summary": {
		setup:   func(c *conn, _ int, value string) error { return pending(c, 10000, 10, value) },
		request: func(_, _ int, _ string) []string { return []string{"XPENDING", key, "g"} },
		check:   arrayOf(4),
	},
	"xautoclaim": {
		setup: func(c *conn, _ int, value string) error { return pending(c, 10000, 1, value) },
		request: func(_, _ int, _ string) []string {
			return []string{"XAUTOCLAIM", key, "g", "claimer", "0", "0-0", "COUNT", "10"}
		},
		check: arrayOf(3),
	},
}

func isBulk(v reply) error {
	if v.kind != '$' || v.null {
		return fmt.Errorf("answered %s, want a bulk string", v)
	}
	return nil
}

func arrayOf(n int) func(v reply) error {
	return func(v reply) error {
		if v.kind != '*' || v.null || v.n != n {
			return fmt.Errorf("answered %s, want an array of %d", v, n)
		}
		return nil
	}
}

// fill adds entries 1-1, 2-1, ... m-1 to the stream, pipelined on one
// connection.
func fill(c *conn, m int, value string) error {
	const batch = 1000
	for i := 1; i <= m; {
		k := 0
		for ; k < batch && i <= m; k, i = k+1, i+1 {
			c.send("XADD", key, strconv.Itoa(i)+"-1", "f", value)
		}
		if err := c.w.Flush(); err != nil {
			return err
		}
		for ; k > 0; k-- {
			v, err := c.read()
			if err != nil {
				return err
			}
			if err := isBulk(v); err != nil {
				return fmt.Errorf("XADD %s", err)
			}
		}
	}
	return nil
}

func group(c *conn) error {
	v, err := c.do("XGROUP", "CREATE", key, "g", "0")
	if err == nil && v.kind == '-' {
		err = errors.New(v.str)
	}
	return err
}

// pending fills m entries, creates the group and reads every entry into
// the pending lists of consumers c (one consumer) or c0..c<k-1>.
func pending(c *conn, m, consumers int, value string) error {
	if err := fill(c, m, value); err != nil {
		return err
	}
	if err := group(c); err != nil {
		return err
	}
	for read, j := 0, 0; read < m; j++ {
		name := "c"
		if consumers > 1 {
			name += strconv.Itoa(j % consumers)
		}
		v, err := c.do("XREADGROUP", "GROUP", "g", name, "COUNT", "1000", "STREAMS", key, ">")
		if err != nil {
			return err
		}
		if v.null || v.kind == '-' {
			return fmt.Errorf("XREADGROUP after %d of %d entries: %s", read, m, v)
		}
		read += min(1000, m-read)
	}
	return nil
}

// run sends n requests over the given number of connections, each keeping
// pipeline requests in flight, and returns requests per second.
func run(addr string, n, clients, pipeline int, request func(client, i int) []string, check func(reply) error) (float64, error) {
	conns := make([]*conn, clients)
	for k := range conns {
		c, err := dial(addr)
		if err != nil {
			return 0, err
		}
		defer c.nc.Close()
		conns[k] = c
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for k, c := range conns {
		wg.Go(func() {
			// Client k sends requests k, k+clients, ...
			var mine []int
			for i := k; i < n; i += clients {
				mine = append(mine, i)
			}
			for len(mine) > 0 {
				batch := mine[:min(pipeline, len(mine))]
				mine = mine[len(batch):]
				for _, i := range batch {
					c.send(request(k, i)...)
				}
				if err := c.w.Flush(); err != nil {
					errs <- err
					return
				}
				for range batch {
					v, err := c.read()
					if err == nil {
						err = check(v)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n) / elapsed.Seconds(), nil
}

type conn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

func dial(addr string) (*conn, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}, nil
}

func (c *conn) send(args ...string) {
	c.w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		c.w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		c.w.WriteString(a)
		c.w.WriteString("\r\n")
	}
}

func (c *conn) do(args ...string) (reply, error) {
	c.send(args...)
	if err := c.w.Flush(); err != nil {
		return reply{}, err
	}
	return c.read()
}

// reply is a reply's outline: its type, and for aggregates the element
// count (which are read and skipped).
type reply struct {
	kind byte
	null bool
	n    int    // aggregates: elements (a map's pairs)
	int  int64  // integers
	str  string // simple strings and errors
}

func (v reply) String() string {
	switch {
	case v.null:
		return "null"
	case v.kind == '-' || v.kind == '+':
		return string(v.kind) + v.str
	case v.kind == ':':
		return ":" + strconv.FormatInt(v.int, 10)
	}
	return fmt.Sprintf("%c%d", v.kind, v.n)
}

// read reads one reply; an error reply is returned as an error.
func (c *conn) read() (reply, error) {
	v, err := c.readValue()
	if err == nil && v.kind == '-' {
		err = fmt.Errorf("server error: %s", v.str)
	}
	return v, err
}

func (c *conn) readValue() (reply, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return reply{}, fmt.Errorf("bad reply line %q", line)
	}
	v := reply{kind: line[0]}
	body := string(line[1 : len(line)-2])
	switch v.kind {
	case '+', '-':
		v.str = body
	case ':':
		v.int, err = strconv.ParseInt(body, 10, 64)
	case '_':
		v.null = true
	case '$':
		var size int
		size, err = strconv.Atoi(body)
		if err == nil && size >= 0 {
			_, err = io.CopyN(io.Discard, c.r, int64(size)+2)
		}
		v.null = size < 0
	case '*', '%', '~':
		v.n, err = strconv.Atoi(body)
		v.null = v.n < 0
		elems := v.n
		if v.kind == '%' {
			elems *= 2
		}
		for range elems {
			if _, err := c.readValue(); err != nil {
				return v, err
			}
		}
	default:
		err = fmt.Errorf("unexpected reply type %q", v.kind)
	}
	return v, err
}
