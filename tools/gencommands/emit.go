package main

import (
	"bytes"
	"fmt"
	"log"
	"strconv"
	"strings"
)

// The identifier of every name, in the order Redis prints them. The slots
// package declares its bit sets in the same order and prints in bit order,
// so emitBits refuses a Redis reply whose order differs.
var (
	flagIdents = []string{
		"write", "FlagWrite", "readonly", "FlagReadOnly", "denyoom", "FlagDenyOOM",
		"module", "FlagModule", "admin", "FlagAdmin", "pubsub", "FlagPubSub",
		"noscript", "FlagNoScript", "blocking", "FlagBlocking", "loading", "FlagLoading",
		"stale", "FlagStale", "skip_monitor", "FlagSkipMonitor", "skip_slowlog", "FlagSkipSlowlog",
		"asking", "FlagAsking", "fast", "FlagFast", "no_auth", "FlagNoAuth",
		"no_mandatory_keys", "FlagNoMandatoryKeys", "no_async_loading", "FlagNoAsyncLoading",
		"no_multi", "FlagNoMulti", "movablekeys", "FlagMovableKeys", "allow_busy", "FlagAllowBusy",
		"may_replicate", "FlagMayReplicate", // added by parseInfo, never printed
	}
	aclIdents = []string{
		"keyspace", "ACLKeyspace", "read", "ACLRead", "write", "ACLWrite", "set", "ACLSet",
		"sortedset", "ACLSortedSet", "list", "ACLList", "hash", "ACLHash", "string", "ACLString",
		"bitmap", "ACLBitmap", "hyperloglog", "ACLHyperLogLog", "geo", "ACLGeo", "stream", "ACLStream",
		"pubsub", "ACLPubSub", "admin", "ACLAdmin", "fast", "ACLFast", "slow", "ACLSlow",
		"blocking", "ACLBlocking", "dangerous", "ACLDangerous", "connection", "ACLConnection",
		"transaction", "ACLTransaction", "scripting", "ACLScripting",
	}
	keyFlagIdents = []string{
		"RO", "KeyRO", "RW", "KeyRW", "OW", "KeyOW", "RM", "KeyRM", "access", "KeyAccess",
		"update", "KeyUpdate", "insert", "KeyInsert", "delete", "KeyDelete", "not_key", "KeyNotKey",
		"incomplete", "KeyIncomplete", "variable_flags", "KeyVariableFlags",
	}
)

func emitBits(names []string, idents []string, what, cmd string) string {
	var parts []string
	last := -1
	for _, n := range names {
		i := -1
		for j := 0; j < len(idents); j += 2 {
			if idents[j] == n {
				i = j
			}
		}
		if i < 0 {
			log.Fatalf("%s: unknown %s %q", cmd, what, n)
		}
		if i <= last {
			log.Fatalf("%s: %s %v not in the order the slots package prints", cmd, what, names)
		}
		last = i
		parts = append(parts, idents[i+1])
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " | ")
}

