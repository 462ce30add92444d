package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLogBridge: memberlist's "[LEVEL] text" lines become slog records
// of that level; a socket error from the race with Shutdown is debug.
func TestLogBridge(t *testing.T) {
	tests := []struct{ line, want string }{
		{"[ERR] memberlist: Failed to send gossip to 1.2.3.4:7946: write udp: use of closed network connection", "level=DEBUG"},
		{"[ERR] memberlist: Failed to send gossip to 1.2.3.4:7946: no route to host", "level=WARN"},
		{"[ERR] memberlist: Failed to send UDP ping: write udp 10.0.0.2:7946->10.0.0.3:7946: sendto: network is unreachable", "level=WARN"},
		{"[ERR] memberlist: msg type (9) not supported from=127.0.0.1:4000", "level=ERROR"},
		{"[WARN] memberlist: Was able to connect to x over TCP but UDP probes failed", "level=WARN"},
		{"[WARN] memberlist: Refuting a dead message (from: 0123abcd)", "level=INFO"},
		{"[WARN] memberlist: Refuting a suspect message (from: 0123abcd)", "level=WARN"},
		{"[DEBUG] memberlist: Stream connection", "level=DEBUG"},
		{"no prefix", "level=INFO"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		l := newMemberlistLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
		l.Print(tt.line)
		if !strings.Contains(out.String(), tt.want) || strings.Contains(out.String(), "[ERR]") {
			t.Errorf("%q logged as %q, want %s", tt.line, out.String(), tt.want)
		}
	}
}

// TestLogBridgeFlood: a warning or error repeated packet after packet
// (junk on the gossip port, a member with another gossip key) is logged
// floodBurst times per floodWindow, whatever its sender; the next one
// logged after the window counts those left out; key mismatches carry a
// hint; debug lines are never held back.
func TestLogBridgeFlood(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	b := &logBridge{
		log:    slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})),
		now:    func() time.Time { return now },
		floods: map[string]*flood{},
	}
	l := log.New(b, "", 0)
	for i := range 50 {
		l.Printf("[ERR] memberlist: failed to receive: remote state is encrypted and encryption is not configured from=127.0.0.1:%d", 40000+i)
		l.Printf("[ERR] memberlist: msg type (%d) not supported from=127.0.0.1:%d", i%7, 40000+i)
		l.Printf("[DEBUG] memberlist: Stream connection from=127.0.0.1:%d", 40000+i)
	}
	count := func(s string) int { return strings.Count(out.String(), s) }
	if n := count("encryption is not configured"); n != floodBurst {
		t.Errorf("key mismatch lines logged %d times in one window, want %d:\n%s", n, floodBurst, out.String())
	}
	if n := count("not supported"); n != floodBurst {
		t.Errorf("junk lines logged %d times in one window, want %d", n, floodBurst)
	}
	if n := count("Stream connection"); n != 50 {
		t.Errorf("debug lines logged %d times, want all 50", n)
	}
	if n := count("hint=\"every member needs the same --gossip-key (or none)\""); n != floodBurst {
		t.Errorf("key mismatch hint logged %d times, want %d", n, floodBurst)
	}
	out.Reset()
	now = now.Add(floodWindow)
	l.Printf("[ERR] memberlist: failed to receive: remote state is encrypted and encryption is not configured from=127.0.0.1:1")
	if !strings.Contains(out.String(), "suppressed_similar=47") {
		t.Errorf("first line of the next window does not count the 47 left out: %s", out.String())
	}
}

// TestLogBridgeUnreachable: while a partition lasts, memberlist reports
// the unreachable peers from each of its loops in differently worded
// lines; they are warnings and share one flood budget.
func TestLogBridgeUnreachable(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	b := &logBridge{
		log:    slog.New(slog.NewTextHandler(&out, nil)),
		now:    func() time.Time { return now },
		floods: map[string]*flood{},
	}
	l := log.New(b, "", 0)
	for i := range 20 {
		peer := fmt.Sprintf("10.0.0.%d:7946", 3+i%2)
		l.Printf("[ERR] memberlist: Failed to send UDP ping: write udp 10.0.0.2:7946->%s: sendto: network is unreachable", peer)
		l.Printf("[ERR] memberlist: Failed to send indirect UDP ping: write udp 10.0.0.2:7946->%s: sendto: network is unreachable", peer)
		l.Printf("[ERR] memberlist: Failed to send gossip to %s: write udp 10.0.0.2:7946->%s: sendto: network is unreachable", peer, peer)
		l.Printf("[ERR] memberlist: Push/Pull with node-%d failed: dial tcp %s: connect: network is unreachable", i, peer)
	}
	if n := strings.Count(out.String(), "\n"); n != floodBurst {
		t.Errorf("%d lines for 80 unreachable reports in one window, want %d:\n%s", n, floodBurst, out.String())
	}
	if strings.Contains(out.String(), "level=ERROR") {
		t.Errorf("unreachable peers logged as errors:\n%s", out.String())
	}
}

