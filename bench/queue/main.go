// Command queue measures the reliable-queue pattern on Redis lists against
// several servers side by side, in interleaved rounds with medians:
//
//   - blmove: producers LPUSH jobs while workers take them with
//     BLMOVE jobs processing RIGHT LEFT and acknowledge them with LREM
//     processing 1 job; the figure is completed jobs per second.
//   - wakeup: consumers wait in BRPOP on their own keys; a producer pushes
//     a timestamp to one of them at a time and the consumer measures how
//     long the element took to reach it (p50 and p99, microseconds).
//
// The keys share one {hash tag}, so the pattern also runs through the
// shardgate proxy (one slot, one node).
//
// Usage (servers already running; bench/lists.sh starts them):
//
//	go run ./bench/queue -targets redis=127.0.0.1:6379,node=127.0.0.1:7001,proxy=127.0.0.1:7379
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	targetsFlag := flag.String("targets", "", "name=host:port,... (the first is the reference)")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	jobs := flag.Int("jobs", 100000, "jobs per blmove run")
	producers := flag.Int("producers", 4, "producers (blmove)")
	workers := flag.Int("workers", 16, "workers (blmove)")
	samples := flag.Int("samples", 2000, "wake-ups measured per wakeup run")
	consumers := flag.Int("consumers", 16, "blocked consumers (wakeup)")
	flag.Parse()
	log.SetFlags(0)
	type target struct{ name, addr string }
	var targets []target
	for _, t := range strings.Split(*targetsFlag, ",") {
		name, addr, ok := strings.Cut(t, "=")
		if !ok {
			log.Fatalf("bad target %q (want name=host:port)", t)
		}
		targets = append(targets, target{name, addr})
	}
	if len(targets) == 0 {
		log.Fatal("no targets")
	}
	jobsPerSec := make([][]float64, len(targets))
	p50 := make([][]float64, len(targets))
	p99 := make([][]float64, len(targets))
	for r := 0; r < *rounds; r++ {
		for i, t := range targets {
			v, err := blmove(t.addr, *jobs, *producers, *workers)
			if err != nil {
				log.Fatalf("blmove on %s: %v", t.name, err)
			}
			jobsPerSec[i] = append(jobsPerSec[i], v)
			a, b, err := wakeup(t.addr, *samples, *consumers)
			if err != nil {
				log.Fatalf("wakeup on %s: %v", t.name, err)
			}
			p50[i] = append(p50[i], a)
			p99[i] = append(p99[i], b)
		}
	}
	fmt.Printf("| target | BLMOVE+LREM jobs/s (median) | vs %s | BRPOP wake-up p50 µs | p99 µs |\n", targets[0].name)
	fmt.Printf("|--------|---:|---:|---:|---:|\n")
	for i, t := range targets {
		fmt.Printf("| %s | %.0f | %.2f | %.0f | %.0f |\n", t.name, median(jobsPerSec[i]),
			median(jobsPerSec[i])/median(jobsPerSec[0]), median(p50[i]), median(p99[i]))
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// conn is a minimal RESP client.
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
	return &conn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, nil
}

func (c *conn) send(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// do sends a command and returns its reply: the text of a simple string,
// integer or bulk, the elements of an array (bulk elements only), nil for
// a null.
func (c *conn) do(args ...string) (any, error) {
	c.send(args...)
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *conn) read() (any, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return nil, errors.New(line[1:])
	case '_':
		return nil, nil
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := ioReadFull(c.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		out := make([]string, 0, n)
		for range n {
			v, err := c.read()
			if err != nil {
				return nil, err
			}
			s, _ := v.(string)
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// blmove runs the reliable-queue pattern for n jobs and returns completed
// jobs per second.
func blmove(addr string, n, producers, workers int) (float64, error) {
	ctl, err := dial(addr)
	if err != nil {
		return 0, err
	}
	defer ctl.nc.Close()
	if _, err := ctl.do("DEL", "{q}jobs", "{q}processing"); err != nil {
		return 0, err
	}
	var done atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) { firstErr.CompareAndSwap(nil, err) }
	var wg sync.WaitGroup
	start := time.Now()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(addr)
			if err != nil {
				fail(err)
				return
			}
			defer c.nc.Close()
			const batch = 16
			for i := p; i < n; i += producers * batch {
				k := 0
				for j := i; j < n && j < i+producers*batch; j += producers {
					c.send("LPUSH", "{q}jobs", "job:"+strconv.Itoa(j))
					k++
				}
				if err := c.w.Flush(); err != nil {
					fail(err)
					return
				}
				for range k {
					if _, err := c.read(); err != nil {
						fail(err)
						return
					}
				}
			}
		}()
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(addr)
			if err != nil {
				fail(err)
				return
			}
			defer c.nc.Close()
			for done.Load() < int64(n) {
				v, err := c.do("BLMOVE", "{q}jobs", "{q}processing", "RIGHT", "LEFT", "0.1")
				if err != nil {
					fail(err)
					return
				}
				job, ok := v.(string)
				if !ok {
					continue // timed out: maybe all jobs are taken
				}
				if _, err := c.do("LREM", "{q}processing", "1", job); err != nil {
					fail(err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// wakeup measures how long a pushed element takes to reach a client
// blocked in BRPOP, and returns p50 and p99 in microseconds.
func wakeup(addr string, samples, consumers int) (p50, p99 float64, err error) {
	ctl, err := dial(addr)
	if err != nil {
		return 0, 0, err
	}
	defer ctl.nc.Close()
	keys := make([]string, consumers)
	for i := range keys {
		keys[i] = "{q}wake:" + strconv.Itoa(i)
		ctl.do("DEL", keys[i])
	}
	lat := make(chan time.Duration, samples)
	ready := make(chan int, consumers)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for i := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(addr)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				ready <- -1
				return
			}
			defer c.nc.Close()
			for {
				ready <- i
				v, err := c.do("BRPOP", keys[i], "0")
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				el, _ := v.([]string)
				if len(el) != 2 {
					firstErr.CompareAndSwap(nil, fmt.Errorf("BRPOP reply %v", v))
					return
				}
				if el[1] == "stop" {
					return
				}
				ns, _ := strconv.ParseInt(el[1], 10, 64)
				lat <- time.Duration(time.Now().UnixNano() - ns)
			}
		}()
	}
	for range samples {
		i := <-ready
		if i < 0 {
			break
		}
		// Give the consumer time to block before pushing.
		time.Sleep(200 * time.Microsecond)
		if _, err := ctl.do("LPUSH", keys[i], strconv.FormatInt(time.Now().UnixNano(), 10)); err != nil {
			return 0, 0, err
		}
	}
	for i := range consumers {
		ctl.do("LPUSH", keys[i], "stop")
	}
	wg.Wait()
	close(lat)
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, err
	}
	var us []float64
	for d := range lat {
		us = append(us, float64(d.Microseconds()))
	}
	slices.Sort(us)
	if len(us) == 0 {
		return 0, 0, errors.New("no samples")
	}
	return us[len(us)/2], us[len(us)*99/100], nil
}
