package clientpause

import (
	"math"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
)

func args(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}

// TestParsePause: CLIENT PAUSE's arguments, read in Redis 7.0's order.
func TestParsePause(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		args []string
		end  int64
		mode Mode
		msg  string
	}{
		{[]string{"CLIENT", "PAUSE", "100"}, now + 100, All, ""},
		{[]string{"CLIENT", "PAUSE", "100", "write"}, now + 100, Write, ""},
		{[]string{"CLIENT", "PAUSE", "100", "ALL"}, now + 100, All, ""},
		{[]string{"CLIENT", "PAUSE", "100", "WRITE\x00x"}, now + 100, Write, ""},               // strcasecmp stops at NUL
		{[]string{"CLIENT", "PAUSE", "0"}, 0, All, ""},                                         // ends at once
		{[]string{"CLIENT", "PAUSE", "9223372036854775807"}, math.MinInt64 + now - 1, All, ""}, // wraps, as in Redis
		{[]string{"CLIENT", "PAUSE", "x", "y"}, 0, None, resp.ErrPauseMode},
		{[]string{"CLIENT", "PAUSE", "x"}, 0, None, resp.ErrTimeoutNotInt},
		{[]string{"CLIENT", "PAUSE", "1.5"}, 0, None, resp.ErrTimeoutNotInt},
		{[]string{"CLIENT", "PAUSE", "-1"}, 0, None, resp.ErrTimeoutNegative},
		{[]string{"CLIENT", "pause", "1", "ALL", "x"}, 0, None,
			"ERR unknown subcommand or wrong number of arguments for 'pause'. Try CLIENT HELP."},
	} {
		end, mode, msg := ParsePause(args(tc.args...), now)
		if msg != tc.msg || (msg == "" && (end != tc.end || mode != tc.mode)) {
			t.Errorf("%q: end %d mode %d %q, want %d %d %q", tc.args, end, mode, msg, tc.end, tc.mode, tc.msg)
		}
	}
}

// TestMerge: a second pause keeps the stricter mode and the later end; a
// pause that has run out is replaced, not merged.
func TestMerge(t *testing.T) {
	var p Pause
	p.Set(200, All, 100)
	p.Set(150, Write, 100)
	if !p.MayHold(false) || p.endMs != 200 {
		t.Fatalf("ALL to 200 then WRITE to 150: mode %d end %d, want ALL to 200", p.mode.Load(), p.endMs)
	}
	p.Set(300, Write, 250) // the ALL pause ran out at 200
	if p.MayHold(false) || !p.MayHold(true) || p.endMs != 300 {
		t.Fatalf("after the ALL pause ran out, WRITE to 300: mode %d end %d", p.mode.Load(), p.endMs)
	}
	p.Lift()
	if p.MayHold(true) {
		t.Fatal("lifted: still holds writes")
	}
}

// TestWait: a held command waits for Lift or for the end, a command the
// mode does not hold does not wait, and a killed client stops waiting.
func TestWait(t *testing.T) {
	clock := func() int64 { return time.Now().UnixMilli() }
	var p Pause
	p.Set(clock()+60_000, Write, clock())
	if !p.Wait(false, clock, nil, nil, nil) {
		t.Fatal("a read under a WRITE pause did not go on")
	}
	done := make(chan bool)
	go func() { done <- p.Wait(true, clock, nil, nil, nil) }()
	select {
	case <-done:
		t.Fatal("a write under a WRITE pause went on")
	case <-time.After(50 * time.Millisecond):
	}
	p.Lift()
	if !<-done {
		t.Fatal("Wait after Lift: false")
	}

	p.Set(clock()+30, All, clock())
	start := time.Now()
	if !p.Wait(false, clock, nil, nil, nil) || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("ALL for 30 ms: waited %v", time.Since(start))
	}
	if p.MayHold(true) {
		t.Fatal("a pause that ran out still holds")
	}

	p.Set(clock()+60_000, All, clock())
	gone := make(chan struct{})
	go func() { done <- p.Wait(false, clock, gone, nil, nil) }()
	close(gone)
	if <-done {
		t.Fatal("Wait with gone closed: true")
	}
	p.Lift()
}

// TestPaused: a pause of either mode holds until its end, not at it, and
// not after CLIENT UNPAUSE.
func TestPaused(t *testing.T) {
	var p Pause
	if p.Paused(100) {
		t.Fatal("zero Pause reports paused")
	}
	p.Set(200, Write, 100)
	for _, tc := range []struct {
		now  int64
		want bool
	}{{150, true}, {199, true}, {200, false}, {250, false}} {
		if got := p.Paused(tc.now); got != tc.want {
			t.Errorf("WRITE pause to 200: Paused(%d) = %v, want %v", tc.now, got, tc.want)
		}
	}
	p.Set(400, All, 300)
	if !p.Paused(350) {
		t.Error("ALL pause to 400: not paused at 350")
	}
	p.Lift()
	if p.Paused(350) {
		t.Error("paused after Lift")
	}
}
