package node

import (
	"bytes"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
	"github.com/shardgate/shardgate/slots"
)

// COMMAND and its subcommands describe the command table (slots) the way
// Redis 7.0 does: the same fields, types and order, in RESP2 and RESP3. The
// table holds only the commands shardgate serves, so COMMAND, COMMAND COUNT
// and COMMAND LIST are smaller than Redis's, and a container's subcommand
// list holds only the served subcommands; for every served command COMMAND
// INFO and COMMAND DOCS print exactly what Redis prints.

// registerCommandCmds adds COMMAND's handlers to h.
func registerCommandCmds(s *Server, h map[string]func(c *client, args [][]byte)) {
	h["command"] = s.cmdCommand
	h["command|count"] = s.cmdCommandCount
	h["command|info"] = s.cmdCommandInfo
	h["command|docs"] = s.cmdCommandDocs
	h["command|getkeys"] = s.cmdCommandGetKeys
	h["command|getkeysandflags"] = s.cmdCommandGetKeysAndFlags
	h["command|list"] = s.cmdCommandList
	h["command|help"] = s.cmdCommandHelp
}

// commandHelp is COMMAND HELP's text, as Redis 7.0.15 prints it.
var commandHelp = []string{
	"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"(no subcommand)",
	"    Return details about all Redis commands.",
	"COUNT",
	"    Return the total number of commands in this Redis server.",
	"LIST",
	"    Return a list of all commands in this Redis server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
	"HELP",
	"    Prints this help.",
}

// cmdCommand is COMMAND without a subcommand: every command's INFO entry.
func (s *Server) cmdCommand(c *client, args [][]byte) {
	all := slots.All()
	c.w.Array(len(all))
	for _, cmd := range all {
		writeCommandInfo(&c.w, cmd)
	}
}

func (s *Server) cmdCommandCount(c *client, args [][]byte) {
	c.w.Int(int64(len(slots.All())))
}

func (s *Server) cmdCommandHelp(c *client, args [][]byte) {
	c.w.Array(len(commandHelp))
	for _, line := range commandHelp {
		c.w.Simple(line)
	}
}

// cmdCommandInfo is COMMAND INFO [name ...]: one entry per name, null for
// names that are not commands; every command without names.
func (s *Server) cmdCommandInfo(c *client, args [][]byte) {
	if len(args) == 2 {
		s.cmdCommand(c, args)
		return
	}
	c.w.Array(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := lookupCommandName(name); cmd != nil {
			writeCommandInfo(&c.w, cmd)
		} else {
			c.w.Null()
		}
	}
}

// cmdCommandDocs is COMMAND DOCS [name ...]: a map from each known name to
// its documentation (unknown names are left out); every command without
// names.
func (s *Server) cmdCommandDocs(c *client, args [][]byte) {
	if len(args) == 2 {
		all := slots.All()
		c.w.Map(len(all))
		for _, cmd := range all {
			c.w.BulkString(cmd.FullName)
			writeCommandDocs(&c.w, cmd)
		}
		return
	}
	var buf [16]*slots.Command
	found := buf[:0]
	for _, name := range args[2:] {
		if cmd := lookupCommandName(name); cmd != nil {
			found = append(found, cmd)
		}
	}
	c.w.Map(len(found))
	for _, cmd := range found {
		c.w.BulkString(cmd.FullName)
		writeCommandDocs(&c.w, cmd)
	}
}

// cmdCommandGetKeys is COMMAND GETKEYS command [arg ...], with Redis's
// checks in Redis's order.
func (s *Server) cmdCommandGetKeys(c *client, args [][]byte) {
	full, cmd := getKeysTarget(c, args)
	if cmd == nil {
		return
	}
	keys := cmd.KeyIndexes(full, nil)
	if len(keys) == 0 {
		getKeysNone(c, cmd)
		return
	}
	c.w.Array(len(keys))
	for _, i := range keys {
		c.w.Bulk(full[i])
	}
}

// cmdCommandGetKeysAndFlags is COMMAND GETKEYSANDFLAGS command [arg ...]:
// GETKEYS with each key's flags (a set of simple strings, as in a key
// spec of COMMAND INFO).
func (s *Server) cmdCommandGetKeysAndFlags(c *client, args [][]byte) {
	full, cmd := getKeysTarget(c, args)
	if cmd == nil {
		return
	}
	refs := cmd.KeyRefs(full)
	if len(refs) == 0 {
		getKeysNone(c, cmd)
		return
	}
	c.w.Array(len(refs))
	for _, r := range refs {
		c.w.Array(2)
		c.w.Bulk(full[r.Index])
		writeKeyFlags(&c.w, r.Flags)
	}
}

