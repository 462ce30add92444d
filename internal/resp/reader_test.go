package resp

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"
)

// readerCase is a byte stream and what Redis 7.0.15 makes of it: the
// commands it runs, then either a protocol error (reply, then close) or
// nothing more (it waits for the rest of a command, or for the next one).
// Every case was checked against a real redis-server, and
// TestReaderCasesAgainstRedis checks them again whenever one is installed.
type readerCase struct {
	name  string
	in    string
	cmds  [][]string
	err   *ProtocolError
	unaut bool // the client has not authenticated on a server with a password
}

func cmds(c ...[]string) [][]string { return c }
func cmd(a ...string) []string      { return a }

var readerCases = []readerCase{
	// Inline commands.
	{name: "inline CRLF", in: "PING\r\n", cmds: cmds(cmd("PING"))},
	{name: "inline LF", in: "PING\n", cmds: cmds(cmd("PING"))},
	{name: "inline CR inside splits", in: "PING\rPING\n", cmds: cmds(cmd("PING", "PING"))},
	{name: "inline blanks", in: "  ECHO \t  x   \r\n", cmds: cmds(cmd("ECHO", "x"))},
	{name: "inline leading vtab formfeed", in: "\t\v\fPING\r\n", cmds: cmds(cmd("PING"))},
	{name: "inline vtab inside a token", in: "ECHO\vx\r\n", cmds: cmds(cmd("ECHO\vx"))},
	{name: "empty lines skipped", in: "\r\n\n   \r\nPING\n\n\nPING\r\n", cmds: cmds(cmd("PING"), cmd("PING"))},
	{name: "inline double quotes", in: "ECHO \"a b\"\r\n", cmds: cmds(cmd("ECHO", "a b"))},
	{name: "inline escapes", in: `ECHO "\n\r\t\b\a\z\\\"\x41\x4\xZZ"` + "\r\n",
		cmds: cmds(cmd("ECHO", "\n\r\t\b\az\\\"Ax4xZZ"))},
	{name: "inline single quotes", in: `ECHO 'a\'b\n'` + "\r\n", cmds: cmds(cmd("ECHO", `a'b\n`))},
	{name: "inline single quote escapes", in: `ECHO '\\' x'` + "\r\n", cmds: cmds(cmd("ECHO", `\' x`))},
	{name: "inline empty quotes", in: "ECHO \"\" ''\r\n", cmds: cmds(cmd("ECHO", "", ""))},
	{name: "inline quote mid token", in: "ECHO a\"b c\"\r\n", cmds: cmds(cmd("ECHO", "ab c"))},
	{name: "inline closing quote then vtab", in: "ECHO \"a\"\vb\r\n", cmds: cmds(cmd("ECHO", "a", "b"))},
	{name: "unbalanced double quote", in: "PING\r\nECHO \"abc\r\nPING\r\n", cmds: cmds(cmd("PING")), err: ErrUnbalancedQuotes},
	{name: "unbalanced single quote", in: "ECHO 'abc\r\n", err: ErrUnbalancedQuotes},
	{name: "closing quote glued", in: "ECHO \"a\"b\r\n", err: ErrUnbalancedQuotes},
	{name: "closing single quote glued", in: "ECHO 'a'b\r\n", err: ErrUnbalancedQuotes},
	{name: "quote in token glued", in: "ECHO a\"b\"c\r\n", err: ErrUnbalancedQuotes},
	{name: "trailing backslash in quotes", in: "ECHO \"a\\\"\r\n", err: ErrUnbalancedQuotes},
	{name: "inline incomplete waits", in: "PING\r\nECHO abc", cmds: cmds(cmd("PING"))},
	{name: "inline CR at end waits", in: "PING\r", cmds: nil},
	// A NUL ends the C string Redis searches for the newline: the line
	// never completes.
	{name: "inline NUL blocks", in: "PING\x00\r\nPING\r\n"},
	{name: "leading NUL blocks", in: "\x00\r\nPING\r\n"},
	{name: "NUL after a command", in: "PING\r\n\x00PING\r\n", cmds: cmds(cmd("PING"))},
	{name: "binary garbage inline", in: "\x01\x02\xff\n\xfe\xfd\r\n", cmds: cmds(cmd("\x01\x02\xff"), cmd("\xfe\xfd"))},
	{name: "too big inline", in: strings.Repeat("a", MaxInlineSize+1), err: ErrTooBigInline},
	{name: "inline at size limit waits", in: strings.Repeat("a", MaxInlineSize)},
	{name: "too long inline line", in: "PING\r\nECHO " + strings.Repeat("a", MaxInlineSize) + "\r\n", cmds: cmds(cmd("PING")), err: ErrTooBigInline},
	{name: "inline line at limit", in: "ECHO " + strings.Repeat("a", MaxInlineSize-5) + "\n", cmds: cmds(cmd("ECHO", strings.Repeat("a", MaxInlineSize-5)))},
	{name: "NUL-blocked inline grows too big", in: "PING\x00" + strings.Repeat("\n", MaxInlineSize), err: ErrTooBigInline},

	// Multibulk commands.
	{name: "multibulk", in: "*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n", cmds: cmds(cmd("ECHO", "abc"))},
	{name: "empty bulk", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", cmds: cmds(cmd("ECHO", ""))},
	{name: "bulk with CRLF and NUL", in: "*2\r\n$4\r\nECHO\r\n$5\r\n\r\n\x00\r\n\r\n", cmds: cmds(cmd("ECHO", "\r\n\x00\r\n"))},
	{name: "*0 skipped", in: "*0\r\nPING\r\n", cmds: cmds(cmd("PING"))},
	{name: "*-1 skipped", in: "*-1\r\nPING\r\n", cmds: cmds(cmd("PING"))},
	{name: "*-5 skipped", in: "*-5\r\n*1\r\n$4\r\nPING\r\n", cmds: cmds(cmd("PING"))},
	{name: "bytes after payload unchecked", in: "*1\r\n$4\r\nPINGxx*1\r\n$4\r\nPING\r\n", cmds: cmds(cmd("PING"), cmd("PING"))},
	{name: "byte after CR unchecked", in: "*1\rx$4\rxPING\r\n", cmds: cmds(cmd("PING"))},
	{name: "mixed pipeline", in: "PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nECHO y\n*0\r\n*1\r\n$4\r\nPING\r\n",
		cmds: cmds(cmd("PING"), cmd("ECHO", "x"), cmd("ECHO", "y"), cmd("PING"))},
	{name: "multibulk incomplete waits", in: "*2\r\n$4\r\nECHO\r\n$3\r\nab", cmds: nil},
	{name: "multibulk header incomplete", in: "*1\r", cmds: nil},
	{name: "multibulk count only", in: "*1\r\n", cmds: nil},
	{name: "multibulk count NUL blocks", in: "*1\x00\r\n$4\r\nPING\r\n"},
	{name: "bulk header NUL blocks", in: "*1\r\n$4\x00\r\nPING\r\n"},
	{name: "element NUL blocks", in: "*1\r\n\x00\r\n"},
	{name: "negative bulk length", in: "*1\r\n$-5\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length -1", in: "*3\r\n$4\r\nECHO\r\n$3\r\nabc\r\n$-1\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length -0", in: "*1\r\n$-0\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length leading zero", in: "*1\r\n$04\r\nPING\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length plus", in: "*1\r\n$+4\r\nPING\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length empty", in: "*1\r\n$\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length not a number", in: "*1\r\n$x\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length space", in: "*1\r\n$4 \r\nPING\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length absurd", in: "*1\r\n$9999999999\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length overflows int64", in: "*1\r\n$99999999999999999999\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length over proto-max-bulk-len", in: "*1\r\n$536870913\r\n", err: ErrInvalidBulkLen},
	{name: "bulk length at proto-max-bulk-len waits", in: "*1\r\n$536870912\r\n"},
	{name: "multibulk count absurd", in: "*99999999999\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count over INT_MAX", in: "*2147483648\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count INT_MAX waits", in: "*2147483647\r\n"},
	{name: "multibulk count not a number", in: "*abc\r\nPING\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count leading zero", in: "*01\r\n$4\r\nPING\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count plus", in: "*+1\r\n$4\r\nPING\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count empty", in: "*\r\nPING\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count space", in: "*1 \r\n$4\r\nPING\r\n", err: ErrInvalidMultibulkLen},
	{name: "multibulk count 21 digits", in: "*000000000000000000001\r\n", err: ErrInvalidMultibulkLen},
	{name: "expected dollar", in: "*1\r\nfoo\r\n", err: expectedDollar('f')},
	{name: "expected dollar plus", in: "PING\r\n*1\r\n+foo\r\n", cmds: cmds(cmd("PING")), err: expectedDollar('+')},
	{name: "expected dollar CR", in: "*1\r\n\r\n", err: expectedDollar('\r')},
	{name: "expected dollar high byte", in: "*1\r\n\xff\r\n", err: expectedDollar('\xff')},
	{name: "non-dollar waits for its line", in: "*1\r\n$4\r\nPING\r\n*1\r\nfoo", cmds: cmds(cmd("PING"))},
	{name: "non-dollar waits for LF", in: "*1\r\nfoo\r"},
	{name: "too big mbulk count string", in: "*" + strings.Repeat("1", MaxInlineSize), err: ErrTooBigMbulkCount},
	{name: "mbulk count string at limit waits", in: "*" + strings.Repeat("1", MaxInlineSize-1)},
	{name: "too long mbulk count line", in: "*" + strings.Repeat("1", MaxInlineSize) + "\r\n", err: ErrTooBigMbulkCount},
	{name: "too big bulk count string", in: "*1\r\n$" + strings.Repeat("1", MaxInlineSize), err: ErrTooBigBulkCount},
	{name: "too big non-dollar element", in: "*1\r\n" + strings.Repeat("f", MaxInlineSize+1), err: ErrTooBigBulkCount},
	{name: "NUL-blocked bulk header grows too big", in: "*1\r\n$\x00" + strings.Repeat("\r\n", MaxInlineSize), err: ErrTooBigBulkCount},
	{name: "binary garbage multibulk", in: "*\xff\xfe\r\n", err: ErrInvalidMultibulkLen},

	// Limits before authentication (requirepass set, not yet AUTHed).
	{name: "unauth multibulk count", in: "*11\r\n", err: ErrUnauthMultibulkLen, unaut: true},
	{name: "unauth multibulk count at limit", in: "*10\r\n", unaut: true},
	{name: "unauth invalid count first", in: "*2147483648\r\n", err: ErrInvalidMultibulkLen, unaut: true},
	{name: "unauth bulk length", in: "*2\r\n$4\r\nAUTH\r\n$16385\r\n", err: ErrUnauthBulkLen, unaut: true},
	{name: "unauth bulk length at limit", in: "*2\r\n$4\r\nAUTH\r\n$16384\r\n", unaut: true},
	{name: "unauth negative count skipped", in: "*-1\r\n*1\r\n$4\r\nPING\r\n", cmds: cmds(cmd("PING")), unaut: true},
	{name: "unauth inline has no count limit", in: "ECHO 1 2 3 4 5 6 7 8 9 10 11 12\r\n",
		cmds: cmds(cmd("ECHO", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12")), unaut: true},
}

func parseCase(t testing.TB, c readerCase, chunks []int) parseResult {
	t.Helper()
	r := NewReader(&chunkReader{data: []byte(c.in), chunks: chunks})
	r.Unauthenticated = c.unaut
	return readAll(t, r)
}

func wantResult(c readerCase) parseResult {
	res := parseResult{cmds: c.cmds}
	if c.err != nil {
		res.err = c.err
	}
	return res
}

func TestReaderCases(t *testing.T) {
	for _, c := range readerCases {
		t.Run(c.name, func(t *testing.T) {
			want := wantResult(c)
			if got := parseCase(t, c, nil); !sameResult(got, want) {
				t.Fatalf("one piece:\n got %v\nwant %v", got, want)
			}
			// Byte by byte, and split in two at every boundary (small
			// inputs) or at random places (big ones).
			if got := parseCase(t, c, []int{1}); !sameResult(got, want) {
				t.Fatalf("byte by byte:\n got %v\nwant %v", got, want)
			}
			if len(c.in) <= 4096 {
				for i := 1; i < len(c.in); i++ {
					if got := parseCase(t, c, []int{i, len(c.in)}); !sameResult(got, want) {
						t.Fatalf("split at %d:\n got %v\nwant %v", i, got, want)
					}
				}
				return
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(c.in))))
			for range 20 {
				chunks := []int{rng.IntN(len(c.in)) + 1, rng.IntN(20000) + 1, rng.IntN(7) + 1}
				if got := parseCase(t, c, chunks); !sameResult(got, want) {
					t.Fatalf("chunks %v:\n got %v\nwant %v", chunks, got, want)
				}
			}
		})
	}
}

// TestReaderCasesAgainstRedis replays every case on a real redis-server
// and checks that it agrees: one reply per command we parse, then the
// same protocol error text and a closed connection, or an open one.
func TestReaderCasesAgainstRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server; skipped with -short")
	}
	open := startRedis(t)
	auth := startRedis(t, "--requirepass", "secret")
	// The conversations mostly wait for silence: hold them all at once.
	type outcome struct {
		replies []rawReply
		closed  bool
		err     error
	}
	outcomes := make([]outcome, len(readerCases))
	var wg sync.WaitGroup
	for i, c := range readerCases {
		addr := open
		if c.unaut {
			addr = auth
		}
		wg.Go(func() {
			o := &outcomes[i]
			o.replies, o.closed, o.err = talk(addr, []byte(c.in), 600*time.Millisecond)
		})
	}
	wg.Wait()
	for i, c := range readerCases {
		t.Run(c.name, func(t *testing.T) {
			replies, closed, err := outcomes[i].replies, outcomes[i].closed, outcomes[i].err
			if err != nil {
				t.Fatal(err)
			}
			wantReplies := len(c.cmds)
			if c.err != nil {
				wantReplies++
			}
			if len(replies) != wantReplies || closed != (c.err != nil) {
				t.Fatalf("redis sent %d replies %v, closed=%v; we parse %d commands, error %v",
					len(replies), replies, closed, len(c.cmds), c.err)
			}
			for i, cmd := range c.cmds {
				// The argument an ECHO or PING carries comes back as is.
				if !c.unaut && len(cmd) == 2 && (cmd[0] == "ECHO" || cmd[0] == "PING") && replies[i].text != cmd[1] {
					t.Errorf("reply %d = %v, want %.80q", i, replies[i], cmd[1])
				}
			}
			if c.err != nil {
				last := replies[len(replies)-1]
				// Replies never carry CR or LF inside a line: Redis (and
				// our Writer.Error) turn them into spaces.
				want := strings.NewReplacer("\r", " ", "\n", " ").Replace("ERR " + c.err.Error())
				if last.kind != '-' || last.text != want {
					t.Fatalf("redis replied %v, we would reply -%q", last, want)
				}
			}
		})
	}
}

