package difftest

import (
	"fmt"
	"regexp"
	"testing"
)

// MonitorScenario runs the same commands on p's two servers while a
// connection in protocol proto monitors each, and compares the lines the
// monitors get (times and client addresses blanked): which commands are
// shown (not admin ones, not those refused before they run; each command
// of a transaction before EXEC; a blocking pop as it starts), how
// arguments are quoted and redacted; and what a monitoring connection may
// still do itself.
func MonitorScenario(t *testing.T, p *Pair, proto int) {
	t.Helper()
	m := p.NewConnProto(t, proto)
	c := p.NewConnProto(t, proto)
	m.Do(t, "MONITOR")
	shown := 0
	for _, st := range []struct {
		args  []string
		shown bool
	}{
		{[]string{"SET", "{k}a", "v\x00\"\\\n\r\t\a\b\xff é"}, true},
		{[]string{"GET", "{k}a"}, true},
		{[]string{"GET"}, false},                  // arity: not run
		{[]string{"NOSUCH", "x"}, false},          // unknown
		{[]string{"MGET", "{k}a", "{j}b"}, false}, // CROSSSLOT
		{[]string{"LPUSH", "{k}a", "x"}, true},    // WRONGTYPE: run
		{[]string{"AUTH", "pw"}, true},            // redacted
		{[]string{"AUTH", "a", "b", "c"}, true},   // a syntax error: shown as sent
		{[]string{"HELLO", "3", "AUTH", "default", "pw"}, true},
		{[]string{"HELLO", "3", "auth\x00z", "default", "pw"}, true}, // strcasecmp: redacted too
		{[]string{"HELLO", "9"}, true},
		{[]string{"CONFIG", "GET", "maxmemory"}, false}, // admin
		{[]string{"CLIENT", "LIST"}, false},             // admin
		{[]string{"CLIENT", "SETNAME", "app"}, true},
		{[]string{"CLIENT", "GETNAME"}, true},
		{[]string{"MULTI"}, true},
		{[]string{"INCR", "{k}n"}, true},
		{[]string{"SET", "{k}m", "1"}, true},
		{[]string{"EXEC"}, true},
		{[]string{"MULTI"}, true},
		{[]string{"INCR", "{k}n"}, false}, // queued, then discarded
		{[]string{"DISCARD"}, true},
		{[]string{"MULTI"}, true},
		{[]string{"GET", "{k}a"}, false},
		{[]string{"GET", "{j}b"}, false},
		{[]string{"EXEC"}, false}, // CROSSSLOT: refused before it runs
		{[]string{"MULTI"}, true},
		{[]string{"EXEC", "x"}, true}, // arity: aborted, and shown as Redis's execCommandAbort shows it
		{[]string{"BLPOP", "{k}q", "0.01"}, true},
		{[]string{"XADD", "{k}s", "1-1", "f", "1"}, true},
		{[]string{"SLOWLOG", "LEN"}, false}, // admin
		{[]string{"SELECT", "0"}, true},
		{[]string{"QUIT"}, true},
	} {
		a, b := c.Both(t, st.args...)
		if st.shown {
			shown++
		}
		if st.args[0] == "HELLO" || st.args[0] == "CLIENT" && st.args[1] == "LIST" || st.args[0] == "SLOWLOG" {
			continue // ids, addresses and earlier tests' slow commands differ
		}
		c.Compare(t, st.args, a, b)
	}
	CompareMonitorLines(t, m, shown)

	// The monitor itself: commands that touch no data run, and their
	// lines follow their replies; data commands are refused.
	m.Do(t, "PING")
	CompareMonitorLines(t, m, 1)
	m.Do(t, "GET", "{k}a")
	m.Do(t, "SET", "{k}a", "1")
	// A second MONITOR is ignored, without a reply: the next reply is
	// ECHO's.
	m.Redis.Send([]byte("MONITOR"))
	m.Node.Send([]byte("MONITOR"))
	m.Do(t, "ECHO", "x")
	CompareMonitorLines(t, m, 1)
	// A blocking pop is shown as it starts to wait, before the push that
	// serves it.
	b := p.NewConnProto(t, proto)
	if proto == 3 {
		CompareMonitorLines(t, m, 1) // b's HELLO 3
	}
	b.Redis.Send([]byte("BLPOP"), []byte("{k}w"), []byte("0"))
	b.Node.Send([]byte("BLPOP"), []byte("{k}w"), []byte("0"))
	CompareMonitorLines(t, m, 1)
	c2 := p.NewConnProto(t, 2)
	c2.Do(t, "RPUSH", "{k}w", "x")
	ra, _ := b.Redis.Receive()
	rb, _ := b.Node.Receive()
	b.Compare(t, []string{"BLPOP", "{k}w", "0"}, ra, rb)
	CompareMonitorLines(t, m, 1) // the RPUSH
	// RESET ends monitoring.
	m.Do(t, "RESET")
	m.Do(t, "GET", "{k}a")

	// Commands pipelined after MONITOR are a monitor's.
	m2 := p.NewConnProto(t, proto)
	for _, conn := range []*Conn{m2.Redis, m2.Node} {
		conn.Send([]byte("MONITOR"))
		conn.Send([]byte("GET"), []byte("{k}a"))
		conn.Send([]byte("PING"))
	}
	for _, want := range []string{"MONITOR", "GET", "PING"} {
		a, errA := m2.Redis.Receive()
		b, errB := m2.Node.Receive()
		if errA != nil || errB != nil {
			t.Fatalf("pipelined after MONITOR, %s: %v %v", want, errA, errB)
		}
		m2.Compare(t, []string{want, "(pipelined after MONITOR)"}, a, b)
	}
	CompareMonitorLines(t, m2, 1) // its PING

	// In one write: CLIENT REPLY SKIP silences MONITOR's OK; each of
	// the monitor's own commands is followed by its line, not the
	// batch's lines by the batch's replies; RESET ends the lines, so
	// none reaches the reply of a later command.
	m3 := p.NewConnProto(t, proto)
	var batch []byte
	cmds := [][]string{{"CLIENT", "REPLY", "SKIP"}, {"MONITOR"}, {"PING"}, {"ECHO", "x"}, {"RESET"}, {"GET", "{k}a"}}
	for _, cmd := range cmds {
		batch = fmt.Appendf(batch, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			batch = fmt.Appendf(batch, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	for _, conn := range []*Conn{m3.Redis, m3.Node} {
		if err := conn.WriteRaw(batch); err != nil {
			t.Fatal(err)
		}
	}
	// PONG, PING's line, x, ECHO's line, RESET, GET's value.
	for i := range 6 {
		a, errA := m3.Redis.Receive()
		b, errB := m3.Node.Receive()
		if errA != nil || errB != nil {
			t.Fatalf("pipelined monitor reply %d: redis %v (%v), server %v (%v)", i, a, errA, b, errB)
		}
		for _, v := range []*Value{&a, &b} {
			if v.Kind == SimpleString {
				v.Str = monitorHead.ReplaceAll(v.Str, []byte("T [0 ADDR] "))
			}
		}
		m3.Compare(t, []string{"(pipelined monitor reply)"}, a, b)
	}
	m3.Do(t, "PING") // nothing left over before its reply
}

// monitorHead is the per-server part of a monitor line: time and address.
var monitorHead = regexp.MustCompile(`^\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] `)

// CompareMonitorLines reads n lines from each server's monitor and
// compares them, times and addresses blanked once their form is checked.
func CompareMonitorLines(t *testing.T, m *ConnPair, n int) {
	t.Helper()
	for i := range n {
		a, errA := m.Redis.Receive()
		b, errB := m.Node.Receive()
		if errA != nil || errB != nil {
			t.Fatalf("monitor line %d: redis %v (%v), server %v (%v)", i, a, errA, b, errB)
		}
		for _, v := range []*Value{&a, &b} {
			if v.Kind != SimpleString || !monitorHead.Match(v.Str) {
				t.Fatalf("monitor line %d: %s", i, v)
			}
			v.Str = monitorHead.ReplaceAll(v.Str, []byte("T [0 ADDR] "))
		}
		m.Compare(t, []string{"(monitor line)"}, a, b)
	}
}
