// Package redisconf serves CONFIG SET and CONFIG GET over a table of
// parameters with Redis 7.0's checks and error texts, and holds the two
// parameters a client endpoint changes at run time (requirepass and
// maxclients). The node and the proxy share it, so that both answer
// CONFIG exactly alike and each applies what concerns its own clients.
package redisconf

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/shardgate/shardgate/internal/glob"
	"github.com/shardgate/shardgate/internal/resp"
)

// Param is one parameter: how to read it and, when the server can change
// it at run time, how to check and apply a new value.
type Param struct {
	Name string
	Get  func() string
	// Check validates a value and returns the function that applies it
	// (so a multi-parameter CONFIG SET applies nothing when one value is
	// bad) or the reason it is refused; nil means the parameter is
	// immutable.
	Check func(v string) (apply func(), reason string)
	// Hidden: CONFIG GET lists it for its exact name only, never for a
	// pattern (Redis's HIDDEN_CONFIG debugging parameters).
	Hidden bool
}

// Table is a server's parameters, in the order CONFIG GET lists them.
type Table []Param

// Lookup finds a parameter by name, ignoring case.
func (t Table) Lookup(name string) *Param {
	for i := range t {
		if strings.EqualFold(t[i].Name, name) {
			return &t[i]
		}
	}
	return nil
}

// Get answers CONFIG GET pattern [pattern ...]: a map of the matching
// parameters, each once. An exact name (no glob characters) is echoed as
// the client spelled it, as Redis does.
func (t Table) Get(w *resp.Writer, patterns [][]byte) {
	type match struct{ key, val string }
	var out []match
	seen := map[*Param]bool{}
	for _, a := range patterns {
		pat := string(a)
		// Redis looks for glob characters, and matches a glob, in the
		// pattern as a C string: "maxc*\x00z" is "maxc*". An exact name
		// is looked up whole, so one with a NUL matches nothing.
		cpat := resp.CString(a, len(a))
		if !bytes.ContainsAny(cpat, "[*?") {
			if p := t.Lookup(pat); p != nil && !seen[p] {
				seen[p] = true
				out = append(out, match{pat, p.Get()})
			}
			continue
		}
		// Names are lower case, so a lower-cased pattern matches them
		// the way Redis's case-insensitive stringmatch does.
		lp := bytes.ToLower(cpat)
		for i := range t {
			p := &t[i]
			if !seen[p] && !p.Hidden && glob.MatchString(lp, p.Name) {
				seen[p] = true
				out = append(out, match{p.Name, p.Get()})
			}
		}
	}
	w.Map(len(out))
	for _, m := range out {
		w.BulkString(m.key)
		w.BulkString(m.val)
	}
}

// Set answers CONFIG SET name value [name value ...] in Redis 7.0's
// order of checks: first the names, in order (the first one unknown,
// immutable, protected or repeated is the error), then the values, in
// order; nothing is applied
// unless every value passes. A parameter Redis changes at run time but
// this server cannot is refused at the value step (it may be "set" to the
// value it has), where Redis would check the value.
func (t Table) Set(w *resp.Writer, pairs [][]byte) {
	if len(pairs)%2 != 0 {
		w.Error(resp.ErrSyntax)
		return
	}
	n := len(pairs) / 2
	params := make([]*Param, n)
	keys := make([]string, n) // what makes two names the same parameter
	var unknown, errName, reason string
	isUnknown := false // unknown may be "", a name too
	for i := range n {
		name := string(pairs[2*i])
		p := t.Lookup(name)
		if p == nil && !IsRedisName(name) {
			if reason == "" && !isUnknown {
				unknown, isUnknown = name, true
			}
			continue
		}
		if isUnknown || reason != "" {
			continue
		}
		switch {
		case p != nil && p.Check != nil:
		case containsFold(redisImmutable, name):
			errName, reason = name, resp.ConfigReasonImmutable
			continue
		case containsFold(redisProtected, name):
			errName, reason = name, resp.ConfigReasonProtected
			continue
		}
		params[i], keys[i] = p, strings.ToLower(name)
		for j := range i {
			if keys[j] == keys[i] {
				errName, reason = name, resp.ConfigReasonDuplicate
				break
			}
		}
	}
	switch {
	case isUnknown:
		w.Error(fmt.Sprintf(resp.ErrConfigSetUnknown, resp.CString([]byte(unknown), len(unknown))))
		return
	case reason != "":
		w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, errName, reason))
		return
	}
	// Every value first, in order, as Redis sets them one by one and
	// fails at the first it refuses: a value Redis would refuse gets
	// Redis's reason before this server's own refusal of a change it
	// cannot make to an earlier parameter.
	applies := make([]func(), n)
	values := make([]string, n)
	for i, p := range params {
		value := redisValue(keys[i], pairs[2*i+1])
		values[i] = value
		if p == nil || p.Check == nil {
			if reason := redisValueReason(keys[i], value); reason != "" {
				w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, keys[i], reason))
				return
			}
			continue
		}
		apply, reason := p.Check(value)
		if apply == nil {
			// Value errors name the parameter as Redis spells it.
			w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, p.Name, reason))
			return
		}
		applies[i] = apply
	}
	for i, p := range params {
		if p != nil && p.Check != nil {
			continue
		}
		// Redis could change it; this server keeps the value it has.
		if p == nil || !sameValue(keys[i], values[i], p.Get()) {
			w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, keys[i], resp.ConfigReasonImmutable))
			return
		}
		applies[i] = func() {}
	}
	for _, apply := range applies {
		apply()
	}
	w.OK()
}