// TestReaderPipelineSplitEverywhere cuts a pipeline of varied commands into
// three pieces at every pair of boundaries.
func TestReaderPipelineSplitEverywhere(t *testing.T) {
	in := "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n" +
		"GET key\r\n" +
		"*0\r\n\r\n" +
		"ECHO \"a\\x00b\" 'c d'\n" +
		"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n" +
		"*1\r\n$4\r\nPING\r\n"
	want := parseCase(t, readerCase{in: in}, nil)
	if len(want.cmds) != 5 || want.err != nil {
		t.Fatalf("one piece: %v", want)
	}
	for i := 1; i < len(in); i++ {
		for j := 1; i+j < len(in); j++ {
			if got := parseCase(t, readerCase{in: in}, []int{i, j, len(in)}); !sameResult(got, want) {
				t.Fatalf("chunks %d,%d:\n got %v\nwant %v", i, j, got, want)
			}
		}
	}
}

// loopReader returns its data over and over, forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

// TestReaderNoAllocs: once warm, parsing commands allocates nothing, for
// multibulk and for plain inline commands alike.
func TestReaderNoAllocs(t *testing.T) {
	for _, in := range []string{
		"*3\r\n$3\r\nSET\r\n$7\r\nkey:123\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$7\r\nkey:123\r\n",
		"SET key:123 value\r\nGET key:123\r\nMSET a 1 b 2 c 3\n",
	} {
		r := NewReader(&loopReader{data: []byte(in)})
		next := func() {
			for {
				args, ok, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					if len(args) < 2 {
						t.Fatalf("bad command %q", args)
					}
					return
				}
				if err := r.Fill(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 1000 {
			next()
		}
		if n := testing.AllocsPerRun(10000, next); n != 0 {
			t.Errorf("%q: %v allocations per command", in, n)
		}
	}
}

// TestReaderArgsAreCapped: appending to an argument must copy, never
// overwrite the next bytes of the buffer.
func TestReaderArgsAreCapped(t *testing.T) {
	r := NewReader(strings.NewReader("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\nx y z\r\n"))
	if err := r.Fill(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		args, ok, err := r.Next()
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		for i := range args {
			if cap(args[i]) != len(args[i]) {
				t.Fatalf("arg %q has spare capacity %d", args[i], cap(args[i])-len(args[i]))
			}
		}
		_ = append(args[0], '!')
	}
}

// TestReaderBigArgument: a 16 MB argument arriving in small reads parses
// once, and the buffer grows with the bytes received, never past twice
// the command's size, even though the header claims it all at once.
func TestReaderBigArgument(t *testing.T) {
	const size = 16 << 20
	hdr := "*2\r\n$4\r\nECHO\r\n$16777216\r\n"
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	in := append(append([]byte(hdr), payload...), "\r\nPING\r\n"...)
	r := NewReader(&chunkReader{data: in, chunks: []int{4096, 1500, 65536}})
	var got [][]byte
	maxBuf := 0
	for len(got) < 2 {
		args, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if len(args) == 2 {
				if !bytes.Equal(args[1], payload) {
					t.Fatal("payload corrupted")
				}
				got = append(got, args[1][:0])
			} else {
				got = append(got, args[0])
			}
			continue
		}
		if r.Buffered() > 0 && r.Buffered() < len(hdr) {
			// Still in the header: nothing claimed yet.
		}
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
		maxBuf = max(maxBuf, len(r.buf))
	}
	if maxBuf > 2*len(in) {
		t.Fatalf("buffer grew to %d bytes for a %d-byte command", maxBuf, len(in))
	}
	// A client that claims a huge argument and sends a little costs little.
	r = NewReader(&chunkReader{data: []byte("*1\r\n$536870912\r\n" + strings.Repeat("x", 100000))})
	for {
		if _, ok, err := r.Next(); ok || err != nil {
			t.Fatal(ok, err)
		}
		if r.Fill() == io.EOF {
			break
		}
	}
	if len(r.buf) > 4*100000 {
		t.Fatalf("a 100 kB send made the buffer %d bytes", len(r.buf))
	}
}

// TestReaderManyArguments: a command with many arguments arriving in small
// reads keeps its already-parsed arguments valid across buffer moves.
func TestReaderManyArguments(t *testing.T) {
	const n = 50000
	var b bytes.Buffer
	b.WriteString("*50001\r\n$4\r\nMSET\r\n")
	for i := range n {
		s := string(rune('a' + i%26))
		b.WriteString("$1\r\n" + s + "\r\n")
	}
	for _, chunks := range [][]int{nil, {1}, {7, 4096}, {100000}} {
		r := NewReader(&chunkReader{data: b.Bytes(), chunks: chunks})
		for {
			args, ok, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				if len(args) != n+1 || string(args[0]) != "MSET" {
					t.Fatalf("chunks %v: got %d args", chunks, len(args))
				}
				for i, a := range args[1:] {
					if string(a) != string(rune('a'+i%26)) {
						t.Fatalf("chunks %v: arg %d = %q", chunks, i+1, a)
					}
				}
				break
			}
			if err := r.Fill(); err != nil {
				t.Fatalf("chunks %v: %v", chunks, err)
			}
		}
	}
}

