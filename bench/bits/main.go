// Command bits compares a shardgate node with redis-server on the bitmap
// commands, side by side, with interleaved rounds (redis, node, redis,
// node, ...) and medians, as bench/node-vs-redis.sh does for the strings
// commands. It is a Go program rather than redis-benchmark because
// redis-benchmark's __rand_int__ is zero-padded ("000012345678"), which
// both servers must refuse as a bit offset.
//
// Tests:
//   - setbit, getbit: random offsets below 2^23 on 100 keys of 1 MB;
//   - bitcount: BITCOUNT of a 1 MB key (SETRANGE-filled, so both servers
//     hold a dense 1 MB string);
//   - bitcount512: the latency of BITCOUNT over a 512 MB bitmap (a bit at
//     4294967295, 1 MB of data at the start), one client, no pipelining.
//
// Usage (both servers already running; bench/bits.sh starts them):
//
//	go run ./bench/bits -redis 127.0.0.1:7181 -node 127.0.0.1:7182
//
// Given the servers' process ids (-redis-pid, -node-pid), it also reports
// each server's CPU time per request (user plus system, from /proc/PID/stat
// around each run). On a 2-core machine shared with the load tool, a server
// that keeps up with it is held to the tool's pace, so requests per second
// stop telling the two apart while CPU per request still does.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	redisAddr := flag.String("redis", "127.0.0.1:6379", "redis-server address")
	nodeAddr := flag.String("node", "127.0.0.1:7000", "shardgate node address")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	requests := flag.Int("n", 1000000, "requests per SETBIT or GETBIT run")
	countRequests := flag.Int("n-bitcount", 20000, "requests per BITCOUNT run (each counts 1 MB)")
	clients := flag.Int("c", 50, "parallel connections")
	pipeline := flag.Int("P", 16, "pipeline depth")
	tests := flag.String("t", "setbit,getbit,bitcount,bitcount512", "tests to run")
	redisPID := flag.Int("redis-pid", 0, "redis-server's process id, to report its CPU per request (0: not reported)")
	nodePID := flag.Int("node-pid", 0, "the node's process id, to report its CPU per request (0: not reported)")
	flag.Parse()
	log.SetFlags(0)

	targets := []struct {
		name, addr string
		pid        int
	}{{"redis", *redisAddr, *redisPID}, {"node", *nodeAddr, *nodePID}}
	withCPU := *redisPID > 0 && *nodePID > 0
	for _, tg := range targets {
		if err := setup(tg.addr); err != nil {
			log.Fatalf("setup %s: %v", tg.name, err)
		}
	}
	header := "| test | -P | redis (median) | node (median) | node/redis | per-round node/redis |"
	rule := "|------|---:|---------------:|--------------:|-----------:|----------------------|"
	if withCPU {
		header += " redis CPU µs/req | node CPU µs/req | node/redis CPU |"
		rule += "-----------------:|----------------:|---------------:|"
	}
	fmt.Println(header)
	fmt.Println(rule)
	for _, test := range strings.Split(*tests, ",") {
		var res, cpu [2][]float64
		for r := 0; r < *rounds; r++ {
			for i, tg := range targets {
				var v float64
				var err error
				var before time.Duration
				if withCPU {
					if before, err = cpuTime(tg.pid); err != nil {
						log.Fatalf("%s: %v", tg.name, err)
					}
				}
				n := 20
				if test == "bitcount512" {
					v, err = latency(tg.addr, n)
				} else {
					n = *requests
					if test == "bitcount" {
						n = *countRequests
					}
					v, err = throughput(tg.addr, test, n, *clients, *pipeline)
				}
				if err != nil {
					log.Fatalf("%s on %s: %v", test, tg.name, err)
				}
				res[i] = append(res[i], v)
				if withCPU {
					after, err := cpuTime(tg.pid)
					if err != nil {
						log.Fatalf("%s: %v", tg.name, err)
					}
					cpu[i] = append(cpu[i], float64((after-before).Microseconds())/float64(n))
				}
			}
		}
		var per []string
		for r := range res[0] {
			per = append(per, ratio(test, res[0][r], res[1][r]))
		}
		rm, nm := median(res[0]), median(res[1])
		unit, p := "rps", strconv.Itoa(*pipeline)
		if test == "bitcount512" {
			unit, p = "ms", "1"
		}
		fmt.Printf("| %s | %s | %.1f %s | %.1f %s | %s | %s |", test, p, rm, unit, nm, unit, ratio(test, rm, nm), strings.Join(per, " "))
		if withCPU {
			rc, nc := median(cpu[0]), median(cpu[1])
			fmt.Printf(" %.2f | %.2f | %.2f |", rc, nc, nc/rc)
		}
		fmt.Println()
	}
	for _, tg := range targets {
		if err := do(tg.addr, "DEL", "bench:big"); err != nil {
			log.Printf("cleanup %s: %v", tg.name, err)
		}
	}
}

