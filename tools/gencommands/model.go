package main

import (
	"fmt"
	"slices"
	"strings"
)

// command is one table entry as read from redis-server.
type command struct {
	name              string // full name as Redis prints it ("client|setname")
	arity             int64
	flags, acl        []string
	first, last, step int64
	tips              []string
	specs             []keySpec
	doc               *doc
	subs              []*command
}

// dropDocs leaves out c's documentation and its subcommands'.
func (c *command) dropDocs() {
	c.doc = nil
	for _, s := range c.subs {
		s.dropDocs()
	}
}

type keySpec struct {
	notes     string
	flags     []string
	beginType string
	beginSpec []pair
	findType  string
	findSpec  []pair
}

type pair struct {
	key string
	val value
}

type doc struct {
	fields []pair // in Redis's order; arguments and subcommands parsed apart
	args   []*arg
}

type arg struct {
	fields []pair
	args   []*arg
}

// command reads the INFO and DOCS of one list entry.
func (s *source) command(e listEntry) (*command, error) {
	info, err := s.do("COMMAND", "INFO", e.name)
	if err != nil {
		return nil, err
	}
	if len(info.elems) != 1 || info.elems[0].kind != '*' {
		return nil, fmt.Errorf("COMMAND INFO %s: no such command", e.name)
	}
	docs, err := s.do("COMMAND", "DOCS", e.name)
	if err != nil {
		return nil, err
	}
	if len(docs.elems) != 2 {
		return nil, fmt.Errorf("COMMAND DOCS %s: no docs", e.name)
	}
	cmd, err := parseInfo(info.elems[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.name, err)
	}
	d, subDocs, err := parseDoc(docs.elems[1])
	if err != nil {
		return nil, fmt.Errorf("%s docs: %w", e.name, err)
	}
	cmd.doc = d
	// Redis lists subcommands in hash-table order, which changes with every
	// server start; the list file's order keeps regeneration stable.
	byName := map[string]*command{}
	for _, sc := range cmd.subs {
		byName[strings.TrimPrefix(sc.name, e.name+"|")] = sc
	}
	var subs []*command
	for _, short := range e.subs {
		sc, ok := byName[short]
		if !ok {
			return nil, fmt.Errorf("%s has no subcommand %q", e.name, short)
		}
		sd, ok := subDocs[sc.name]
		if !ok {
			return nil, fmt.Errorf("%s: no docs", sc.name)
		}
		sc.doc, _, err = parseDoc(sd)
		if err != nil {
			return nil, fmt.Errorf("%s docs: %w", sc.name, err)
		}
		subs = append(subs, sc)
	}
	cmd.subs = subs
	return cmd, nil
}

// mayReplicate are the commands with Redis 7.0's MAY_REPLICATE flag
// (src/commands/*.json), which COMMAND INFO does not print: a WRITE client
// pause holds them.
var mayReplicate = map[string]bool{
	"eval": true, "evalsha": true, "fcall": true, "pfcount": true, "publish": true, "spublish": true,
}

func parseInfo(v value) (*command, error) {
	if len(v.elems) != 10 {
		return nil, fmt.Errorf("COMMAND INFO entry has %d fields, want 10", len(v.elems))
	}
	e := v.elems
	c := &command{
		name: e[0].str, arity: e[1].num,
		flags: strs(e[2]), first: e[3].num, last: e[4].num, step: e[5].num,
		acl: strs(e[6]), tips: strs(e[7]),
	}
	for i, a := range c.acl {
		c.acl[i] = strings.TrimPrefix(a, "@")
	}
	if mayReplicate[c.name] {
		c.flags = append(c.flags, "may_replicate")
	}
	for _, ks := range e[8].elems {
		spec, err := parseKeySpec(ks)
		if err != nil {
			return nil, err
		}
		c.specs = append(c.specs, spec)
	}
	for _, sv := range e[9].elems {
		sc, err := parseInfo(sv)
		if err != nil {
			return nil, err
		}
		c.subs = append(c.subs, sc)
	}
	return c, nil
}

func parseKeySpec(v value) (keySpec, error) {
	var ks keySpec
	fields := pairs(v)
	if err := checkOrder(fields, "notes", "flags", "begin_search", "find_keys"); err != nil {
		return ks, fmt.Errorf("key spec: %w", err)
	}
	for _, f := range fields {
		switch f.key {
		case "notes":
			ks.notes = f.val.str
		case "flags":
			ks.flags = strs(f.val)
		case "begin_search", "find_keys":
			sub := pairs(f.val)
			if len(sub) != 2 || sub[0].key != "type" || sub[1].key != "spec" {
				return ks, fmt.Errorf("key spec %s: unexpected shape", f.key)
			}
			if f.key == "begin_search" {
				ks.beginType, ks.beginSpec = sub[0].val.str, pairs(sub[1].val)
			} else {
				ks.findType, ks.findSpec = sub[0].val.str, pairs(sub[1].val)
			}
		}
	}
	return ks, nil
}

// parseDoc reads one command's DOCS map; subcommand docs are returned by
// full name.
func parseDoc(v value) (*doc, map[string]value, error) {
	fields := pairs(v)
	if err := checkOrder(fields, "summary", "since", "group", "complexity", "doc_flags",
		"deprecated_since", "replaced_by", "history", "arguments", "subcommands"); err != nil {
		return nil, nil, err
	}
	d := &doc{}
	subs := map[string]value{}
	for _, f := range fields {
		switch f.key {
		case "arguments":
			args, err := parseArgs(f.val)
			if err != nil {
				return nil, nil, err
			}
			d.args = args
		case "subcommands":
			for _, p := range pairs(f.val) {
				subs[p.key] = p.val
			}
		default:
			d.fields = append(d.fields, f)
		}
	}
	return d, subs, nil
}

func parseArgs(v value) ([]*arg, error) {
	var out []*arg
	for _, av := range v.elems {
		fields := pairs(av)
		if err := checkOrder(fields, "name", "type", "display_text", "key_spec_index", "token",
			"summary", "since", "deprecated_since", "flags", "value", "arguments"); err != nil {
			return nil, fmt.Errorf("argument: %w", err)
		}
		a := &arg{}
		for _, f := range fields {
			if f.key == "arguments" {
				sub, err := parseArgs(f.val)
				if err != nil {
					return nil, err
				}
				a.args = sub
				continue
			}
			a.fields = append(a.fields, f)
		}
		out = append(out, a)
	}
	return out, nil
}

// checkOrder fails when fields holds a key not in order, or out of that
// order: the table's writer prints fields in this fixed order, so a
// difference would make our replies differ from Redis's.
func checkOrder(fields []pair, order ...string) error {
	last := -1
	for _, f := range fields {
		i := slices.Index(order, f.key)
		if i < 0 {
			return fmt.Errorf("unknown field %q", f.key)
		}
		if i <= last {
			return fmt.Errorf("field %q out of the expected order %v", f.key, order)
		}
		last = i
	}
	return nil
}

func pairs(v value) []pair {
	var out []pair
	for i := 0; i+1 < len(v.elems); i += 2 {
		out = append(out, pair{v.elems[i].str, v.elems[i+1]})
	}
	return out
}

func strs(v value) []string {
	out := make([]string, 0, len(v.elems))
	for _, e := range v.elems {
		out = append(out, e.str)
	}
	return out
}