// TestReaderErrorIsSticky: after a protocol error the reader keeps
// returning it; it never resynchronises on garbage.
func TestReaderErrorIsSticky(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$-5\r\nPING\r\n"))
	r.Fill()
	for range 3 {
		if _, ok, err := r.Next(); ok || err != ErrInvalidBulkLen {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	}
}

// TestReaderUnauthenticatedChangesBetweenCommands: the limits follow the
// flag as it is when each command starts, as AUTH inside a pipeline
// lifts them for the commands after it.
func TestReaderUnauthenticatedChangesBetweenCommands(t *testing.T) {
	in := "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11)
	r := NewReader(strings.NewReader(in))
	r.Unauthenticated = true
	r.Fill()
	if args, ok, err := r.Next(); !ok || err != nil || string(args[0]) != "AUTH" {
		t.Fatal(args, ok, err)
	}
	r.Unauthenticated = false
	if args, ok, err := r.Next(); !ok || err != nil || len(args) != 11 {
		t.Fatal(args, ok, err)
	}
}

func TestParseInt(t *testing.T) {
	for _, c := range []struct {
		in string
		v  int64
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"123", 123, true},
		{"9223372036854775807", 1<<63 - 1, true}, {"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1a", 0, false}, {"0x1", 0, false},
		{"000000000000000000001", 0, false},
	} {
		v, ok := ParseInt([]byte(c.in))
		if v != c.v || ok != c.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, v, ok, c.v, c.ok)
		}
	}
}

