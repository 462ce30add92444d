package segbit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/glob"
	"github.com/shardgate/shardgate/internal/resp"
)

// Backend runs commands on the cluster. Each command goes to the node that
// owns the slot of its key (args[1] for the commands segbit issues, except
// BITOP whose keys are args[2:], all in one slot); commands run in
// parallel; replies come back in order, one per command.
//
// A failure of one command should come back as its error reply (Type '-',
// e.g. "CLUSTERDOWN Hash slot not served"), so that segbit can name the
// key that failed; an error from Do fails the whole step.
type Backend interface {
	Do(ctx context.Context, cmds [][][]byte) ([]resp.Value, error)
}

// Options configures a Handler. The zero value is valid: default segment
// size, no patterns (only the explicit SEGBIT.* commands are segmented).
type Options struct {
	// SegmentBits is log2 of the segment size in bits, 12..32; 0 means
	// DefaultSegmentBits (--segment-bits).
	SegmentBits int
	// SegmentKeys are globs (Redis KEYS syntax) naming the keys on which
	// plain SETBIT/GETBIT/BITCOUNT/BITPOS/BITOP/DEL are segmented
	// (--segment-keys, repeatable).
	SegmentKeys []string
}

// DefaultOptions returns the defaults: DefaultSegmentBits, no patterns.
func DefaultOptions() Options { return Options{SegmentBits: DefaultSegmentBits} }

// Validate checks the options.
func (o Options) Validate() error {
	for _, k := range o.SegmentKeys {
		if k == "" {
			// It would match only the empty key name: surely a quoting
			// slip in a script.
			return errors.New("an empty --segment-keys pattern matches no key: give a glob such as 'dau:*'")
		}
		if glob.Unclosed([]byte(k)) {
			return fmt.Errorf("--segment-keys %q: a '[' opens a character class that no ']' closes (write \\[ for a literal '[')", k)
		}
	}
	if o.SegmentBits == 0 {
		return nil
	}
	_, err := NewLayout(o.SegmentBits)
	return err
}

// Handler executes segmented-bitmap commands. It holds no per-command
// state and is safe for concurrent use.
type Handler struct {
	layout  Layout
	matcher *Matcher
}

// New returns a Handler for opts.
func New(opts Options) (*Handler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	bits := opts.SegmentBits
	if bits == 0 {
		bits = DefaultSegmentBits
	}
	l, err := NewLayout(bits)
	if err != nil {
		return nil, err
	}
	return &Handler{layout: l, matcher: NewMatcher(opts.SegmentKeys...)}, nil
}

// Layout is the handler's key layout.
func (h *Handler) Layout() Layout { return h.layout }

// Matcher is the handler's --segment-keys matcher.
func (h *Handler) Matcher() *Matcher { return h.matcher }

// Matcher matches keys against a list of globs with Redis's KEYS/SCAN
// MATCH semantics (internal/glob). A nil or empty Matcher matches nothing.
type Matcher struct {
	pats [][]byte
}

// NewMatcher returns a matcher for the given globs.
func NewMatcher(patterns ...string) *Matcher {
	m := &Matcher{}
	for _, p := range patterns {
		m.pats = append(m.pats, []byte(p))
	}
	return m
}

// Match reports whether key matches any of the globs.
func (m *Matcher) Match(key []byte) bool {
	if m == nil {
		return false
	}
	for _, p := range m.pats {
		if glob.Match(p, key) {
			return true
		}
	}
	return false
}

// Empty reports whether the matcher has no globs.
func (m *Matcher) Empty() bool { return m == nil || len(m.pats) == 0 }

// Op is a segmented-bitmap operation.
type Op uint8

// The operations.
const (
	OpNone Op = iota
	OpSetBit
	OpGetBit
	OpBitCount
	OpBitPos
	OpBitOp
	OpDel
	OpInfo
)

var opNames = [...]string{"", "SETBIT", "GETBIT", "BITCOUNT", "BITPOS", "BITOP", "DEL", "INFO"}

// String is the plain command name of the operation.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", o)
}

// ExplicitPrefix starts the names of the explicit commands
// (SEGBIT.SETBIT ...), which are segmented whatever the key.
const ExplicitPrefix = "SEGBIT."

// Lookup recognises a command name, case-insensitively: SEGBIT.SETBIT,
// SEGBIT.GETBIT, SEGBIT.BITCOUNT, SEGBIT.BITPOS, SEGBIT.BITOP, SEGBIT.DEL
// and SEGBIT.INFO (explicit = true), and the plain SETBIT, GETBIT,
// BITCOUNT, BITPOS, BITOP and DEL (explicit = false), which are segbit's
// only when their keys match --segment-keys (see Handler.Route). Plain
// INFO is the server's and is not recognised.
func Lookup(name []byte) (op Op, explicit, ok bool) {
	if len(name) > len(ExplicitPrefix) && strings.EqualFold(string(name[:len(ExplicitPrefix)]), ExplicitPrefix) {
		name = name[len(ExplicitPrefix):]
		explicit = true
	}
	for o := OpSetBit; o <= OpInfo; o++ {
		if strings.EqualFold(string(name), opNames[o]) {
			if o == OpInfo && !explicit {
				return OpNone, false, false
			}
			return o, explicit, true
		}
	}
	if !explicit && strings.EqualFold(string(name), "unlink") {
		// UNLINK is DEL that frees in the background: the same here.
		return OpDel, false, true
	}
	return OpNone, false, false
}

