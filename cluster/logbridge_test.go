package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLogBridge: memberlist's "[LEVEL] text" lines become slog records
// of that level; a socket error from the race with Shutdown is debug.
func TestLogBridge(t *testing.T) {
	tests := []struct{ line, want string }{
		{"[ERR] memberlist: Failed to send gossip to 1.2.3.4:7946: write udp: use of closed network connection", "level=DEBUG"},
		{"[ERR] memberlist: Failed to send gossip to 1.2.3.4:7946: no route to host", "level=ERROR"},
		{"[WARN] memberlist: Was able to connect to x over TCP but UDP probes failed", "level=WARN"},
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