// ValueDependent reports whether CONFIG SET's answer for name depends on
// a value t does not hold: a parameter of Redis's that t lacks and that
// Redis changes at run time, which may be "set" to the value it has
// elsewhere (a proxy asks its node for it and adds it to t).
func (t Table) ValueDependent(name string) bool {
	return t.Lookup(name) == nil && IsRedisName(name) &&
		!containsFold(redisImmutable, name) && !containsFold(redisProtected, name)
}

// sameValue reports whether a CONFIG SET value for the parameter name
// says what the current one does: the same words in any case (yes,
// NoEviction), the same amount of memory however written (0 and 0mb, 1gb
// and 1073741824; 0 and 0% for a percentage), or, for
// client-output-buffer-limit, limits that leave every class as it is
// (the classes named, in any order and spelling, over the others).
func sameValue(name, v, current string) bool {
	if strings.EqualFold(v, current) {
		return true
	}
	if name == "client-output-buffer-limit" {
		return sameOutputLimits(v, current)
	}
	a, okA := memoryOrPercent(v)
	b, okB := memoryOrPercent(current)
	return okA && okB && a == b
}

// memoryOrPercent reads a memory amount as MemToULL does, or a percentage
// ("5%") as Redis keeps one: negated.
func memoryOrPercent(v string) (int64, bool) {
	if strings.HasSuffix(v, "%") {
		n, ok := percent(v)
		return -n, ok
	}
	n, ok := MemToULL(v)
	return int64(n), ok
}

// sameOutputLimits reports whether setting client-output-buffer-limit to
// v leaves current's limits as they are: v's classes (replica is slave)
// set over current's, as Redis sets only the classes named.
func sameOutputLimits(v, current string) bool {
	limits := func(s string) (map[string][3]int64, bool) {
		words := splitSpaces(s)
		if len(words)%4 != 0 {
			return nil, false
		}
		m := map[string][3]int64{}
		for i := 0; i < len(words); i += 4 {
			class := strings.ToLower(words[i])
			if class == "replica" {
				class = "slave"
			}
			hard, okH := MemToULL(words[i+1])
			soft, okS := MemToULL(words[i+2])
			secs, okT := strtoll(words[i+3])
			if !okH || !okS || !okT {
				return nil, false
			}
			m[class] = [3]int64{int64(hard), int64(soft), int64(int32(secs))}
		}
		return m, true
	}
	set, okV := limits(v)
	cur, okC := limits(current)
	if !okV || !okC {
		return false
	}
	for class, l := range set {
		if c, ok := cur[class]; !ok || c != l {
			return false
		}
	}
	return true
}

// ParseMemory parses a memory amount for the command line's size flags:
// digits, then an optional unit b, k (1000), kb (1024), m, mb, g or gb in
// any case; an amount past 2^64-1 bytes is an error. CONFIG SET reads
// values as Redis does instead (MemToULL).
func ParseMemory(s string) (uint64, bool) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	mul, ok := memoryUnit(s[i:])
	if !ok || n > math.MaxUint64/mul {
		return 0, false
	}
	return n * mul, true
}

// MemToULL reads a memory value exactly as Redis 7.0's memtoull, which
// CONFIG SET uses: up to 127 digits, then an optional unit as ParseMemory
// takes; no digits at all read as 0 ("", "mb"), digits past 2^64-1 as
// 2^64-1, and the product with the unit wraps around 2^64. s is a C
// string to memtoull: it ends at its first NUL.
func MemToULL(s string) (uint64, bool) {
	if j := strings.IndexByte(s, 0); j >= 0 {
		s = s[:j]
	}
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	mul, ok := memoryUnit(s[i:])
	if !ok || i >= 128 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if err != nil {
		n = 0
		if i > 0 {
			n = math.MaxUint64 // strtoull saturates
		}
	}
	return n * mul, true
}

