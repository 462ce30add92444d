// Package slowlog keeps the latest commands that took at least a threshold
// to run, for SLOWLOG GET, LEN and RESET, with Redis 7.0's entry format:
// id, unix time, duration in microseconds, the arguments (at most 32,
// each cut to 128 bytes, secrets redacted), the client's address and
// name. The threshold and the length are the slowlog-log-slower-than and
// slowlog-max-len parameters.
package slowlog

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/redact"
	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Redis's defaults and limits (slowlog.h, config.c).
const (
	DefaultThreshold = 10000 // µs
	DefaultMaxLen    = 128
	maxArgs          = 32  // SLOWLOG_ENTRY_MAX_ARGC
	maxArgLen        = 128 // SLOWLOG_ENTRY_MAX_STRING
)

// Entry is one logged command.
type Entry struct {
	ID       int64
	Time     int64 // unix seconds
	Micros   int64 // unix microseconds, for merging several servers' logs
	Duration int64 // microseconds
	Args     [][]byte
	Peer     string // the client's ip:port
	Name     string // the client's name, "" if none
}

// Log is a server's slow log, safe for concurrent use.
type Log struct {
	threshold atomic.Int64 // µs; negative: nothing is logged
	maxLen    atomic.Int64

	mu      sync.Mutex
	entries []Entry // oldest first
	nextID  int64   // ids go on after RESET, as Redis's
}

// New returns a log with Redis's defaults.
func New() *Log {
	l := &Log{}
	l.threshold.Store(DefaultThreshold)
	l.maxLen.Store(DefaultMaxLen)
	return l
}

// Threshold is slowlog-log-slower-than in microseconds; negative when the
// log is off. Callers check it before they time a command.
func (l *Log) Threshold() int64 { return l.threshold.Load() }

// Slow reports whether a command that took d is to be logged, for
// callers to check before they gather what Push needs.
func (l *Log) Slow(d time.Duration) bool {
	th := l.threshold.Load()
	return th >= 0 && d.Microseconds() >= th
}

// Push logs a command that took d if d reaches the threshold. args are
// copied (cut as Redis cuts them); cmd names the command for redaction.
func (l *Log) Push(cmd *slots.Command, args [][]byte, d time.Duration, peer, name string, now time.Time) {
	if !l.Slow(d) {
		return
	}
	e := Entry{Time: now.Unix(), Micros: now.UnixMicro(), Duration: d.Microseconds(), Args: entryArgs(cmd, args), Peer: peer, Name: name}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	// As Redis, the log is trimmed to slowlog-max-len when an entry is
	// added, not when the parameter changes.
	if n := int(min(l.maxLen.Load(), int64(len(l.entries)))); n < len(l.entries) {
		drop := len(l.entries) - n
		clear(l.entries[:drop])
		l.entries = l.entries[drop:]
	}
}

// MaxLen is slowlog-max-len.
func (l *Log) MaxLen() int64 { return l.maxLen.Load() }

// Len is SLOWLOG LEN.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Reset is SLOWLOG RESET: the entries go, the ids go on.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

// Newest returns up to count entries, newest first (count < 0: all).
func (l *Log) Newest(count int64) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.entries)
	if count >= 0 && count < int64(n) {
		n = int(count)
	}
	out := make([]Entry, n)
	for i := range out {
		out[i] = l.entries[len(l.entries)-1-i]
	}
	return out
}

// entryArgs copies args as Redis's slowlogCreateEntry keeps them: at most
// 32, the last of which then says how many more there were, and each
// longer than 128 bytes cut with the count of bytes left out; secrets are
// replaced by "(redacted)".
func entryArgs(cmd *slots.Command, args [][]byte) [][]byte {
	n := min(len(args), maxArgs)
	out := make([][]byte, n)
	hidden := redact.Hidden(cmd, args)
	for i := range out {
		switch {
		case n != len(args) && i == n-1:
			out[i] = fmt.Appendf(nil, "... (%d more arguments)", len(args)-n+1)
		case hidden(i):
			out[i] = []byte(redact.Placeholder)
		case len(args[i]) > maxArgLen:
			out[i] = fmt.Appendf(append([]byte(nil), args[i][:maxArgLen]...), "... (%d more bytes)", len(args[i])-maxArgLen)
		default:
			out[i] = append([]byte(nil), args[i]...)
		}
	}
	return out
}

// WriteEntries writes SLOWLOG GET's reply.
func WriteEntries(w *resp.Writer, entries []Entry) { writeEntries(w, entries, false) }

// WriteEntriesMicros writes SLOWLOG GET's reply with a seventh element
// in each entry, its time in unix microseconds, by which a proxy merges
// its nodes' logs: Redis's seconds leave the commands of one second
// unordered across nodes.
func WriteEntriesMicros(w *resp.Writer, entries []Entry) { writeEntries(w, entries, true) }

func writeEntries(w *resp.Writer, entries []Entry, micros bool) {
	w.Array(len(entries))
	for _, e := range entries {
		writeEntry(w, e, micros)
	}
}

// WriteEntry writes one entry as an element of SLOWLOG GET's reply.
func WriteEntry(w *resp.Writer, e Entry) { writeEntry(w, e, false) }

func writeEntry(w *resp.Writer, e Entry, micros bool) {
	if micros {
		w.Array(7)
	} else {
		w.Array(6)
	}
	w.Int(e.ID)
	w.Int(e.Time)
	w.Int(e.Duration)
	w.Array(len(e.Args))
	for _, a := range e.Args {
		w.Bulk(a)
	}
	w.BulkString(e.Peer)
	w.BulkString(e.Name)
	if micros {
		w.Int(e.Micros)
	}
}

// ParseCount reads SLOWLOG GET's count: -1 (all) or more; false (for
// resp.ErrSlowlogCount) otherwise.
func ParseCount(b []byte) (int64, bool) {
	n, ok := resp.ParseInt(b)
	if !ok || n < -1 {
		return 0, false
	}
	return n, true
}

// Help is SLOWLOG HELP's text.
var Help = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]",
	"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:",
	"    id, timestamp, time in microseconds, arguments array, client IP and port,",
	"    client name",
	"LEN",
	"    Return the length of the slowlog.",
	"RESET",
	"    Reset the slowlog.",
	"HELP",
	"    Prints this help.",
}

// ThresholdParam serves slowlog-log-slower-than: -1 (off) or more.
func (l *Log) ThresholdParam() redisconf.Param {
	return intParam("slowlog-log-slower-than", &l.threshold, -1)
}

// MaxLenParam serves slowlog-max-len: 0 or more.
func (l *Log) MaxLenParam() redisconf.Param {
	return intParam("slowlog-max-len", &l.maxLen, 0)
}

func intParam(name string, v *atomic.Int64, least int64) redisconf.Param {
	return redisconf.Param{
		Name: name,
		Get:  func() string { return strconv.FormatInt(v.Load(), 10) },
		Check: func(s string) (func(), string) {
			n, ok := resp.ParseInt([]byte(s))
			if !ok {
				return nil, resp.ConfigReasonNotInteger
			}
			if n < least {
				return nil, fmt.Sprintf(resp.ConfigReasonRange, least, int64(1<<63-1))
			}
			return func() { v.Store(n) }, ""
		},
	}
}
