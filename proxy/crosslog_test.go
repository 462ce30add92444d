package proxy_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// TestCrossSlotLog: each CROSSSLOT refusal is logged with the client, its
// name, the command and every key with its slot, so the call to fix can
// be found; a client refused in a loop gets a few lines a second and a
// count of the rest, not one line per refusal.
func TestCrossSlotLog(t *testing.T) {
	var log proxy.LogBuffer
	cl := proxytest.Start(t, 3, proxy.Options{Logger: log.Logger()})
	c := dial(t, cl.Addr, 2)
	do(t, c, "CLIENT", "SETNAME", "billing-worker")

	if v := do(t, c, "MGET", "a", "b"); !strings.HasPrefix(v.Text(), "CROSSSLOT") {
		t.Fatalf("MGET a b: %v", v)
	}
	line := logLine(t, &log, `command=mget`)
	for _, want := range []string{`msg="CROSSSLOT: keys in more than one slot"`, `name=billing-worker`,
		`keys="\"a\"@15495 \"b\"@3300"`, `client=127.0.0.1:`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}

	// A Redis command shardgate does not serve is refused and logged
	// as a served one.
	if v := do(t, c, "SUNIONSTORE", "a", "b"); !strings.HasPrefix(v.Text(), "CROSSSLOT") {
		t.Fatalf("SUNIONSTORE a b: %v", v)
	}
	line = logLine(t, &log, `command=sunionstore`)
	if !strings.Contains(line, `keys="\"a\"@15495 \"b\"@3300"`) {
		t.Errorf("log line %q lacks the keys", line)
	}

	// A transaction whose commands are each in one slot, but not the same.
	do(t, c, "MULTI")
	do(t, c, "SET", "a", "1")
	do(t, c, "INCR", "b")
	if v := do(t, c, "EXEC"); !strings.HasPrefix(v.Text(), "CROSSSLOT") {
		t.Fatalf("EXEC: %v", v)
	}
	line = logLine(t, &log, `command=exec`)
	for _, want := range []string{`msg="CROSSSLOT: transaction in more than one slot"`, "slot=15495", "queued=incr", "queued_slot=3300"} {
		if !strings.Contains(line, want) {
			t.Errorf("log line %q lacks %s", line, want)
		}
	}

	// Many keys: the first few are shown, the rest counted; long keys cut.
	long := strings.Repeat("k", 100)
	args := []string{"DEL", long}
	for i := range 20 {
		args = append(args, fmt.Sprint("key", i))
	}
	do(t, c, args...)
	line = logLine(t, &log, `command=del`)
	if !strings.Contains(line, `(+13 more)`) || strings.Contains(line, long) || !strings.Contains(line, strings.Repeat("k", 64)+`\"...@`) {
		t.Errorf("DEL of 21 keys logged as %q", line)
	}

	// A loop of refusals.
	before := strings.Count(log.String(), "CROSSSLOT:")
	lines := strings.Count(log.String(), "\n")
	for range 200 {
		do(t, c, "EXISTS", "a", "b")
	}
	written := strings.Count(log.String(), "CROSSSLOT:") - before
	if written < 1 || written > 30 {
		t.Errorf("200 refusals in a loop wrote %d log lines, want a few per second", written)
	}
	// The next line, a second later, counts those left out.
	time.Sleep(1100 * time.Millisecond)
	do(t, c, "TOUCH", "a", "b")
	logLine(t, &log, `command=touch`)
	// Every refusal is either a line or counted in a later one's
	// suppressed= (a slow run may cross into a new second mid-loop).
	var counted int
	for _, l := range strings.Split(log.String(), "\n")[lines:] {
		if _, after, ok := strings.Cut(l, "suppressed="); ok {
			n, _ := strconv.Atoi(after)
			counted += n
		}
	}
	if counted != 200-written {
		t.Errorf("%d lines written for 201 refusals, the rest counted as %d suppressed", written+1, counted)
	}
}

// logLine returns the last log line containing s, failing if none does.
func logLine(t *testing.T, log *proxy.LogBuffer, s string) string {
	t.Helper()
	lines := strings.Split(log.String(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	t.Fatalf("no log line with %s in:\n%s", s, log.String())
	return ""
}
