package cluster

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// logBridge turns memberlist's "[LEVEL] memberlist: text" lines into slog
// records, and keeps a flood of one warning or error from drowning the
// log: memberlist logs one line per bad packet, so a member with the
// wrong --gossip-key, or anything sending junk to the gossip port, would
// otherwise write an error line for every packet it sends.
type logBridge struct {
	log *slog.Logger
	now func() time.Time

	mu     sync.Mutex
	floods map[string]*flood
}

// flood is one kind of line's count in its current window.
type flood struct {
	start      time.Time
	logged     int
	suppressed int
}

const (
	// floodWindow and floodBurst: at most floodBurst lines of one kind
	// (debug excepted) are logged per floodWindow; the next one logged
	// after the window says how many were left out.
	floodWindow = 30 * time.Second
	floodBurst  = 3
	// floodKinds caps the kinds remembered; past it the memory starts
	// over (lines with ever-new text then pass unlimited, as before).
	floodKinds = 256
)

func newMemberlistLogger(l *slog.Logger) *log.Logger {
	return log.New(&logBridge{log: l, now: time.Now, floods: map[string]*flood{}}, "", 0)
}

func (b *logBridge) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	for _, lv := range []struct {
		prefix string
		level  slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}} {
		if rest, ok := strings.CutPrefix(line, lv.prefix); ok {
			line, level = strings.TrimSpace(rest), lv.level
			break
		}
	}
	if level > slog.LevelDebug && strings.Contains(line, "use of closed network connection") {
		// memberlist's gossip and probe loops race its Shutdown closing
		// the sockets: not a fault worth an operator's attention.
		level = slog.LevelDebug
	}
	if level == slog.LevelWarn && strings.Contains(line, "Refuting a dead message") {
		// What a member restarted under its id says first: the others
		// still hold its old incarnation's death. Routine.
		level = slog.LevelInfo
	}
	kind := floodKind(line)
	if cause := networkCause(line); cause != "" && level >= slog.LevelWarn {
		// A peer out of reach: failure detection's business, and no
		// fault of this member. memberlist logs it from every loop that
		// sends (pings, indirect pings, gossip, push-pull), several
		// lines a second while a partition lasts; they share one
		// budget.
		level, kind = slog.LevelWarn, "network: "+cause
	}
	var attrs []any
	if level >= slog.LevelWarn {
		n, ok := b.admit(kind)
		if !ok {
			return len(p), nil
		}
		if n > 0 {
			attrs = append(attrs, "suppressed_similar", n)
		}
		if isKeyMismatch(line) {
			attrs = append(attrs, "hint", "every member needs the same --gossip-key (or none)")
		}
	}
	b.log.Log(context.Background(), level, line, attrs...)
	return len(p), nil
}

// admit reports whether a line of kind may be logged now and how many
// lines of that kind were left out since the last one logged.
func (b *logBridge) admit(kind string) (suppressed int, ok bool) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.floods[kind]
	if f == nil {
		if len(b.floods) >= floodKinds {
			clear(b.floods)
		}
		f = &flood{start: now}
		b.floods[kind] = f
	}
	if now.Sub(f.start) >= floodWindow {
		f.start, f.logged = now, 0
	}
	if f.logged >= floodBurst {
		f.suppressed++
		return 0, false
	}
	f.logged++
	suppressed, f.suppressed = f.suppressed, 0
	return suppressed, true
}

// floodKind is a line without the parts that change from one packet to
// the next: the sender's address (memberlist ends such lines with
// "from=host:port") and numbers.
func floodKind(line string) string {
	if i := strings.Index(line, " from="); i >= 0 {
		line = line[:i]
	}
	return strings.Map(func(r rune) rune {
		if '0' <= r && r <= '9' {
			return '#'
		}
		return r
	}, line)
}

// networkCause is the network failure a line reports ("" if none).
func networkCause(s string) string {
	for _, c := range []string{"network is unreachable", "no route to host", "connection refused", "i/o timeout", "host is down"} {
		if strings.Contains(s, c) {
			return c
		}
	}
	return ""
}

// isKeyMismatch recognizes memberlist's complaints about members that
// disagree on gossip encryption.
func isKeyMismatch(s string) bool {
	return strings.Contains(s, "encryption is not configured") ||
		strings.Contains(s, "remote state is not encrypted") ||
		strings.Contains(s, "No installed keys could decrypt") ||
		strings.Contains(s, "failed to decrypt")
}
