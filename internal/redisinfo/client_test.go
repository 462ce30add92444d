package redisinfo

import (
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		monitor, multi, blocked, dirty, closing, readonly, noEvict bool
		want                                                       string
	}{
		{want: "N"},
		{readonly: true, want: "r"},
		{readonly: true, noEvict: true, want: "re"},
		{multi: true, dirty: true, readonly: true, want: "xdr"},
		{blocked: true, closing: true, noEvict: true, want: "bce"},
		{monitor: true, closing: true, want: "Oc"},
	}
	for _, tt := range tests {
		if got := Flags(tt.monitor, tt.multi, tt.blocked, tt.dirty, tt.closing, tt.readonly, tt.noEvict); got != tt.want {
			t.Errorf("Flags(%+v) = %q, want %q", tt, got, tt.want)
		}
	}
}

// TestLineSeconds: age and idle are differences of whole Unix seconds, as
// Redis's (server.unixtime - ctime), not elapsed time rounded down.
func TestLineSeconds(t *testing.T) {
	base := time.Unix(1000, 0)
	tests := []struct {
		created, last, now time.Duration // after base
		age, idle          int64
	}{
		{created: 900 * time.Millisecond, last: 900 * time.Millisecond, now: 1100 * time.Millisecond, age: 1, idle: 1},
		{created: 100 * time.Millisecond, last: 200 * time.Millisecond, now: 900 * time.Millisecond, age: 0, idle: 0},
		{created: 0, last: 2500 * time.Millisecond, now: 3 * time.Second, age: 3, idle: 1},
	}
	for _, tt := range tests {
		l := NewLine(base.Add(tt.now), 1, "a", "b", 3, base.Add(tt.created), base.Add(tt.last).UnixNano(), nil)
		if l.Age != tt.age || l.Idle != tt.idle {
			t.Errorf("%+v: age %d idle %d", tt, l.Age, l.Idle)
		}
	}
}

// TestKillFilterAddrAsCString: Redis compares CLIENT KILL's addresses with
// strcmp, so an address followed by a NUL and anything still names the
// client, in the old form and with ADDR and LADDR.
func TestKillFilterAddrAsCString(t *testing.T) {
	const raddr, laddr = "127.0.0.1:5000", "127.0.0.1:6379"
	for _, tc := range []struct {
		args  []string
		match bool
	}{
		{[]string{"CLIENT", "KILL", raddr + "\x00z"}, true},
		{[]string{"CLIENT", "KILL", "ADDR", raddr + "\x00", "SKIPME", "no"}, true},
		{[]string{"CLIENT", "KILL", "LADDR", laddr + "\x00z", "SKIPME", "no"}, true},
		{[]string{"CLIENT", "KILL", "addr\x00", raddr}, true},
		{[]string{"CLIENT", "KILL", "ADDR", "127.0.0.1:500\x000"}, false},
		{[]string{"CLIENT", "KILL", "\x00" + raddr}, false},
	} {
		var args [][]byte
		for _, a := range tc.args {
			args = append(args, []byte(a))
		}
		f, errMsg := ParseKill(args)
		if errMsg != "" {
			t.Fatalf("%q: %s", tc.args, errMsg)
		}
		if got := f.Match(7, raddr, laddr, Normal, false); got != tc.match {
			t.Errorf("%q matches %s: %v, want %v", tc.args, raddr, got, tc.match)
		}
	}
}
