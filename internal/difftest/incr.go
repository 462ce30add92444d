package difftest

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// IncrPipelines is a shutdown test's load: each connection pipelines n
// INCRs of its own key in one write and reads the replies in order until
// the server closes it, so that afterwards the counter a server kept can
// be compared with the replies its client received.
type IncrPipelines struct {
	// Got is the number of replies each connection received, in order
	// (valid after Wait).
	Got []int64

	started sync.WaitGroup
	done    sync.WaitGroup
	errs    chan error
}

// StartIncrPipelines starts the load on conns, connection i on keys[i].
// The writes run in goroutines of their own: a server that stops reading
// mid-pipeline may never take the rest, and the reads go on meanwhile.
func StartIncrPipelines(conns []*Conn, keys []string, n int) *IncrPipelines {
	p := &IncrPipelines{Got: make([]int64, len(conns)), errs: make(chan error, len(conns))}
	p.started.Add(len(conns))
	for i, c := range conns {
		var req []byte
		for range n {
			req = AppendCommand(req, []byte("INCR"), []byte(keys[i]))
		}
		p.done.Go(func() {
			once := sync.OnceFunc(p.started.Done)
			defer once()
			go c.WriteRaw(req)
			for {
				v, err := c.Receive()
				if err != nil {
					return // the server closed the connection
				}
				once()
				if v.Kind != Integer || v.Int != p.Got[i]+1 {
					p.errs <- fmt.Errorf("connection %d, reply %d: %v", i, p.Got[i]+1, v)
					return
				}
				p.Got[i]++
			}
		})
	}
	return p
}

// WaitStarted returns once every connection has had a reply (or ended):
// every pipeline is being served.
func (p *IncrPipelines) WaitStarted() { p.started.Wait() }

// Wait returns, once every connection has ended, the replies that came
// out of order or were not the next count.
func (p *IncrPipelines) Wait() []error {
	p.done.Wait()
	close(p.errs)
	var errs []error
	for err := range p.errs {
		errs = append(errs, err)
	}
	return errs
}

// StopUnderLoad runs stop once the load is flowing and checks what a
// clean shutdown owes: stop returns within bound, every pipeline ends in
// order (Wait's errors), and each connection in gone, idle or blocked,
// is closed without a reply. Got is then valid.
func (p *IncrPipelines) StopUnderLoad(t testing.TB, stop func(), bound time.Duration, gone ...*Conn) {
	t.Helper()
	p.WaitStarted()
	start := time.Now()
	stop()
	if d := time.Since(start); d > bound {
		t.Errorf("Close took %v with a blocked and an idle client", d)
	}
	for _, err := range p.Wait() {
		t.Error(err)
	}
	for _, c := range gone {
		if v, err := c.Receive(); err != io.EOF {
			t.Errorf("idle or blocked client after Close: %v %v, want EOF", v, err)
		}
	}
}
