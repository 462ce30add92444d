package proxy_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// FuzzProxy sends arbitrary command sequences through one proxy over
// three nodes (split mode, segmented keys on): routing, key finding,
// cross-slot splits, fan-outs, SCAN cursors, transactions, CLUSTER views
// and segmented bitmaps all parse client arguments. Input: commands
// separated by '\n', arguments by NUL. Each command must get a reply (or
// the connection may close: QUIT, an HTTP line), the proxy must not
// panic, and it must still answer a new client afterwards. Blocking
// commands and CLIENT REPLY are left out: they legitimately leave a
// command without a reply for a while.
func FuzzProxy(f *testing.F) {
	for _, seed := range []string{
		"SET\x00k\x00v\nGET\x00k\nMGET\x00a\x00b\x00k\nMSET\x00a\x001\x00b\nDEL\x00a\x00b\x00k\nEXISTS\x00a\x00a",
		"SCAN\x000\x00COUNT\x003\nSCAN\x0018446744073709551615\nSCAN\x00-1\x00MATCH\x00*\nSCAN\x00+5\nSCAN\x00x",
		"MULTI\nSET\x00{a}1\x00x\nGET\x00{a}2\nEXEC\nMULTI\nSET\x00a\x00x\nSET\x00b\x00y\nEXEC\nWATCH\x00a\nMULTI\nPING\nEXEC\nUNWATCH",
		"CLUSTER\x00SLOTS\nCLUSTER\x00SHARDS\nCLUSTER\x00NODES\nCLUSTER\x00COUNTKEYSINSLOT\x00-1\nCLUSTER\x00GETKEYSINSLOT\x0016383\x00x\nCLUSTER\x00KEYSLOT\x00{}",
		"SETBIT\x00seg1\x009223372036854775807\x001\nBITCOUNT\x00seg1\x00-1\x00-9223372036854775808\x00BIT\nBITPOS\x00seg1\x000\x00-1\nBITOP\x00NOT\x00seg2\x00seg1\nSEGBIT.INFO\x00seg1\nSEGBIT.DEL\x00seg1\x00seg2",
		"HELLO\x003\nCLIENT\x00LIST\nCLIENT\x00KILL\x00ID\x00x\nCLIENT\x00UNBLOCK\x000\nINFO\x00nodes\nDBSIZE\nKEYS\x00*\nRANDOMKEY",
		"RPUSH\x00l\x00a\x00b\nLMPOP\x001\x00l\x00LEFT\nLMOVE\x00l\x00{l}x\x00LEFT\x00RIGHT\nLRANGE\x00l\x000\x00-1\nFLUSHALL",
		"nosuch\x00\x00x\nCLIENT\nGET\nREADONLY\nASKING\nSELECT\x001\nAUTH\x00x\nRESET\nQUIT\nPING",
		"XADD\x00s\x00*\x00f\x00v\nXGROUP\x00CREATE\x00s\x00g\x000\nXREADGROUP\x00GROUP\x00g\x00c\x00COUNT\x001\x00STREAMS\x00s\x00{s}t\x00>\x00>\nXREAD\x00COUNT\x002\x00STREAMS\x00s\x00t\x000\x000\nXPENDING\x00s\x00g\nXAUTOCLAIM\x00s\x00g\x00d\x000\x000\nXINFO\x00STREAM\x00s\x00FULL",
		"XREAD\x00STREAMS\nXREAD\x00COUNT\x00x\x00STREAMS\x00s\x000\nXREADGROUP\x00GROUP\x00g\nXREADGROUP\x00GROUP\x00g\x00c\x00STREAMS\x00s\nXCLAIM\x00s\x00g\x00c\x00-1\x000-1\x00TIME\x00-1\nXACK\x00s\x00g",
		"SETBIT\x00seg1\x004097\x001\nGETBIT\x00seg1\x004097\nSET\x00{sg:1}seg1\x00x\nSETBIT\x00seg1\x004098\x002\nSETBIT\x00seg1\x00-1\x001\nSEGBIT.GETBIT\x00seg1\nSETBIT\x00seg1\x004099\x001\nBITCOUNT\x00seg1\x000\x00-1",
		"RPUSH\x00l\x003\x001\x00x\nSORT\x00l\nSORT\x00l\x00ALPHA\x00STORE\x00{l}d\nSORT\x00l\x00STORE\x00d\nSORT_RO\x00l\x00BY\x00w*\nKEYS\x00{l}*",
	} {
		f.Add([]byte(seed))
	}
	var panics atomic.Int64
	log := slog.New(panicCounter{&panics})
	cl := proxytest.Start(f, 3, proxy.Options{Logger: log, CrossSlot: proxy.CrossSlotSplit, SegmentKeys: []string{"seg*"}, SegmentBits: 1 << 12})
	f.Fuzz(func(t *testing.T, in []byte) {
		// The proxy is shared by the inputs: count this input's panics
		// only, so that one crasher does not fail (and shrink) the rest.
		before := panics.Load()
		c, err := difftest.Dial(cl.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		for _, line := range bytes.Split(in, []byte{'\n'}) {
			args := bytes.Split(line, []byte{0})
			if len(args[0]) == 0 || mayWaitForever(args) {
				continue
			}
			if err := c.Send(args...); err != nil {
				break
			}
			if _, err := c.Receive(); err != nil {
				if strings.Contains(err.Error(), "timeout") {
					t.Fatalf("no reply to %q within 10s (input %q)", args, in)
				}
				break // closed: QUIT, an HTTP line, a limit
			}
		}
		if n := panics.Load() - before; n != 0 {
			t.Fatalf("the proxy panicked %d time(s) on input %q", n, in)
		}
		check, err := difftest.Dial(cl.Addr)
		if err != nil {
			t.Fatalf("proxy gone after input %q: %v", in, err)
		}
		defer check.Close()
		check.NetConn().SetDeadline(time.Now().Add(10 * time.Second))
		if v, err := check.DoStrings("PING"); err != nil || v.Text() != "PONG" {
			t.Fatalf("PING after input %q: %v %v", in, v, err)
		}
	})
}

// mayWaitForever reports commands that can legitimately leave the client
// without a reply: blocking ones and CLIENT REPLY OFF/SKIP.
func mayWaitForever(args [][]byte) bool {
	name := strings.ToLower(string(args[0]))
	switch {
	case strings.HasPrefix(name, "b"), name == "xread", name == "xreadgroup":
		return true
	case name == "client" && len(args) > 1 && strings.EqualFold(string(args[1]), "reply"):
		return true
	}
	return false
}

// panicCounter is a slog handler that counts the proxy's panic reports.
type panicCounter struct{ n *atomic.Int64 }

func (h panicCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h panicCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panicked") {
		h.n.Add(1)
	}
	return nil
}
func (h panicCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panicCounter) WithGroup(string) slog.Handler      { return h }
