package segbit

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/shardgate/shardgate/internal/resp"
)

// Texts of the errors segbit itself adds (Redis has no equivalent). Bad
// input gets Redis's own texts from internal/resp.
const (
	// errMixedBitop: a plain BITOP whose keys are partly segmented.
	errMixedBitop = "ERR BITOP on segmented bitmaps: key '%s' does not match --segment-keys (use SEGBIT.BITOP to treat every key as segmented)"
	// errNotOurs: Exec was given a command Lookup does not know.
	errNotOurs = "ERR '%s' is not a segmented-bitmap command"
	// errBackend wraps a Backend.Do failure (the whole step failed).
	errBackend = "ERR segmented bitmap: %v"
	// errUnexpected: a node answered with a reply of the wrong type.
	errUnexpected = "ERR segmented bitmap: unexpected reply from %s for key %s"
	// errPart suffixes a node's error reply with the key it concerned.
	errPart = "%s (segmented bitmap key %s)"
)

// Error is a reply error for the client; its text is the whole reply,
// code first ("ERR syntax error").
type Error string

func (e Error) Error() string { return string(e) }

// replyErr returns the error reply text as an error.
func replyErr(text string) error { return Error(text) }

// wrongArgs is Redis's arity error for the command named by args[0].
func wrongArgs(name []byte) error {
	return Error(fmt.Sprintf(resp.ErrWrongArgs, lowerASCII(name)))
}

// PartError is a node's error reply for one segment or index key; it
// fails the whole command. Its text keeps the node's error code first, so
// a client still sees WRONGTYPE, CLUSTERDOWN and the like.
type PartError struct {
	Key   []byte // the segment or index key the failed command touched
	Reply string // the node's error text
}

func (e *PartError) Error() string {
	return fmt.Sprintf(errPart, e.Reply, strconv.Quote(string(e.Key)))
}

// BackendError is a failed Backend.Do: the whole step failed, and no
// single key can be named.
type BackendError struct{ Err error }

func (e *BackendError) Error() string { return fmt.Sprintf(errBackend, e.Err) }
func (e *BackendError) Unwrap() error { return e.Err }

// IsPartError reports whether err is (or wraps) a PartError.
func IsPartError(err error) bool {
	var pe *PartError
	return errors.As(err, &pe)
}

func lowerASCII(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return string(out)
}