// TestJoinFailureWarnings: failed joins are debug while members may still
// be starting, then a warning every joinWarnEvery; a gossip key mismatch
// warns at once; a join that succeeds after a warning says so.
func TestJoinFailureWarnings(t *testing.T) {
	var out bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var f joinFailures
	start := time.Unix(1000, 0)
	refused := errors.New("dial tcp 127.0.0.1:7946: connect: connection refused")
	for s := time.Duration(0); s < joinWarnAfter; s += time.Second {
		f.note(lg, start.Add(s), []string{"a"}, 0, refused, true)
	}
	if out.Len() != 0 {
		t.Fatalf("warned before joinWarnAfter: %s", out.String())
	}
	f.note(lg, start.Add(joinWarnAfter), []string{"a"}, 0, refused, true)
	f.note(lg, start.Add(joinWarnAfter+time.Second), []string{"a"}, 0, refused, true)
	if n := strings.Count(out.String(), "cannot join any member"); n != 1 {
		t.Fatalf("%d warnings once joins had failed for joinWarnAfter, want 1: %s", n, out.String())
	}
	f.note(lg, start.Add(joinWarnAfter+joinWarnEvery), []string{"a"}, 0, refused, true)
	if n := strings.Count(out.String(), "cannot join any member"); n != 2 {
		t.Fatalf("%d warnings after joinWarnEvery more, want 2", n)
	}
	f.note(lg, start.Add(time.Hour), []string{"a"}, 1, nil, true)
	if !strings.Contains(out.String(), "msg=\"cluster: joined\"") {
		t.Fatalf("no line for the join that ended the failures: %s", out.String())
	}

	out.Reset()
	f.note(lg, start.Add(2*time.Hour), []string{"a"}, 0, errors.New("1 error occurred:\n\t* Failed to join 127.0.0.1:7946: encryption is configured but remote state is not encrypted"), true)
	if !strings.Contains(out.String(), "cannot join any member") || !strings.Contains(out.String(), "--gossip-key") {
		t.Fatalf("a gossip key mismatch did not warn at once with a hint: %s", out.String())
	}

	// A member with others alive retries dead members' addresses: no
	// warning, however long they fail.
	out.Reset()
	f = joinFailures{}
	for s := time.Duration(0); s < 5*joinWarnEvery; s += 10 * time.Second {
		f.note(lg, start.Add(s), []string{"gone"}, 0, refused, false)
	}
	if out.Len() != 0 {
		t.Fatalf("warned about dead members while in the cluster: %s", out.String())
	}

	// A failure long after the last one starts a new run: failing_for
	// counts from it, and the warning waits joinWarnAfter again.
	out.Reset()
	f = joinFailures{}
	f.note(lg, start, []string{"a"}, 0, refused, true)
	later := start.Add(time.Hour)
	f.note(lg, later, []string{"a"}, 0, refused, true)
	if out.Len() != 0 {
		t.Fatalf("the first failure of a new run warned: %s", out.String())
	}
	f.note(lg, later.Add(joinWarnAfter), []string{"a"}, 0, refused, true)
	if !strings.Contains(out.String(), "failing_for=10s") {
		t.Fatalf("the new run's warning does not count from its first failure: %s", out.String())
	}

	// The first join is logged, after failures too short to warn about
	// (a member started before the others) or none; later ones are not.
	out.Reset()
	f = joinFailures{}
	f.note(lg, start, []string{"a"}, 0, refused, true)
	f.note(lg, start.Add(time.Second), []string{"a"}, 1, nil, true)
	if !strings.Contains(out.String(), "msg=\"cluster: joined\"") || !strings.Contains(out.String(), "after_failing_for=1s") {
		t.Fatalf("the first join, a second after a failure, logged %q", out.String())
	}
	out.Reset()
	f.note(lg, start.Add(time.Minute), []string{"a"}, 1, nil, false)
	f = joinFailures{}
	f.note(lg, start, []string{"a"}, 2, nil, true)
	if n := strings.Count(out.String(), "cluster: joined"); n != 1 {
		t.Fatalf("a later join and a first join at once logged %d lines, want the first's: %q", n, out.String())
	}
}
