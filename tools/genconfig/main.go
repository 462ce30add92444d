// Command genconfig writes the value rules of Redis's run-time parameters
// (internal/redisconf/values_gen.go) from what a running redis-server
// 7.0.15 answers to CONFIG SET. A server here keeps most of those
// parameters fixed, but a value Redis itself would refuse must get
// Redis's reason, so the rules say what Redis accepts: yes/no, one of an
// enumeration, an integer, a memory amount or a percentage, with bounds.
//
// Each parameter CONFIG GET * lists is set to values Redis refuses
// ("abc", then integers and memory amounts past the usual bounds), and
// the error texts give the rule. Only refused values are sent, except to
// parameters that take any string (their rule is "anything"), so run it
// against a throwaway redis-server:
//
//	redis-server --port 6399 --save '' --appendonly no &
//	go run ./tools/genconfig -addr 127.0.0.1:6399
//
// Parameters whose reasons fit none of the rules (client-output-buffer-
// limit, notify-keyspace-events, ...) are reported on stderr; redisconf
// checks those by hand.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"log"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/difftest"
)

// skipped are parameters whose probe would change the throwaway server in
// the way of the probes after it (a password) or that this tool does not
// classify (a listener's addresses).
var skipped = map[string]bool{"requirepass": true, "bind": true}

const (
	notInteger   = "argument couldn't be parsed into an integer"
	notMemory    = "argument must be a memory value"
	notMemoryPct = "argument must be a memory or percent value"
	notYesNo     = "argument must be 'yes' or 'no'"
	enumPrefix   = "argument(s) must be one of the following: "
	immutable    = "can't set immutable config"
	protected    = "can't set protected config"
)

type rule struct {
	name     string
	kind     string // kindInt, kindMemory, kindMemoryPercent, kindBool, kindEnum, kindAny
	lo, hi   int64  // kindInt, kindMemoryPercent
	mlo, mhi uint64 // kindMemory
	pctMax   int64
	enum     []string
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6399", "throwaway redis-server to probe")
	out := flag.String("o", "internal/redisconf/values_gen.go", "output file")
	flag.Parse()
	log.SetFlags(0)

	c, err := dial(*addr)
	if err != nil {
		log.Fatal(err)
	}
	version, err := c.version()
	if err != nil {
		log.Fatal(err)
	}
	names, err := c.names()
	if err != nil {
		log.Fatal(err)
	}
	var rules []rule
	for _, name := range names {
		if skipped[name] {
			continue
		}
		r, err := c.classify(name)
		if err != nil {
			log.Printf("%s: %v (checked by hand)", name, err)
			continue
		}
		if r != nil {
			rules = append(rules, *r)
		}
	}
	src, err := emit(version, rules)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %d rules to %s", len(rules), *out)
}

// classify finds the rule of one parameter, or nil for an immutable or
// protected one (refused whatever the value).
func (c *client) classify(name string) (*rule, error) {
	reason, err := c.set(name, "abc")
	if err != nil {
		return nil, err
	}
	r := &rule{name: name}
	switch {
	case reason == immutable || reason == protected:
		return nil, nil
	case reason == "":
		r.kind = "kindAny"
		return r, nil
	case reason == notYesNo:
		r.kind = "kindBool"
		return r, nil
	case strings.HasPrefix(reason, enumPrefix):
		r.kind = "kindEnum"
		r.enum = strings.Split(strings.TrimPrefix(reason, enumPrefix), ", ")
		return r, nil
	case reason == notInteger:
		r.kind = "kindInt"
		r.lo, r.hi = math.MinInt64, math.MaxInt64
		for _, v := range []string{"-9223372036854775808", "9223372036854775807"} {
			if err := c.bounds(name, v, r); err != nil {
				return nil, err
			}
		}
		return r, nil
	case reason == notMemory:
		// 2^63 is past every bound but an unsigned 64-bit one: taken,
		// the parameter takes any amount.
		r.kind = "kindMemory"
		r.mlo, r.mhi = 0, math.MaxUint64
		return r, c.memoryBounds(name, "9223372036854775808", r)
	case reason == notMemoryPct:
		r.kind = "kindMemoryPercent"
		r.lo, r.hi = math.MinInt64, math.MaxInt64
		why, err := c.set(name, "9223372036854775807%")
		if err != nil {
			return nil, err
		}
		n, ok := strings.CutPrefix(why, "percentage argument must be less or equal to ")
		if !ok {
			return nil, fmt.Errorf("percentage past the bound: %q", why)
		}
		if r.pctMax, err = strconv.ParseInt(n, 10, 64); err != nil {
			return nil, err
		}
		return r, c.bounds(name, "9223372036854775807", r)
	}
	return nil, fmt.Errorf("no rule for %q", reason)
}

