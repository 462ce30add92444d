package node

import (
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// writeCommandInfo writes cmd's COMMAND INFO entry: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs and
// subcommands, with Redis's RESP3 types.
func writeCommandInfo(w *resp.Writer, cmd *slots.Command) {
	w.Array(10)
	w.BulkString(cmd.FullName)
	w.Int(int64(cmd.Arity))

	n := 0
	for _, f := range slots.FlagNames {
		if cmd.Flags&f.Flag != 0 {
			n++
		}
	}
	w.Set(n)
	for _, f := range slots.FlagNames {
		if cmd.Flags&f.Flag != 0 {
			w.Simple(f.Name)
		}
	}

	w.Int(int64(cmd.FirstKey))
	w.Int(int64(cmd.LastKey))
	w.Int(int64(cmd.Step))

	n = 0
	for _, a := range slots.ACLNames {
		if cmd.ACL&a.Cat != 0 {
			n++
		}
	}
	w.Set(n)
	for _, a := range slots.ACLNames {
		if cmd.ACL&a.Cat != 0 {
			w.Simple("@" + a.Name)
		}
	}

	w.Set(len(cmd.Tips))
	for _, t := range cmd.Tips {
		w.BulkString(t)
	}

	w.Set(len(cmd.KeySpecs))
	for i := range cmd.KeySpecs {
		writeKeySpec(w, &cmd.KeySpecs[i])
	}

	// Redis sends subcommands as an array, but no subcommands as an empty
	// set.
	if len(cmd.Subcommands) == 0 {
		w.Set(0)
		return
	}
	w.Array(len(cmd.Subcommands))
	for _, sub := range cmd.Subcommands {
		writeCommandInfo(w, sub)
	}
}

// writeKeyFlags writes key spec flags as Redis's addReplyFlagsForKeyArgs
// does: a set of simple strings, in Redis's order.
func writeKeyFlags(w *resp.Writer, flags slots.KeySpecFlag) {
	n := 0
	for _, f := range slots.KeySpecFlagNames {
		if flags&f.Flag != 0 {
			n++
		}
	}
	w.Set(n)
	for _, f := range slots.KeySpecFlagNames {
		if flags&f.Flag != 0 {
			w.Simple(f.Name)
		}
	}
}

func writeKeySpec(w *resp.Writer, ks *slots.KeySpec) {
	if ks.Notes != "" {
		w.Map(4)
		w.BulkString("notes")
		w.BulkString(ks.Notes)
	} else {
		w.Map(3)
	}
	w.BulkString("flags")
	writeKeyFlags(w, ks.Flags)

	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	switch ks.Begin {
	case slots.BeginIndex:
		w.BulkString("index")
		w.BulkString("spec")
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(ks.Index))
	case slots.BeginKeyword:
		w.BulkString("keyword")
		w.BulkString("spec")
		w.Map(2)
		w.BulkString("keyword")
		w.BulkString(ks.Keyword)
		w.BulkString("startfrom")
		w.Int(int64(ks.StartFrom))
	default:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}

	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	switch ks.Find {
	case slots.FindRange:
		w.BulkString("range")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("lastkey")
		w.Int(int64(ks.LastKey))
		w.BulkString("keystep")
		w.Int(int64(ks.KeyStep))
		w.BulkString("limit")
		w.Int(int64(ks.Limit))
	case slots.FindKeyNum:
		w.BulkString("keynum")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(int64(ks.KeyNumIdx))
		w.BulkString("firstkey")
		w.Int(int64(ks.FirstKey))
		w.BulkString("keystep")
		w.Int(int64(ks.KeyStep))
	default:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}
}

// writeCommandDocs writes cmd's COMMAND DOCS map, fields in Redis's order,
// absent fields left out.
func writeCommandDocs(w *resp.Writer, cmd *slots.Command) {
	d := cmd.Doc
	if d == nil {
		d = &slots.Doc{}
	}
	n := 0
	for _, s := range []string{d.Summary, d.Since, d.Group, d.Complexity, d.DeprecatedSince, d.ReplacedBy} {
		if s != "" {
			n++
		}
	}
	for _, present := range []bool{len(d.Flags) > 0, len(d.History) > 0, len(d.Args) > 0, len(cmd.Subcommands) > 0} {
		if present {
			n++
		}
	}
	w.Map(n)
	bulkField(w, "summary", d.Summary)
	bulkField(w, "since", d.Since)
	bulkField(w, "group", d.Group)
	bulkField(w, "complexity", d.Complexity)
	if len(d.Flags) > 0 {
		w.BulkString("doc_flags")
		w.Set(len(d.Flags))
		for _, f := range d.Flags {
			w.Simple(f)
		}
	}
	bulkField(w, "deprecated_since", d.DeprecatedSince)
	bulkField(w, "replaced_by", d.ReplacedBy)
	if len(d.History) > 0 {
		w.BulkString("history")
		w.Set(len(d.History))
		for _, h := range d.History {
			w.Array(2)
			w.BulkString(h[0])
			w.BulkString(h[1])
		}
	}
	if len(d.Args) > 0 {
		w.BulkString("arguments")
		writeDocArgs(w, d.Args)
	}
	if len(cmd.Subcommands) > 0 {
		w.BulkString("subcommands")
		w.Map(len(cmd.Subcommands))
		for _, sub := range cmd.Subcommands {
			w.BulkString(sub.FullName)
			writeCommandDocs(w, sub)
		}
	}
}

func writeDocArgs(w *resp.Writer, args []slots.Arg) {
	w.Array(len(args))
	for i := range args {
		a := &args[i]
		n := 0
		for _, s := range []string{a.Name, a.Type, a.DisplayText, a.Token, a.Summary, a.Since, a.DeprecatedSince, a.Value} {
			if s != "" {
				n++
			}
		}
		for _, present := range []bool{a.KeySpecIndex >= 0, len(a.Flags) > 0, len(a.Args) > 0} {
			if present {
				n++
			}
		}
		w.Map(n)
		bulkField(w, "name", a.Name)
		bulkField(w, "type", a.Type)
		bulkField(w, "display_text", a.DisplayText)
		if a.KeySpecIndex >= 0 {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		bulkField(w, "token", a.Token)
		bulkField(w, "summary", a.Summary)
		bulkField(w, "since", a.Since)
		bulkField(w, "deprecated_since", a.DeprecatedSince)
		if len(a.Flags) > 0 {
			w.BulkString("flags")
			w.Set(len(a.Flags))
			for _, f := range a.Flags {
				w.Simple(f)
			}
		}
		bulkField(w, "value", a.Value)
		if len(a.Args) > 0 {
			w.BulkString("arguments")
			writeDocArgs(w, a.Args)
		}
	}
}

// bulkField writes a name and a bulk string value, unless the value is
// empty (absent).
func bulkField(w *resp.Writer, name, val string) {
	if val == "" {
		return
	}
	w.BulkString(name)
	w.BulkString(val)
}