// Route reports whether segbit serves the command args (args[0] is the
// name): every explicit SEGBIT.* command; a plain SETBIT, GETBIT, BITCOUNT
// or BITPOS whose key matches; a plain BITOP any of whose keys (dest or
// sources) matches (Exec refuses it if some do not); a plain DEL or UNLINK
// any of whose keys matches (Exec deletes the others as plain keys). A plain
// command too short to have its keys is not routed here, so the caller's
// own arity check answers it.
func (h *Handler) Route(args [][]byte) (Op, bool) {
	if len(args) == 0 {
		return OpNone, false
	}
	op, explicit, ok := Lookup(args[0])
	if !ok {
		return OpNone, false
	}
	if explicit {
		return op, true
	}
	if h.matcher.Empty() {
		return OpNone, false
	}
	first := 1
	switch op {
	case OpBitOp:
		first = 2
	case OpDel:
	default:
		if len(args) < 2 {
			return OpNone, false
		}
		return op, h.matcher.Match(args[1])
	}
	for _, k := range args[min(first, len(args)):] {
		if h.matcher.Match(k) {
			return op, true
		}
	}
	return OpNone, false
}

// Exec runs the command args (as the client sent it, name first) if
// Lookup knows its name, and returns the reply or an error whose text is
// the error reply (see Error, PartError, BackendError).
func (h *Handler) Exec(ctx context.Context, b Backend, args [][]byte) (resp.Value, error) {
	if len(args) == 0 {
		return resp.Value{}, replyErr(resp.ErrSyntax)
	}
	op, explicit, ok := Lookup(args[0])
	if !ok {
		return resp.Value{}, replyErr(fmt.Sprintf(errNotOurs, args[0]))
	}
	switch op {
	case OpSetBit:
		return h.SetBit(ctx, b, args)
	case OpGetBit:
		return h.GetBit(ctx, b, args)
	case OpBitCount:
		return h.BitCount(ctx, b, args)
	case OpBitPos:
		return h.BitPos(ctx, b, args)
	case OpBitOp:
		var plain func([]byte) bool
		if !explicit {
			plain = func(k []byte) bool { return !h.matcher.Match(k) }
		}
		return h.bitop(ctx, b, args, plain)
	case OpDel:
		var plain func([]byte) bool
		if !explicit {
			plain = func(k []byte) bool { return !h.matcher.Match(k) }
		}
		return h.del(ctx, b, args, plain, !explicit)
	case OpInfo:
		return h.Info(ctx, b, args)
	}
	return resp.Value{}, replyErr(resp.ErrSyntax)
}

// run sends one step's commands and returns their replies. An error reply
// becomes a PartError naming the command's key.
func run(ctx context.Context, b Backend, cmds [][][]byte) ([]resp.Value, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	out := make([]resp.Value, 0, len(cmds))
	for start := 0; start < len(cmds); start += maxBatch {
		part := cmds[start:min(start+maxBatch, len(cmds))]
		rs, err := b.Do(ctx, part)
		if err != nil {
			return nil, &BackendError{Err: err}
		}
		if len(rs) != len(part) {
			return nil, &BackendError{Err: fmt.Errorf("backend returned %d replies for %d commands", len(rs), len(part))}
		}
		for i, r := range rs {
			if r.IsError() {
				return nil, &PartError{Key: cmdKey(part[i]), Reply: string(r.Str)}
			}
		}
		out = append(out, rs...)
	}
	return out, nil
}

// cmdKey is the key a command touches (BITOP: its destination).
func cmdKey(cmd [][]byte) []byte {
	if len(cmd) > 2 && strings.EqualFold(string(cmd[0]), "BITOP") {
		return cmd[2]
	}
	if len(cmd) > 1 {
		return cmd[1]
	}
	return nil
}

// intReply is r as an integer.
func intReply(r resp.Value, cmd [][]byte) (int64, error) {
	if r.Type != ':' {
		return 0, replyErr(fmt.Sprintf(errUnexpected, cmd[0], cmdKey(cmd)))
	}
	return r.Int, nil
}

// bulkReply is r as a string; nil for a null.
func bulkReply(r resp.Value, cmd [][]byte) ([]byte, error) {
	if r.Null || r.Type == '_' {
		return nil, nil
	}
	if r.Type != '$' {
		return nil, replyErr(fmt.Sprintf(errUnexpected, cmd[0], cmdKey(cmd)))
	}
	return r.Str, nil
}

func intValue(n int64) resp.Value { return resp.Value{Type: ':', Int: n} }