// ratio is node/redis as a speed ratio (for latencies, redis/node).
func ratio(test string, r, n float64) string {
	if test == "bitcount512" {
		return fmt.Sprintf("%.2fx", r/n)
	}
	return fmt.Sprintf("%.2fx", n/r)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// setup creates the keys the tests read: 100 keys of 1 MB for SETBIT and
// GETBIT, {b}1mb for BITCOUNT, bench:big for the 512 MB BITCOUNT.
func setup(addr string) error {
	mb := strings.Repeat("\x5a", 1<<20)
	for i := range 100 {
		if err := do(addr, "SET", "bench:bits:"+strconv.Itoa(i), mb); err != nil {
			return err
		}
	}
	if err := do(addr, "SET", "bench:1mb", mb); err != nil {
		return err
	}
	if err := do(addr, "SETBIT", "bench:big", "4294967295", "1"); err != nil {
		return err
	}
	return do(addr, "SETRANGE", "bench:big", "0", mb)
}

func do(addr string, args ...string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriter(c)
	writeCmd(w, args...)
	if err := w.Flush(); err != nil {
		return err
	}
	return readReply(bufio.NewReader(c))
}

// latency is the median milliseconds of n BITCOUNTs over the 512 MB key.
func latency(addr string, n int) (float64, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	w, r := bufio.NewWriter(c), bufio.NewReader(c)
	var ms []float64
	for range n {
		t0 := time.Now()
		writeCmd(w, "BITCOUNT", "bench:big")
		if err := w.Flush(); err != nil {
			return 0, err
		}
		if err := readReply(r); err != nil {
			return 0, err
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	return median(ms), nil
}

// throughput runs total requests of test over clients connections with
// the given pipeline depth and returns requests per second.
func throughput(addr, test string, total, clients, pipeline int) (float64, error) {
	per := total / clients
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			errs <- client(addr, test, per, pipeline, rand.New(rand.NewSource(seed)))
		}(int64(i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return float64(per*clients) / time.Since(start).Seconds(), nil
}

// client sends n requests of test in batches of pipeline and checks every
// reply. The batches are encoded before the clock matters (a few dozen
// random ones, reused in turn) and the replies, all integers, are counted
// line by line without allocating: a load tool that spends its CPU on
// formatting and parsing leaves less of the shared cores to the servers
// and pulls their ratio towards 1.0.
func client(addr, test string, n, pipeline int, rng *rand.Rand) error {
	batches, err := encodeBatches(test, pipeline, rng)
	if err != nil {
		return err
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	rd := replyCounter{buf: make([]byte, 64<<10)}
	for sent, i := 0, 0; sent < n; i++ {
		batch := min(pipeline, n-sent)
		b := batches[i%len(batches)]
		if batch < pipeline {
			b = b[:batch]
		}
		for _, req := range b {
			rd.out = append(rd.out, req...)
		}
		if _, err := c.Write(rd.out); err != nil {
			return err
		}
		rd.out = rd.out[:0]
		if err := rd.await(c, batch); err != nil {
			return err
		}
		sent += batch
	}
	return nil
}

// encodeBatches makes 64 batches of pipeline encoded requests each.
func encodeBatches(test string, pipeline int, rng *rand.Rand) ([][][]byte, error) {
	batches := make([][][]byte, 64)
	for i := range batches {
		for range pipeline {
			key := "bench:bits:" + strconv.Itoa(rng.Intn(100))
			off := strconv.Itoa(rng.Intn(1 << 23))
			var args []string
			switch test {
			case "setbit":
				args = []string{"SETBIT", key, off, strconv.Itoa(rng.Intn(2))}
			case "getbit":
				args = []string{"GETBIT", key, off}
			case "bitcount":
				args = []string{"BITCOUNT", "bench:1mb"}
			default:
				return nil, fmt.Errorf("unknown test %q", test)
			}
			var b bytes.Buffer
			w := bufio.NewWriter(&b)
			writeCmd(w, args...)
			w.Flush()
			batches[i] = append(batches[i], b.Bytes())
		}
	}
	return batches, nil
}

// replyCounter reads integer replies (":n\r\n") from a connection.
type replyCounter struct {
	buf        []byte
	start, end int  // unread bytes are buf[start:end]
	inLine     bool // buf[start] continues a reply begun in an earlier read
	out        []byte
}

// await reads until n more replies are in, failing on any reply that is
// not an integer.
func (r *replyCounter) await(c net.Conn, n int) error {
	for n > 0 {
		if r.start == r.end {
			m, err := c.Read(r.buf)
			if err != nil {
				return err
			}
			r.start, r.end = 0, m
		}
		for r.start < r.end && n > 0 {
			if !r.inLine {
				if r.buf[r.start] != ':' {
					return fmt.Errorf("unexpected reply %q", r.buf[r.start:r.end])
				}
				r.inLine = true
			}
			i := bytes.IndexByte(r.buf[r.start:r.end], '\n')
			if i < 0 {
				r.start = r.end
				break
			}
			r.start += i + 1
			r.inLine = false
			n--
		}
	}
	return nil
}

func writeCmd(w *bufio.Writer, args ...string) {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// readReply reads one reply, failing on an error reply.
func readReply(r *bufio.Reader) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '-':
		return fmt.Errorf("%s", strings.TrimSpace(line))
	case '$':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if n >= 0 {
			if _, err := r.Discard(n + 2); err != nil {
				return err
			}
		}
	case '*':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for range n {
			if err := readReply(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// cpuTime is the user plus system time a process has used, all its
// threads included, from /proc/PID/stat. Its unit, the clock tick, is
// 1/100 s in Linux's user interface (USER_HZ) whatever the kernel's own
// tick: about 1% of a 1,000,000-request run.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count fields after
	// its closing parenthesis, where utime and stime are the 12th and
	// 13th (fields 14 and 15 of the line).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

func init() {
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: bits -redis ADDR -node ADDR [-rounds N -n REQUESTS -n-bitcount REQUESTS -c CLIENTS -P DEPTH -t TESTS -redis-pid PID -node-pid PID]\n")
		flag.PrintDefaults()
	}
}