// memoryUnit is the multiplier of a memory unit ("" for bytes).
func memoryUnit(u string) (uint64, bool) {
	switch strings.ToLower(u) {
	case "", "b":
		return 1, true
	case "k":
		return 1000, true
	case "kb":
		return 1 << 10, true
	case "m":
		return 1000 * 1000, true
	case "mb":
		return 1 << 20, true
	case "g":
		return 1000 * 1000 * 1000, true
	case "gb":
		return 1 << 30, true
	}
	return 0, false
}

// Endpoint holds requirepass and maxclients, which other goroutines
// (accept, AUTH, new clients) read while CONFIG SET changes them.
type Endpoint struct {
	mu      sync.RWMutex
	pass    string
	clients int
	// capacity is the most clients the open-files limit allows (0: no
	// known limit).
	capacity int
}

// ReservedFDs is what Redis keeps of the open-files limit for its own
// files (CONFIG_MIN_RESERVED_FDS): logs, listeners, and here the node
// connections of a proxy's shared pool.
const ReservedFDs = 32

// NewEndpoint returns an Endpoint with the given starting values. As
// Redis at start, it lowers maxClients to what the open-files limit
// allows, at fdsPerClient descriptors per client (a proxy's client may
// hold a node connection of its own) beyond ReservedFDs; lowered reports
// the value asked for when it did, 0 otherwise. Without this a server at
// the limit could not accept (or dial) at all.
func NewEndpoint(pass string, maxClients, fdsPerClient int) (e *Endpoint, lowered int) {
	e = &Endpoint{pass: pass, clients: maxClients}
	if lim := openFilesLimit(); lim > 0 && lim < 1<<40 {
		e.capacity = max(1, (int(lim)-ReservedFDs)/max(1, fdsPerClient))
		if maxClients > e.capacity {
			e.clients, lowered = e.capacity, maxClients
		}
	}
	return e, lowered
}

// Capacity is the most clients the open-files limit allows, 0 if unknown.
func (e *Endpoint) Capacity() int { return e.capacity }

// RequirePass is the password clients must give ("" for none).
func (e *Endpoint) RequirePass() string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.pass
}

// MaxClients is the most client connections served at once.
func (e *Endpoint) MaxClients() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.clients
}

// RequirePassParam is the requirepass parameter, settable.
func (e *Endpoint) RequirePassParam() Param {
	return Param{Name: "requirepass", Get: e.RequirePass, Check: func(v string) (func(), string) {
		return func() {
			e.mu.Lock()
			e.pass = v
			e.mu.Unlock()
		}, ""
	}}
}

// MaxClientsParam is the maxclients parameter, settable within Redis's
// bounds.
func (e *Endpoint) MaxClientsParam() Param {
	get := func() string { return strconv.Itoa(e.MaxClients()) }
	return Param{Name: "maxclients", Get: get, Check: func(v string) (func(), string) {
		// Redis parses numbers with string2ll: "+3", "03" and "-0" are
		// not integers.
		n, ok := resp.ParseInt([]byte(v))
		if !ok {
			return nil, resp.ConfigReasonNotInteger
		}
		if n < 1 || n > 4294967295 {
			return nil, fmt.Sprintf(resp.ConfigReasonRange, 1, int64(4294967295))
		}
		// Redis adds its reserved descriptors to maxclients in 32 bits
		// before it compares with the open-files limit: from 2^32-32 the
		// sum wraps, the check passes and the value is kept.
		wraps := n+ReservedFDs > 1<<32-1
		if e.capacity > 0 && n > int64(e.capacity) && !wraps {
			return nil, fmt.Sprintf(resp.ConfigReasonMaxClientsOS, e.capacity)
		}
		return func() {
			e.mu.Lock()
			e.clients = int(n)
			e.mu.Unlock()
		}, ""
	}}
}

// ListenHostPort splits a server's listening address for CONFIG GET bind
// and port: the listener's (ln, nil before it listens) or else the
// configured one.
func ListenHostPort(configured string, ln net.Addr) (host, port string) {
	addr := configured
	if ln != nil {
		addr = ln.String()
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "0"
	}
	return h, p
}

// ParseYesNo reads a boolean parameter as Redis's yesnotoi does: yes or
// no in any case.
func ParseYesNo(v string) (on, ok bool) {
	switch {
	case strings.EqualFold(v, "yes"):
		return true, true
	case strings.EqualFold(v, "no"):
		return false, true
	}
	return false, false
}