// BenchmarkReaderPipeline parses a pipeline of 16 three-argument commands
// (PFADD key element), as a node reads redis-benchmark -P 16; ns per
// command.
func BenchmarkReaderPipeline(b *testing.B) {
	var batch []byte
	for i := range 16 {
		batch = AppendCommand(batch, [][]byte{[]byte("PFADD"), []byte("hll"), []byte(fmt.Sprintf("el:%d", 10000+i))})
	}
	src := &repeatReader{data: batch}
	r := NewReader(src)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		if err := r.Fill(); err != nil {
			b.Fatal(err)
		}
		for {
			_, ok, err := r.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
		}
	}
}

// repeatReader returns data on every Read.
type repeatReader struct{ data []byte }

func (r *repeatReader) Read(b []byte) (int, error) { return copy(b, r.data), nil }

// TestPending: what Redis's query buffer holds of an incomplete command
// is the argument still arriving (its payload so far), or the partial
// header, or everything between commands.
func TestPending(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"*2\r\n$3\r\nGET\r\n$5\r\nab", 2},           // the payload so far
		{"*2\r\n$3\r\nGET\r\n$70000\r\nabc", 3},      // a long header, the general path
		{"*2\r\n$3\r\nGET\r\n$5", 2},                 // a partial header
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv", 1}, // earlier arguments are out
		{"*2\r\n", 0},
		{"PING", 4},                               // an inline line without its end
		{"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", 2}, // after a whole command
	} {
		r := NewReader(strings.NewReader(tc.in))
		if tc.in != "" {
			if err := r.Fill(); err != nil {
				t.Fatal(err)
			}
		}
		for {
			_, ok, err := r.Next()
			if err != nil {
				t.Fatalf("%q: %v", tc.in, err)
			}
			if !ok {
				break
			}
		}
		if got := r.Pending(); got != tc.want {
			t.Errorf("%q: Pending() = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestPendingAcrossReads: a command of many small arguments arriving in
// reads of every size never shows more pending than its longest argument
// or header: an argument that ended an earlier read incomplete must not
// be counted from once it is whole (a read ending in the next header
// counted every byte since, and closed clients at the query buffer limit).
func TestPendingAcrossReads(t *testing.T) {
	const n = 20000
	cmd := fmt.Appendf(nil, "*%d\r\n$5\r\nRPUSH\r\n$4\r\nbigl\r\n", n+2)
	cmd = append(cmd, bytes.Repeat([]byte("$1\r\na\r\n"), n)...)
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		sizes := make([]int, 1000)
		for i := range sizes {
			sizes[i] = 1 + rng.IntN(64)
		}
		r := NewReader(&chunkReader{data: cmd, chunks: sizes})
		for done := false; !done; {
			if err := r.Fill(); err != nil {
				t.Fatalf("seed %d: the command never completed: %v", seed, err)
			}
			args, ok, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if done = ok; ok {
				if len(args) != n+2 {
					t.Fatalf("seed %d: %d arguments", seed, len(args))
				}
			} else if p := r.Pending(); p > 8 {
				t.Fatalf("seed %d: Pending() = %d with %d bytes buffered; no argument or header is longer than 8", seed, p, r.Buffered())
			}
		}
	}
}

func TestQueryBufOf(t *testing.T) {
	args := [][]byte{[]byte("SET"), make([]byte, 98), []byte("k")}
	if got := QueryBufOf(args); got != 100 {
		t.Errorf("QueryBufOf = %d, want 100 (the longest argument with its CRLF)", got)
	}
}

// TestBigBufferLetGo: once a big command is consumed, the buffer that
// held it is not kept alive by the reader. The arguments of the last
// command stayed in r.args's backing array past a shorter command's, and
// kept a 100 MB SET's buffer until a command of three arguments came.
func TestBigBufferLetGo(t *testing.T) {
	big := strings.Repeat("v", 8<<20)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "\r\n" + "*1\r\n$4\r\nPING\r\n"
	r := NewReader(strings.NewReader(in))
	var args [][]byte
	for args == nil {
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
		a, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			args = a
		}
	}
	if len(args) != 3 || len(args[2]) != len(big) {
		t.Fatalf("got %d args", len(args))
	}
	gone := weak.Make(&r.buf[0])
	args = nil
	// The next command, shorter, read into a fresh buffer.
	for {
		a, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if string(a[0]) != "PING" {
				t.Fatalf("next command %q", a[0])
			}
			break
		}
		if err := r.Fill(); err != nil {
			t.Fatal(err)
		}
	}
	r.Space() // as a read loop does before its next read
	runtime.GC()
	if gone.Value() != nil {
		t.Error("the big command's buffer is still reachable from the reader")
	}
	runtime.KeepAlive(r) // the reader is alive while it is checked
}