func emitCommand(b *bytes.Buffer, c *command) {
	name := c.name
	if i := strings.IndexByte(name, '|'); i >= 0 {
		name = name[i+1:]
	}
	fmt.Fprintf(b, "{\nName: %q, Arity: %d,\n", name, c.arity)
	fmt.Fprintf(b, "Flags: %s,\n", emitBits(c.flags, flagIdents, "flag", c.name))
	if c.first != 0 || c.last != 0 || c.step != 0 {
		fmt.Fprintf(b, "FirstKey: %d, LastKey: %d, Step: %d,\n", c.first, c.last, c.step)
	}
	fmt.Fprintf(b, "ACL: %s,\n", emitBits(c.acl, aclIdents, "ACL category", c.name))
	if len(c.tips) > 0 {
		fmt.Fprintf(b, "Tips: %s,\n", strList(c.tips))
	}
	if len(c.specs) > 0 {
		b.WriteString("KeySpecs: []KeySpec{\n")
		for _, ks := range c.specs {
			emitKeySpec(b, ks, c.name)
		}
		b.WriteString("},\n")
	}
	if c.doc != nil {
		emitDoc(b, c.doc, c.name)
	}
	if len(c.subs) > 0 {
		b.WriteString("Subcommands: []*Command{\n")
		for _, s := range c.subs {
			emitCommand(b, s)
			b.WriteString(",\n")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
}

func emitKeySpec(b *bytes.Buffer, ks keySpec, cmd string) {
	b.WriteString("{")
	if ks.notes != "" {
		fmt.Fprintf(b, "Notes: %q, ", ks.notes)
	}
	fmt.Fprintf(b, "Flags: %s,\n", emitBits(ks.flags, keyFlagIdents, "key spec flag", cmd))
	spec := func(ps []pair, want ...string) []value {
		if len(ps) != len(want) {
			log.Fatalf("%s: key spec fields %v, want %v", cmd, ps, want)
		}
		out := make([]value, len(ps))
		for i, p := range ps {
			if p.key != want[i] {
				log.Fatalf("%s: key spec field %q, want %q", cmd, p.key, want[i])
			}
			out[i] = p.val
		}
		return out
	}
	switch ks.beginType {
	case "index":
		v := spec(ks.beginSpec, "index")
		fmt.Fprintf(b, "Begin: BeginIndex, Index: %d,\n", v[0].num)
	case "keyword":
		v := spec(ks.beginSpec, "keyword", "startfrom")
		fmt.Fprintf(b, "Begin: BeginKeyword, Keyword: %q, StartFrom: %d,\n", v[0].str, v[1].num)
	case "unknown":
		spec(ks.beginSpec)
		b.WriteString("Begin: BeginUnknown,\n")
	default:
		log.Fatalf("%s: begin_search type %q", cmd, ks.beginType)
	}
	switch ks.findType {
	case "range":
		v := spec(ks.findSpec, "lastkey", "keystep", "limit")
		fmt.Fprintf(b, "Find: FindRange, LastKey: %d, KeyStep: %d, Limit: %d,\n", v[0].num, v[1].num, v[2].num)
	case "keynum":
		v := spec(ks.findSpec, "keynumidx", "firstkey", "keystep")
		fmt.Fprintf(b, "Find: FindKeyNum, KeyNumIdx: %d, FirstKey: %d, KeyStep: %d,\n", v[0].num, v[1].num, v[2].num)
	case "unknown":
		spec(ks.findSpec)
		b.WriteString("Find: FindUnknown,\n")
	default:
		log.Fatalf("%s: find_keys type %q", cmd, ks.findType)
	}
	b.WriteString("},\n")
}

func emitDoc(b *bytes.Buffer, d *doc, cmd string) {
	b.WriteString("Doc: &Doc{\n")
	for _, f := range d.fields {
		switch f.key {
		case "summary", "since", "group", "complexity", "deprecated_since", "replaced_by":
			fmt.Fprintf(b, "%s: %q,\n", docField[f.key], f.val.str)
		case "doc_flags":
			fmt.Fprintf(b, "Flags: %s,\n", strList(strs(f.val)))
		case "history":
			b.WriteString("History: [][2]string{\n")
			for _, h := range f.val.elems {
				if len(h.elems) != 2 {
					log.Fatalf("%s: history entry %v", cmd, h)
				}
				fmt.Fprintf(b, "{%q, %q},\n", h.elems[0].str, h.elems[1].str)
			}
			b.WriteString("},\n")
		default:
			log.Fatalf("%s: doc field %q", cmd, f.key)
		}
	}
	if len(d.args) > 0 {
		b.WriteString("Args: ")
		emitArgs(b, d.args, cmd)
		b.WriteString(",\n")
	}
	b.WriteString("},\n")
}

var docField = map[string]string{
	"summary": "Summary", "since": "Since", "group": "Group", "complexity": "Complexity",
	"deprecated_since": "DeprecatedSince", "replaced_by": "ReplacedBy",
	"name": "Name", "type": "Type", "display_text": "DisplayText", "token": "Token", "value": "Value",
}

func emitArgs(b *bytes.Buffer, args []*arg, cmd string) {
	b.WriteString("[]Arg{\n")
	for _, a := range args {
		b.WriteString("{")
		ksi := int64(-1)
		for _, f := range a.fields {
			switch f.key {
			case "key_spec_index":
				ksi = f.val.num
			case "flags":
				fmt.Fprintf(b, "Flags: %s, ", strList(strs(f.val)))
			default:
				name, ok := docField[f.key]
				if !ok {
					log.Fatalf("%s: argument field %q", cmd, f.key)
				}
				fmt.Fprintf(b, "%s: %q, ", name, f.val.str)
			}
		}
		fmt.Fprintf(b, "KeySpecIndex: %s,", strconv.FormatInt(ksi, 10))
		if len(a.args) > 0 {
			b.WriteString("\nArgs: ")
			emitArgs(b, a.args, cmd)
			b.WriteString(",\n")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
}

func strList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	return "[]string{" + strings.Join(q, ", ") + "}"
}
