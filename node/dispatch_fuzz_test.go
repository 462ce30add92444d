package node

import (
	"bytes"
	"log/slog"
	"net"
	"testing"
	"time"
)

// FuzzDispatch runs arbitrary command sequences through the whole
// dispatcher (lookup, arity, CROSSSLOT, MULTI, locks) and every command
// family's argument parsing. Input: commands separated by '\n', arguments
// by NUL. A handler panic is recovered by the node and answered with an
// ERR, so the target fails on any recovered panic: each one is a bug.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{
		"SET\x00k\x00v\x00EX\x0010\x00GET\nGETEX\x00k\x00PXAT\x00-1\nTTL\x00k",
		"SET\x00k\x00v\x00NX\x00XX\nSET\x00k\x00v\x00KEEPTTL\x00EX\x001\nSETRANGE\x00k\x0070000\x00x\nGETRANGE\x00k\x00-5\x00-1",
		"INCRBYFLOAT\x00f\x001e308\nINCRBYFLOAT\x00f\x001e308\nDECRBY\x00n\x00-9223372036854775808",
		"EXPIRE\x00k\x0010\x00NX\x00GT\nPEXPIREAT\x00k\x009223372036854775807\nEXPIRETIME\x00k",
		"SCAN\x000\x00MATCH\x00[a-\x00COUNT\x00-1\nSCAN\x0018446744073709551615\x00TYPE\x00string\nKEYS\x00*[\\",
		"COPY\x00k\x00{k}x\x00DB\x001\x00REPLACE\nRENAME\x00{k}x\x00{k}y\nRENAMENX\x00a\x00b",
		"SETBIT\x00b\x004294967295\x001\nBITCOUNT\x00b\x00-1\x00-2\x00BIT\nBITPOS\x00b\x000\x00-1\nBITOP\x00NOT\x00{b}d\x00b",
		"BITFIELD\x00s\x00OVERFLOW\x00FAIL\x00INCRBY\x00u8\x00#40\x001\x00GET\x00i64\x000\x00SET\x00u63\x00#2305843009213693953\x001",
		"PFADD\x00h\x00a\x00b\nPFCOUNT\x00h\x00{h}x\nPFMERGE\x00h\nSET\x00h\x00HYLL\x01\x00\nPFCOUNT\x00h",
		"MULTI\nSET\x00{a}1\x00x\nGET\x00{a}2\nINCR\x00{b}1\nEXEC\nWATCH\x00k\nMULTI\nMULTI\nDISCARD\nEXEC",
		"HELLO\x003\x00SETNAME\x00x\nCLIENT\x00LIST\x00TYPE\x00normal\nCLIENT\x00KILL\x00ID\x00x\nCLIENT\x00REPLY\x00SKIP\nPING",
		"CONFIG\x00GET\x00*\nCONFIG\x00SET\x00maxclients\x00-1\nINFO\x00everything\nCOMMAND\x00GETKEYS\x00EVAL\x00s\x001\x00k\nCOMMAND\x00INFO\x00get\x00x",
		"OBJECT\x00ENCODING\x00k\nMEMORY\x00USAGE\x00k\x00SAMPLES\x000\nRESET\nSELECT\x001\nAUTH\x00x\nFLUSHALL\x00ASYNC",
		"nosuchcommand\x00\x00arg\nCLIENT\x00nosub\nGET\nGET\x00a\x00b\nMGET\x00a\x00b",
		"RPUSH\x00l\x00a\x00b\x00a\nLPOS\x00l\x00a\x00RANK\x00-1\x00COUNT\x000\x00MAXLEN\x001\nLINSERT\x00l\x00BEFORE\x00b\x00c\nLMPOP\x002\x00l\x00{l}x\x00LEFT\x00COUNT\x009\nLMOVE\x00l\x00{l}x\x00RIGHT\x00LEFT\nLSET\x00l\x00-9\x00v\nLTRIM\x00l\x001\x00-1\nLREM\x00l\x00-2\x00a",
		"XADD\x00s\x00MAXLEN\x00~\x0010\x00LIMIT\x005\x001-*\x00f\x00v\nXADD\x00s\x00NOMKSTREAM\x00MINID\x00=\x000-1\x00*\x00f\x00v\nXGROUP\x00CREATE\x00s\x00g\x00$\x00MKSTREAM\x00ENTRIESREAD\x003\nXREADGROUP\x00GROUP\x00g\x00c\x00COUNT\x002\x00NOACK\x00STREAMS\x00s\x00>\nXPENDING\x00s\x00g\x00IDLE\x000\x00-\x00+\x0010\x00c",
		"XADD\x00s\x001-1\x00a\x00b\nXGROUP\x00CREATE\x00s\x00g\x000\nXREADGROUP\x00GROUP\x00g\x00c\x00STREAMS\x00s\x00>\nXCLAIM\x00s\x00g\x00d\x000\x001-1\x00IDLE\x00-5\x00RETRYCOUNT\x009\x00FORCE\x00JUSTID\x00LASTID\x009-9\nXAUTOCLAIM\x00s\x00g\x00d\x000\x000-0\x00COUNT\x001\x00JUSTID\nXACK\x00s\x00g\x001-1\x00x",
		"XADD\x00s\x00*\x00a\x00b\nXDEL\x00s\x000-0\nXTRIM\x00s\x00MAXLEN\x00=\x000\nXSETID\x00s\x0099-0\x00ENTRIESADDED\x001\x00MAXDELETEDID\x000-1\nXINFO\x00STREAM\x00s\x00FULL\x00COUNT\x000\nXINFO\x00GROUPS\x00s\nXRANGE\x00s\x00(0-0\x00+\x00COUNT\x00-1\nXREVRANGE\x00s\x00+\x00-\nXREAD\x00COUNT\x001\x00STREAMS\x00s\x00{s}t\x00$\x000",
		"BLPOP\x00l\x000\nBRPOP\x00l\x00{l}x\x000.01\nWAIT\x001\x000",
		"RPUSH\x00l\x003\x00 1e1\x000x1p-1074\x00\x00inf\nSORT\x00l\x00LIMIT\x00-1\x009223372036854775807\x00DESC\x00STORE\x00{l}d\nSORT_RO\x00l\x00ALPHA\x00BY\x00no\x00sort\nSORT\x00l\x00BY\x00w*\x00GET\x00#\nSORT\x00{l}d\x00STORE\x00{l}d",
		"CLIENT\x00PAUSE\x00100000\x00WRITE\nGET\x00k\nSET\x00k\x00v\nCLIENT\x00UNPAUSE",
		"XGROUP\x00CREATECONSUMER\x00s\x00g\x00c\nXGROUP\x00DELCONSUMER\x00s\x00g\x00c\nXGROUP\x00SETID\x00s\x00g\x00$\x00ENTRIESREAD\x00-1\nXGROUP\x00DESTROY\x00s\x00g\nXINFO\x00CONSUMERS\x00s\x00g\nXLEN\x00s",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := New(Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		local, remote := net.Pipe()
		defer local.Close()
		defer remote.Close()
		c := newClient(s, local)
		c.tick()
		// Some commands rightly wait for ever here (a blocking pop with
		// timeout 0, WAIT, a write held by CLIENT PAUSE): nothing reads
		// or closes the pipe's other end. After a while a watchdog lifts
		// any pause and closes that end, which such a command takes for
		// its client leaving; a deadlock still hangs the target.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Second):
			}
			remote.Close()
			for {
				s.pause.Lift()
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		for _, line := range bytes.Split(in, []byte{'\n'}) {
			args := bytes.Split(line, []byte{0})
			s.execute(c, args)
			c.w.Reset()
			if c.closing {
				break
			}
		}
		if n := s.stats.unexpectedErrors.Load(); n != 0 {
			t.Fatalf("%d command(s) panicked for input %q", n, in)
		}
	})
}
