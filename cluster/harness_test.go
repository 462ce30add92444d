package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tlog is a slog handler writing to t.Log until the test ends (memberlist's
// goroutines may still log a line while shutting down).
type tlog struct {
	mu   *sync.Mutex
	done *bool
	t    testing.TB
	h    slog.Handler
	buf  *strings.Builder
}

func newTestLogger(t testing.TB) *slog.Logger {
	mu, done, buf := new(sync.Mutex), new(bool), new(strings.Builder)
	t.Cleanup(func() { mu.Lock(); *done = true; mu.Unlock() })
	level := slog.LevelInfo
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return slog.New(&tlog{mu: mu, done: done, t: t, buf: buf,
		h: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})})
}

func (l *tlog) Enabled(ctx context.Context, lv slog.Level) bool { return l.h.Enabled(ctx, lv) }
func (l *tlog) Handle(ctx context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if *l.done {
		return nil
	}
	l.buf.Reset()
	err := l.h.Handle(ctx, r)
	l.t.Log(strings.TrimSpace(l.buf.String()))
	return err
}
func (l *tlog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *l
	c.h = l.h.WithAttrs(as)
	return &c
}
func (l *tlog) WithGroup(g string) slog.Handler {
	c := *l
	c.h = l.h.WithGroup(g)
	return &c
}

var respPort atomic.Int32

// testConfig is a Fast node config on loopback with a free gossip port.
func testConfig(t testing.TB) Config {
	return Config{
		Role:     RoleNode,
		RESPAddr: fmt.Sprintf("127.0.0.1:%d", 20000+respPort.Add(1)),
		Bind:     "127.0.0.1:0",
		Fast:     true,
		Logger:   newTestLogger(t),
	}
}

// start starts a member and closes it when the test ends.
func start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startN starts n nodes with BootstrapExpect n, each joining the first.
func startN(t testing.TB, n int, mod func(i int, cfg *Config)) []*Cluster {
	t.Helper()
	var cs []*Cluster
	for i := range n {
		cfg := testConfig(t)
		cfg.BootstrapExpect = n
		if i > 0 {
			cfg.Join = []string{cs[0].GossipAddr()}
		}
		if mod != nil {
			mod(i, &cfg)
		}
		cs = append(cs, start(t, cfg))
	}
	return cs
}

// checkFor polls cond every 20 ms until it returns nil, failing the test
// with its last error after timeout.
func checkFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// converged checks that every member has the same cluster id and table,
// sees every other member alive and announcing that table.
func converged(cs []*Cluster) error {
	v0 := cs[0].View()
	if v0.ClusterID == "" {
		return fmt.Errorf("%s: no cluster id", v0.Self[:8])
	}
	for _, c := range cs {
		v := c.View()
		if v.ClusterID != v0.ClusterID {
			return fmt.Errorf("%s: cluster id %q, %s has %q", v.Self[:8], v.ClusterID, v0.Self[:8], v0.ClusterID)
		}
		if *v.Slots != *v0.Slots {
			return fmt.Errorf("%s: table %v, %s has %v", v.Self[:8], (*Table)(v.Slots), v0.Self[:8], (*Table)(v0.Slots))
		}
		digest := (*Table)(v.Slots).Digest()
		for _, o := range cs {
			m, ok := v.Member(o.ID())
			if !ok || m.State != StateAlive {
				return fmt.Errorf("%s sees %s as %v (known %v)", v.Self[:8], o.ID()[:8], m.State, ok)
			}
			if m.TableDigest != digest || m.TableEpoch != v.Epoch {
				return fmt.Errorf("%s sees %s announce table %x at epoch %d, has %x at %d", v.Self[:8], o.ID()[:8], m.TableDigest, m.TableEpoch, digest, v.Epoch)
			}
		}
	}
	return nil
}
