// Package redact knows which arguments of a command are secrets that Redis
// 7.0 never shows in its slow log or to MONITOR: passwords given to AUTH,
// HELLO and CONFIG SET.
package redact

import (
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Placeholder is what Redis shows in a secret's place.
const Placeholder = "(redacted)"

// Hidden tells which arguments Redis 7.0 hides from the slow log and
// MONITOR (its redactClientCommandArgument calls): AUTH's, HELLO's AUTH username and
// password once the protocol version parses, and the values CONFIG SET
// gives sensitive parameters.
func Hidden(cmd *slots.Command, args [][]byte) func(i int) bool {
	none := func(int) bool { return false }
	if cmd == nil {
		return none
	}
	switch cmd.FullName {
	case "auth":
		if len(args) > 3 {
			return none // a syntax error, answered before Redis redacts
		}
		return func(i int) bool { return i > 0 }
	case "hello":
		if len(args) < 2 {
			return none
		}
		if v, ok := resp.ParseInt(args[1]); !ok || v < 2 || v > 3 {
			return none
		}
		hide := map[int]bool{}
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case slots.EqualFold("auth", slots.CString(args[j])) && more >= 2: // strcasecmp, as Redis
				hide[j+1], hide[j+2] = true, true
				j += 2
			case slots.EqualFold("setname", slots.CString(args[j])) && more >= 1:
				j++
			default:
				return func(i int) bool { return hide[i] }
			}
		}
		return func(i int) bool { return hide[i] }
	case "config|set":
		return func(i int) bool {
			return i >= 3 && (i-3)%2 == 0 && sensitive(args[i-1])
		}
	}
	return none
}

// sensitive reports whether a parameter's value is a secret (Redis 7.0's
// SENSITIVE_CONFIG).
func sensitive(name []byte) bool {
	for _, s := range []string{"requirepass", "masterauth", "tls-key-file-pass", "tls-client-key-file-pass"} {
		if slots.EqualFold(s, name) {
			return true
		}
	}
	return false
}
