// Package cmdlookup is the first step of every dispatcher (node and
// proxy): find the command a request names in the shared table, and the
// refusals Redis makes before anything else, in Redis's order.
package cmdlookup

import (
	"fmt"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
	"sync/atomic"
	"time"
)

// Resolve finds the command (or subcommand) args names. When the name is
// unknown, cmd is nil and errMsg is Redis's unknown-command error (the
// caller may first look for names of its own). Otherwise a non-empty
// errMsg refuses the command before authentication: an unknown
// subcommand, a wrong number of arguments, or DEBUG, which a Redis with
// the default enable-debug-command no refuses outright.
func Resolve(args [][]byte) (cmd *slots.Command, errMsg string) {
	cmd = slots.Lookup(args[0])
	if cmd == nil {
		return nil, resp.UnknownCommand(args)
	}
	if len(cmd.Subcommands) > 0 && len(args) >= 2 {
		sub := slots.LookupSub(cmd, args[1])
		if sub == nil {
			return cmd, resp.UnknownSubcommand(args)
		}
		cmd = sub
	}
	if !cmd.CheckArity(len(args)) {
		return cmd, fmt.Sprintf(resp.ErrWrongArgs, cmd.FullName)
	}
	if cmd.Name == "debug" {
		return cmd, resp.ErrDebugDisabled
	}
	return cmd, ""
}

// Unserved is Resolve's next step for an unknown name: when args call a
// Redis 7.0 command with keys that shardgate does not serve (hashes, sets,
// sorted sets, scripting ...), it returns that command and the refusal a
// Redis Cluster node would make before running the call: a wrong number
// of arguments, NOAUTH (authRequired), or CROSSSLOT when the keys span
// slots (keys, appended to dst, are then the key indexes). errMsg is ""
// where Redis would run the call: the caller answers unknown command
// then. cmd is nil for any other name, where errMsg, before
// authentication, is Unauthenticated's refusal.
func Unserved(args [][]byte, authRequired bool, dst []int) (cmd *slots.Command, keys []int, errMsg string) {
	cmd = slots.LookupUnserved(args[0])
	switch {
	case cmd == nil:
		if authRequired {
			return nil, dst, Unauthenticated(args)
		}
		return nil, dst, ""
	case !cmd.CheckArity(len(args)):
		return cmd, dst, fmt.Sprintf(resp.ErrWrongArgs, cmd.FullName)
	case authRequired:
		return cmd, dst, resp.ErrNoAuth
	}
	if keys, cross := cmd.SpansSlots(args, dst); cross {
		return cmd, keys, resp.ErrCrossSlot
	}
	return cmd, dst, ""
}

// Unauthenticated is the refusal Redis makes, before authentication, of
// a call of a Redis 7.0 command that shardgate does not serve (PUBLISH,
// CLIENT TRACKING ...): unknown subcommand, a wrong number of arguments,
// or NOAUTH; "" for a name Redis does not know either, which the caller
// refuses as unknown. Once authenticated, shardgate answers that such a
// command is unknown, but a client that has not yet sent AUTH must meet
// Redis's refusals in Redis's order.
func Unauthenticated(args [][]byte) string {
	rc, found := slots.LookupRedis(args)
	switch {
	case found == slots.RedisUnknownSub:
		return resp.UnknownSubcommand(args)
	case found == slots.RedisUnknown, rc.NoAuth:
		return ""
	case !rc.CheckArity(len(args)):
		return fmt.Sprintf(resp.ErrWrongArgs, rc.FullName)
	}
	return resp.ErrNoAuth
}

// IsHTTPRequest reports whether an unknown command name is really the
// start of an HTTP request ("POST" or a "Host:" header line): Redis closes
// such a connection without a reply, as a cross-protocol attack. Redis
// compares with strcasecmp, which stops at a NUL byte.
func IsHTTPRequest(name []byte) bool {
	name = slots.CString(name)
	return slots.EqualFold("post", name) || slots.EqualFold("host:", name)
}

// Found is the command Redis's lookupCommand finds for args, given what
// Resolve returned: nil for an unknown command and for a container
// command with an unknown subcommand (where Resolve returns the container
// to name it in its error). CLIENT LIST's cmd= shows it.
func Found(cmd *slots.Command, args [][]byte) *slots.Command {
	if cmd != nil && len(cmd.Subcommands) > 0 && len(args) >= 2 {
		return nil // a known subcommand would have been returned instead
	}
	return cmd
}

// HTTPWarnings limits the log's "possible SECURITY ATTACK" lines to one a
// minute, as Redis's securityWarningCommand does: a scanner sending
// thousands of HTTP requests must not flood the log.
type HTTPWarnings struct{ last atomic.Int64 }

// Due reports whether the warning for an HTTP request seen at now is to
// be logged: the first one, and then one a minute at most.
func (w *HTTPWarnings) Due(now time.Time) bool {
	last := w.last.Load()
	if last != 0 && now.UnixNano()-last <= int64(time.Minute) {
		return false
	}
	return w.last.CompareAndSwap(last, now.UnixNano())
}
