// Package servercmd parses the arguments of server commands that a node
// and the proxy both check the same way before they act differently on
// them, with Redis 7.0.15's errors.
package servercmd

import (
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Shutdown is SHUTDOWN's options.
type Shutdown struct {
	NoSave, Save, Now, Force, Abort bool
}

// ParseShutdown reads SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] as
// Redis's shutdownCommand does: any other word, ABORT with anything else,
// or NOSAVE with SAVE is a syntax error (returned as its error text).
func ParseShutdown(args [][]byte) (Shutdown, string) {
	var o Shutdown
	for _, a := range args[1:] {
		switch {
		case slots.EqualFold("nosave", slots.CString(a)):
			o.NoSave = true
		case slots.EqualFold("save", slots.CString(a)):
			o.Save = true
		case slots.EqualFold("now", slots.CString(a)):
			o.Now = true
		case slots.EqualFold("force", slots.CString(a)):
			o.Force = true
		case slots.EqualFold("abort", slots.CString(a)):
			o.Abort = true
		default:
			return Shutdown{}, resp.ErrSyntax
		}
	}
	if (o.Abort && (o.NoSave || o.Save || o.Now || o.Force)) || (o.NoSave && o.Save) {
		return Shutdown{}, resp.ErrSyntax
	}
	return o, ""
}

// WaitAtOnce reports whether WAIT numReplicas answers 0 without
// blocking, where no replica acknowledges anything: for 0 or fewer and,
// as in Redis, which keeps a blocked WAIT's count in a 32-bit int and
// checks it before it next sleeps, for counts that wrap to 0 or below
// there (2147483648, 4294967296, 2^63-1, ...).
func WaitAtOnce(numReplicas int64) bool { return numReplicas <= 0 || int32(numReplicas) <= 0 }

// ParseWait reads WAIT numreplicas timeout as Redis's waitCommand does:
// numreplicas first (a long), then the timeout in milliseconds (an
// integer, not negative; 0 is forever). It returns the error text to
// reply, or "".
func ParseWait(args [][]byte) (numReplicas, timeoutMs int64, msg string) {
	n, ok := resp.ParseInt(args[1])
	if !ok {
		return 0, 0, resp.ErrNotInteger
	}
	ms, ok := resp.ParseInt(args[2])
	if !ok {
		return 0, 0, resp.ErrTimeoutNotInt
	}
	if ms < 0 {
		return 0, 0, resp.ErrTimeoutNegative
	}
	return n, ms, ""
}