// bounds sets v, which must be refused for its bounds, and reads them
// from the reason.
func (c *client) bounds(name, v string, r *rule) error {
	why, err := c.set(name, v)
	if err != nil {
		return err
	}
	if why == "" {
		return nil // in range: the bound is the type's
	}
	var lo, hi int64
	if _, err := fmt.Sscanf(why, "argument must be between %d and %d inclusive", &lo, &hi); err != nil {
		return fmt.Errorf("%s: bounds from %q: %v", v, why, err)
	}
	r.lo, r.hi = lo, hi
	return nil
}

// memoryBounds is bounds for a memory parameter (unsigned bounds).
func (c *client) memoryBounds(name, v string, r *rule) error {
	why, err := c.set(name, v)
	if err != nil || why == "" {
		return err
	}
	if _, err := fmt.Sscanf(why, "argument must be between %d and %d inclusive", &r.mlo, &r.mhi); err != nil {
		return fmt.Errorf("%s: bounds from %q: %v", v, why, err)
	}
	return nil
}

func emit(version string, rules []rule) ([]byte, error) {
	sort.Slice(rules, func(i, j int) bool { return rules[i].name < rules[j].name })
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by tools/genconfig from redis-server %s; DO NOT EDIT.\n\n", version)
	b.WriteString("package redisconf\n\nimport \"math\"\n\n")
	b.WriteString("// redisValueRules are the values Redis takes for each parameter it\n")
	b.WriteString("// changes at run time (aliases included), read off its CONFIG SET errors.\n")
	b.WriteString("var redisValueRules = map[string]valueRule{\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "\t%q: {kind: %s", r.name, r.kind)
		switch r.kind {
		case "kindInt", "kindMemoryPercent":
			fmt.Fprintf(&b, ", lo: %s, hi: %s", num(r.lo), num(r.hi))
		case "kindMemory":
			mhi := strconv.FormatUint(r.mhi, 10)
			if r.mhi == math.MaxUint64 {
				mhi = "math.MaxUint64"
			}
			fmt.Fprintf(&b, ", mlo: %d, mhi: %s", r.mlo, mhi)
		}
		if r.kind == "kindMemoryPercent" {
			fmt.Fprintf(&b, ", pctMax: %d", r.pctMax)
		}
		if r.kind == "kindEnum" {
			fmt.Fprintf(&b, ", enum: %#v", r.enum)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

func num(n int64) string {
	switch n {
	case math.MinInt64:
		return "math.MinInt64"
	case math.MaxInt64:
		return "math.MaxInt64"
	}
	return strconv.FormatInt(n, 10)
}

// client talks to the redis-server being probed.
type client struct{ conn *difftest.Conn }

func dial(addr string) (*client, error) {
	conn, err := difftest.Dial(addr)
	if err != nil {
		return nil, err
	}
	return &client{conn: conn}, nil
}

func (c *client) do(args ...string) (difftest.Value, error) { return c.conn.DoStrings(args...) }

// set sends CONFIG SET name v and returns Redis's reason for refusing it
// ("" when taken).
func (c *client) set(name, v string) (string, error) {
	reply, err := c.do("CONFIG", "SET", name, v)
	if err != nil {
		return "", err
	}
	if reply.Kind != difftest.Error {
		return "", nil
	}
	prefix := fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - ", name)
	why, ok := strings.CutPrefix(string(reply.Str), prefix)
	if !ok {
		return "", fmt.Errorf("unexpected error %q", reply.Str)
	}
	return why, nil
}

func (c *client) names() ([]string, error) {
	reply, err := c.do("CONFIG", "GET", "*")
	if err != nil {
		return nil, err
	}
	var names []string
	for i := 0; i+1 < len(reply.Elems); i += 2 {
		names = append(names, string(reply.Elems[i].Str))
	}
	sort.Strings(names)
	return names, nil
}

func (c *client) version() (string, error) {
	reply, err := c.do("INFO", "server")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(reply.Str), "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("no redis_version in INFO server")
}