// getKeysNone answers GETKEYS or GETKEYSANDFLAGS when no key was found.
func getKeysNone(c *client, cmd *slots.Command) {
	if cmd.Has(slots.FlagNoMandatoryKeys) {
		c.w.Array(0)
	} else {
		c.w.Error(resp.ErrGetKeysInvalidArgs)
	}
}

// getKeysTarget checks the command COMMAND GETKEYS[ANDFLAGS] asks about,
// in Redis's order, and returns it with its arguments; a nil command
// means the error has been written.
func getKeysTarget(c *client, args [][]byte) ([][]byte, *slots.Command) {
	full := args[2:]
	if bytes.IndexByte(full[0], '|') >= 0 {
		// Redis looks the name up among its commands as sent: a
		// "container|sub" name (COMMAND INFO's) names none.
		c.w.Error(resp.ErrGetKeysInvalidCommand)
		return nil, nil
	}
	cmd := slots.Lookup(full[0])
	if cmd == nil {
		// Redis 7.0's commands shardgate does not serve have their keys
		// found all the same (slots/unserved.go), as Redis finds them.
		cmd = slots.LookupUnserved(full[0])
	}
	if cmd != nil && len(cmd.Subcommands) > 0 && len(full) > 1 {
		cmd = slots.LookupSub(cmd, full[1])
	}
	switch {
	case cmd == nil && slots.IsRedisCommand(full):
		// A Redis command without keys that shardgate does not serve.
		c.w.Error(resp.ErrGetKeysNoKeys)
		return nil, nil
	case cmd == nil:
		c.w.Error(resp.ErrGetKeysInvalidCommand)
		return nil, nil
	case !cmd.HasKeys():
		c.w.Error(resp.ErrGetKeysNoKeys)
		return nil, nil
	case !cmd.CheckArity(len(full)):
		c.w.Error(resp.ErrGetKeysArity)
		return nil, nil
	}
	return full, cmd
}

// cmdCommandList is COMMAND LIST [FILTERBY MODULE name | ACLCAT category |
// PATTERN pattern]: the names of commands and subcommands that pass the
// filter.
func (s *Server) cmdCommandList(c *client, args [][]byte) {
	keep := func(*slots.Command) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && bytes.EqualFold(slots.CString(args[2]), []byte("filterby")):
		what, val := args[3], args[4]
		switch {
		case bytes.EqualFold(slots.CString(what), []byte("module")):
			keep = func(*slots.Command) bool { return false } // no modules
		case bytes.EqualFold(slots.CString(what), []byte("aclcat")):
			cat, ok := aclCategory(val)
			keep = func(cmd *slots.Command) bool { return ok && cmd.ACL&cat != 0 }
		case bytes.EqualFold(slots.CString(what), []byte("pattern")):
			// Redis matches without case; names are lower case.
			pat := bytes.ToLower(val)
			keep = func(cmd *slots.Command) bool { return engine.MatchString(pat, cmd.FullName) }
		default:
			c.w.Error(resp.ErrSyntax)
			return
		}
	default:
		c.w.Error(resp.ErrSyntax)
		return
	}
	var names []string
	for _, cmd := range slots.All() {
		if keep(cmd) {
			names = append(names, cmd.FullName)
		}
		for _, sub := range cmd.Subcommands {
			if keep(sub) {
				names = append(names, sub.FullName)
			}
		}
	}
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
}

// lookupCommandName finds "name" or "container|subcommand", ignoring case,
// as COMMAND INFO and COMMAND DOCS accept them.
func lookupCommandName(name []byte) *slots.Command {
	parent, sub, hasSub := bytes.Cut(name, []byte("|"))
	cmd := slots.Lookup(parent)
	if cmd == nil || !hasSub {
		return cmd
	}
	if bytes.IndexByte(sub, '|') >= 0 {
		return nil
	}
	return slots.LookupSub(cmd, sub)
}

func aclCategory(name []byte) (slots.ACLCategory, bool) {
	for _, a := range slots.ACLNames {
		if strings.EqualFold(a.Name, string(slots.CString(name))) { // strcasecmp, as Redis
			return a.Cat, true
		}
	}
	return 0, false
}
