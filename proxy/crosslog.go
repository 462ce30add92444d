package proxy

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/slots"
)

// crossSlotLog writes a log line for each command refused with CROSSSLOT,
// naming the client, the command and its keys with their slots: what a
// team moving its code onto a cluster needs to find the call to fix, which
// the error text alone does not say. Lines are rate-limited, so a client
// that makes the same mistake in a loop cannot flood the log; the next
// line written says how many were left out.
type crossSlotLog struct {
	log *slog.Logger

	mu         sync.Mutex
	window     time.Time // start of the current second
	written    int       // lines written in it
	suppressed int64     // lines left out since the last one written
}

// crossSlotLogRate is how many lines a second crossSlotLog writes at most.
const crossSlotLogRate = 10

// Limits on what one line shows of a command's keys.
const (
	crossSlotLogKeys   = 8  // keys shown; the rest are counted
	crossSlotLogKeyLen = 64 // bytes shown of each key
)

// allow reports whether a line may be written now, and how many were left
// out before it.
func (l *crossSlotLog) allow(now time.Time) (bool, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.window) >= time.Second {
		l.window, l.written = now, 0
	}
	if l.written >= crossSlotLogRate {
		l.suppressed++
		return false, 0
	}
	l.written++
	n := l.suppressed
	l.suppressed = 0
	return true, n
}

// refused logs a command refused because its keys (indexes into args)
// are in more than one slot.
func (l *crossSlotLog) refused(c *client, cmd string, args [][]byte, keys []int) {
	l.write(c, "CROSSSLOT: keys in more than one slot", func() []any {
		return []any{"command", cmd, "keys", keySlots(args, keys)}
	})
}

// txRefused logs an EXEC refused because the transaction's commands are in
// different slots: first is the first queued command outside the slot of
// those before it.
func (l *crossSlotLog) txRefused(c *client, txSlot int, first string, firstSlot int) {
	l.write(c, "CROSSSLOT: transaction in more than one slot", func() []any {
		return []any{"command", "exec", "slot", txSlot, "queued", first, "queued_slot", firstSlot}
	})
}

// write logs msg about c's command, whose own attributes what gives (only
// made when the line is written), unless the rate limit leaves it out.
func (l *crossSlotLog) write(c *client, msg string, what func() []any) {
	if !l.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	ok, suppressed := l.allow(time.Now())
	if !ok {
		return
	}
	attrs := []any{"client", c.raddr}
	if name := c.clientName(); name != "" {
		attrs = append(attrs, "name", name)
	}
	attrs = append(attrs, what()...)
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	l.log.Info(msg, attrs...)
}

// keySlots renders keys as "key@slot ..." in the command's order, each key
// cut to crossSlotLogKeyLen bytes and at most crossSlotLogKeys of them.
func keySlots(args [][]byte, keys []int) string {
	var b strings.Builder
	for n, i := range keys {
		if n == crossSlotLogKeys {
			b.WriteString(" (+")
			b.WriteString(strconv.Itoa(len(keys) - n))
			b.WriteString(" more)")
			break
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		k := args[i]
		if len(k) > crossSlotLogKeyLen {
			b.WriteString(strconv.Quote(string(k[:crossSlotLogKeyLen])))
			b.WriteString("...")
		} else {
			b.WriteString(strconv.Quote(string(k)))
		}
		b.WriteByte('@')
		b.WriteString(strconv.Itoa(int(slots.Slot(k))))
	}
	return b.String()
}
