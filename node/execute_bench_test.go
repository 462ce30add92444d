package node

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
)

// batchConn is a net.Conn whose reads return the same batch of requests
// forever and whose writes vanish: it feeds a client's command loop with
// no socket underneath.
type batchConn struct {
	net.Conn // nil: only the methods below are called
	batch    []byte
}

func (c *batchConn) Read(b []byte) (int, error)  { return copy(b, c.batch), nil }
func (c *batchConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *batchConn) Close() error                { return nil }
func (c *batchConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001} }
func (c *batchConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *batchConn) SetDeadline(time.Time) error { return nil }

// benchmarkBatches runs pipelined batches of 16 commands, made by cmd from
// a running counter, through a client's read-parse-execute path: what a
// node does per request at redis-benchmark -P 16, without the sockets.
// It reports ns per command.
func benchmarkBatches(b *testing.B, setup [][]string, cmd func(i int) []string) {
	s, err := New(Options{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	const depth = 16
	// Enough distinct batches that random keys spread over the keyspace
	// as redis-benchmark's -r does.
	var batches [][]byte
	n := 0
	for range 1024 {
		var buf []byte
		for range depth {
			args := cmd(n)
			n++
			bs := make([][]byte, len(args))
			for i, a := range args {
				bs[i] = []byte(a)
			}
			buf = resp.AppendCommand(buf, bs)
		}
		batches = append(batches, buf)
	}
	conn := &batchConn{}
	c := newClient(s, conn)
	run := func(args [][]byte) { s.execute(c, args); c.w.Reset() }
	for _, args := range setup {
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		run(bs)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += depth {
		conn.batch = batches[(i/depth)%len(batches)]
		if err := c.rd.Fill(); err != nil {
			b.Fatal(err)
		}
		c.tick()
		c.prefetch()
		for {
			args, ok, err := c.rd.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			s.execute(c, args)
		}
		if len(c.w.B) == 0 {
			b.Fatal("no reply")
		}
		c.w.Reset()
	}
}

// randomKey spreads keys as redis-benchmark -r 100000 does (a
// multiplicative walk, so consecutive keys land on unrelated slots).
func randomKey(i int) string { return fmt.Sprintf("key:%012d", (i*7919)%100000) }

func BenchmarkBatchGetRandom(b *testing.B) {
	var setup [][]string
	for i := range 100000 {
		setup = append(setup, []string{"SET", fmt.Sprintf("key:%012d", i), "val"})
	}
	benchmarkBatches(b, setup, func(i int) []string { return []string{"GET", randomKey(i)} })
}

func BenchmarkBatchSetRandom(b *testing.B) {
	benchmarkBatches(b, nil, func(i int) []string { return []string{"SET", randomKey(i), "val"} })
}

func BenchmarkBatchIncrRandom(b *testing.B) {
	benchmarkBatches(b, nil, func(i int) []string { return []string{"INCR", randomKey(i)} })
}

func BenchmarkBatchPfcount(b *testing.B) {
	benchmarkBatches(b, [][]string{{"PFADD", "hll", "a", "b", "c"}}, func(int) []string { return []string{"PFCOUNT", "hll"} })
}

func BenchmarkBatchPfadd(b *testing.B) {
	benchmarkBatches(b, nil, func(i int) []string { return []string{"PFADD", "hll", "el:" + strconv.Itoa((i*7919)%100000)} })
}

// BenchmarkBatchXack acknowledges a different pending entry per command,
// as bench/streams.sh's XACK test: run it with -benchtime Nx, N at most
// xackPending.
func BenchmarkBatchXack(b *testing.B) {
	const xackPending = 500000
	setup := [][]string{{"XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"}}
	for i := 1; i <= xackPending; i++ {
		setup = append(setup, []string{"XADD", "s", "1-" + strconv.Itoa(i), "f", "v"})
	}
	setup = append(setup, []string{"XREADGROUP", "GROUP", "g", "c", "COUNT", strconv.Itoa(xackPending), "STREAMS", "s", ">"})
	benchmarkBatches(b, setup, func(i int) []string { return []string{"XACK", "s", "g", "1-" + strconv.Itoa(i%xackPending+1)} })
}

// BenchmarkBatchGetbit reads random bits of 100 keys of 1 MB, as
// bench/bits's getbit test does.
func BenchmarkBatchGetbit(b *testing.B) {
	var setup [][]string
	for k := range 100 {
		setup = append(setup, []string{"SETBIT", fmt.Sprintf("bits:%d", k), strconv.Itoa(1<<23 - 1), "1"})
	}
	benchmarkBatches(b, setup, func(i int) []string {
		return []string{"GETBIT", fmt.Sprintf("bits:%d", (i*31)%100), strconv.Itoa((i * 2654435761) % (1 << 23))}
	})
}
