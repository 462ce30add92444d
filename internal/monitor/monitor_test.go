package monitor

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/slots"
)

func TestAppendLine(t *testing.T) {
	set := slots.Lookup([]byte("set"))
	now := time.Unix(1700000000, 4500) // 4 µs: padded to six digits
	got := string(AppendLine(nil, "127.0.0.1:5000", set, [][]byte{[]byte("SET"), []byte("k"), []byte("a\"\\\n\r\t\a\b\x00\x7f é")}, now))
	want := `+1700000000.000004 [0 127.0.0.1:5000] "SET" "k" "a\"\\\n\r\t\a\b\x00\x7f \xc3\xa9"` + "\r\n"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	auth := slots.Lookup([]byte("auth"))
	if got := string(AppendLine(nil, "a", auth, [][]byte{[]byte("AUTH"), []byte("pw")}, now)); !strings.HasSuffix(got, `"AUTH" "(redacted)"`+"\r\n") {
		t.Errorf("AUTH line %q", got)
	}
}

// TestFeed: lines reach every monitor but the one that ran the command;
// admin commands are never shown; a monitor past its limit is closed.
func TestFeed(t *testing.T) {
	var h Hub
	a, aPeer := net.Pipe()
	b, bPeer := net.Pipe()
	defer aPeer.Close()
	defer bPeer.Close()
	h.Add(a)
	h.Add(b)
	if h.Add(a) {
		t.Error("a second Add of a monitor succeeded")
	}
	get := slots.Lookup([]byte("get"))
	cfg := slots.LookupSub(slots.Lookup([]byte("config")), []byte("get"))
	now := time.Unix(1, 0)
	h.Feed(b, "x:1", cfg, [][]byte{[]byte("CONFIG"), []byte("GET"), []byte("*")}, now)
	h.Feed(b, "x:1", get, [][]byte{[]byte("GET"), []byte("k")}, now)
	line, err := bufio.NewReader(aPeer).ReadString('\n')
	if err != nil || line != "+1.000000 [0 x:1] \"GET\" \"k\"\r\n" {
		t.Errorf("monitor a read %q, %v", line, err)
	}
	bPeer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _ := bPeer.Read(make([]byte, 1)); n != 0 {
		t.Error("the monitor that ran the command got its line from Feed")
	}
	h.Remove(b)

	// Over the limit: nobody reads a, so its lines pile up.
	h.Limit = 100
	var overflowed string
	h.OnOverflow = func(addr string, _ int) { overflowed = addr }
	for range 10 {
		h.Feed(nil, "x:1", get, [][]byte{[]byte("GET"), []byte("key-key-key")}, now)
	}
	if overflowed == "" {
		t.Error("a monitor 10 lines behind a 100-byte limit was not closed")
	}
	h.Remove(a)
	if h.Active() {
		t.Error("Active after every monitor was removed")
	}
}
