package redisconf

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/shardgate/shardgate/internal/resp"
)

// IsRedisName reports whether Redis 7.0.15 knows the parameter (or
// alias). A CONFIG SET of one a server does not serve answers Redis's
// immutable-config error rather than the unknown-option one, since Redis
// would accept the name.
func IsRedisName(name string) bool {
	for _, d := range redisDefaults {
		if strings.EqualFold(d[0], name) {
			return true
		}
	}
	for _, d := range redisHidden {
		if strings.EqualFold(d.name, name) {
			return true
		}
	}
	return false
}

// redisHidden are Redis 7.0.15's hidden parameters (debugging aids that
// CONFIG GET answers for their exact name but no pattern matches), with
// their defaults and the values CONFIG SET takes (config.c; not in
// CONFIG GET *, so tools/genconfig does not see them).
var redisHidden = []struct {
	name, value string
	rule        valueRule
}{
	{"key-load-delay", "0", valueRule{kind: kindInt, lo: math.MinInt32, hi: math.MaxInt32}},
	{"loading-process-events-interval-bytes", "2097152", valueRule{kind: kindInt, lo: 1024, hi: math.MaxInt32}},
	{"rdb-key-save-delay", "0", valueRule{kind: kindInt, lo: math.MinInt32, hi: math.MaxInt32}},
	{"use-exit-on-panic", "no", valueRule{kind: kindBool}},
	{"watchdog-period", "0", valueRule{kind: kindInt, lo: 0, hi: math.MaxInt32}},
}

// redisImmutable are the parameters Redis 7.0.15 refuses to change at run
// time whatever the value (CONFIG SET of each to its current value, on a
// default redis-server), and redisProtected those it refuses while
// enable-protected-configs is no, its default.
var (
	redisImmutable = []string{"aclfile", "always-show-logo", "aof_rewrite_cpulist", "appenddirname", "appendfilename",
		"bgsave_cpulist", "bio_cpulist", "cluster-config-file", "cluster-enabled", "cluster-port", "daemonize",
		"databases", "disable-thp", "enable-debug-command", "enable-module-command", "enable-protected-configs",
		"io-threads", "io-threads-do-reads", "logfile", "pidfile", "rdbchecksum", "replicaof", "server_cpulist",
		"set-proc-title", "slaveof", "socket-mark-id", "supervised", "syslog-enabled", "syslog-facility",
		"syslog-ident", "tcp-backlog", "unixsocket", "unixsocketperm"}
	redisProtected = []string{"dbfilename", "dir"}
)

// WithRedisDefaults returns t followed by every other parameter Redis
// 7.0.15 knows, each reading Redis's default and immutable, except the
// names in skip. A server serves what it really does in t; the rest are
// settings it has no counterpart for (encodings, replication, TLS, ...),
// which a default Redis reports, so CONFIG GET * lists what tools expect
// and CONFIG GET of a name agrees with CONFIG SET calling it immutable.
// skip is for names whose Redis default would misdescribe the server.
func (t Table) WithRedisDefaults(skip ...string) Table {
	out := append(Table(nil), t...)
	for _, d := range redisDefaults {
		name, val := d[0], d[1]
		if t.Lookup(name) != nil || containsFold(skip, name) {
			continue
		}
		out = append(out, Param{Name: name, Get: func() string { return val }})
	}
	for _, d := range redisHidden {
		if t.Lookup(d.name) != nil || containsFold(skip, d.name) {
			continue
		}
		val := d.value
		out = append(out, Param{Name: d.name, Get: func() string { return val }, Hidden: true})
	}
	return out
}

func containsFold(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// valueKind is what a Redis parameter takes as its value.
type valueKind uint8

const (
	kindAny           valueKind = iota // any string
	kindBool                           // yes or no
	kindEnum                           // one of enum
	kindInt                            // an integer (string2ll) in lo..hi
	kindMemory                         // a memory amount (memtoull) in mlo..mhi
	kindMemoryPercent                  // a memory amount in lo..hi, or a percentage up to pctMax
)

// valueRule is what CONFIG SET of one Redis parameter accepts
// (redisValueRules, generated from redis-server by tools/genconfig).
type valueRule struct {
	kind     valueKind
	lo, hi   int64
	mlo, mhi uint64
	pctMax   int64
	enum     []string
}

// reason is Redis's reason for refusing v, or "" when Redis takes it.
func (r valueRule) reason(v string) string {
	switch r.kind {
	case kindBool:
		if !strings.EqualFold(v, "yes") && !strings.EqualFold(v, "no") {
			return resp.ConfigReasonYesNo
		}
	case kindEnum:
		if !containsFold(r.enum, v) {
			return resp.ConfigReasonEnum + strings.Join(r.enum, ", ")
		}
	case kindInt:
		n, ok := resp.ParseInt([]byte(v))
		if !ok {
			return resp.ConfigReasonNotInteger
		}
		if n < r.lo || n > r.hi {
			return fmt.Sprintf(resp.ConfigReasonRange, r.lo, r.hi)
		}
	case kindMemory:
		n, ok := MemToULL(v)
		if !ok {
			return resp.ConfigReasonNotMemory
		}
		if n < r.mlo || n > r.mhi {
			return fmt.Sprintf(resp.ConfigReasonRange, r.mlo, r.mhi)
		}
	case kindMemoryPercent:
		// Redis stores a percentage as its negative, and so reads an
		// amount past 2^63-1 bytes as one.
		var n int64
		if m, ok := MemToULL(v); ok {
			n = int64(m)
		} else if p, ok := percent(v); ok {
			n = -p
		} else {
			return resp.ConfigReasonNotMemoryPct
		}
		if n < 0 {
			if n < -r.pctMax {
				return fmt.Sprintf(resp.ConfigReasonPercentMax, r.pctMax)
			}
		} else if n < r.lo || n > r.hi {
			return fmt.Sprintf(resp.ConfigReasonRange, r.lo, r.hi)
		}
	}
	return ""
}

// percent reads "<n>%" with n a non-negative string2ll integer.
func percent(v string) (int64, bool) {
	num, ok := strings.CutSuffix(v, "%")
	if !ok || num == "" {
		return 0, false
	}
	n, ok := resp.ParseInt([]byte(num))
	return n, ok && n >= 0
}

// redisValue is a CONFIG SET value of the parameter name (lower case) as
// Redis's parser for it reads the argument: up to its first NUL for the
// yes/no, enum and memory parameters (strcasecmp, memtoull) and for those
// parsed character by character; for the parameters that take several
// words, split on spaces first and each word up to its first NUL; whole
// for integers (string2ll over the argument's length) and strings.
func redisValue(name string, raw []byte) string {
	cut := false
	switch name {
	case "save", "client-output-buffer-limit", "oom-score-adj-values", "shutdown-on-sigint", "shutdown-on-sigterm":
		// MULTI_ARG_CONFIG: sdssplitlen over the whole argument.
		words := bytes.Split(raw, []byte(" "))
		for i, w := range words {
			words[i] = resp.CString(w, len(w))
		}
		return string(bytes.Join(words, []byte(" ")))
	case "notify-keyspace-events", "cluster-announce-hostname":
		cut = true
	default:
		if r, ok := ruleOf(name); ok {
			cut = r.kind == kindBool || r.kind == kindEnum || r.kind == kindMemory
		}
	}
	if cut {
		raw = resp.CString(raw, len(raw))
	}
	return string(raw)
}

// ruleOf is the value rule of the parameter name (lower case), hidden ones
// included.
func ruleOf(name string) (valueRule, bool) {
	if r, ok := redisValueRules[name]; ok {
		return r, true
	}
	for _, d := range redisHidden {
		if d.name == name {
			return d.rule, true
		}
	}
	return valueRule{}, false
}

// redisValueReason is the reason Redis 7.0.15 gives for a bad value of a
// parameter it can change at run time and a server here keeps fixed, or
// "" when Redis would take the value: a value Redis rejects gets Redis's
// error, not the immutable one, which is for values Redis would apply.
func redisValueReason(name, v string) string {
	name = strings.ToLower(name)
	switch name {
	case "save":
		return saveReason(v)
	case "client-output-buffer-limit":
		return outputLimitReason(v)
	case "notify-keyspace-events":
		if i := strings.IndexFunc(v, func(c rune) bool { return !strings.ContainsRune(keyspaceEventClasses, c) }); i >= 0 {
			return resp.ConfigReasonEventClass
		}
		return ""
	case "oom-score-adj-values":
		return oomScoreReason(v)
	case "shutdown-on-sigint", "shutdown-on-sigterm":
		// Several flags may be given, as words, each one of the enum's.
		r, _ := ruleOf(name)
		for _, w := range strings.Split(v, " ") {
			if !containsFold(r.enum, w) {
				return resp.ConfigReasonEnum + strings.Join(r.enum, ", ")
			}
		}
		return ""
	case "cluster-announce-hostname":
		for _, c := range []byte(v) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
				return resp.ConfigReasonHostname
			}
		}
		return ""
	}
	if r, ok := ruleOf(name); ok {
		return r.reason(v)
	}
	return ""
}

// keyspaceEventClasses are the characters notify-keyspace-events takes
// (case matters).
const keyspaceEventClasses = "Ag$lshzxeKEtmdn"

// outputLimitReason checks client-output-buffer-limit as Redis does:
// words split at each single space, in fours of class, hard and soft
// limits (memory amounts) and soft seconds (a non-negative strtoll).
func outputLimitReason(v string) string {
	words := splitSpaces(v)
	if len(words)%4 != 0 {
		return resp.ConfigReasonOutputLimitArgs
	}
	for i := 0; i < len(words); i += 4 {
		switch strings.ToLower(words[i]) {
		case "normal", "slave", "replica", "pubsub":
		default:
			return resp.ConfigReasonOutputLimitClass
		}
		_, hardOK := MemToULL(words[i+1])
		_, softOK := MemToULL(words[i+2])
		secs, secsOK := strtoll(words[i+3])
		// Redis keeps the seconds in an int: 2^31 and up wrap.
		if !hardOK || !softOK || !secsOK || int32(secs) < 0 {
			return resp.ConfigReasonOutputLimitValue
		}
	}
	return ""
}

// oomScoreReason checks oom-score-adj-values: three words split at each
// single space, each a strtoll integer within -2000..2000.
func oomScoreReason(v string) string {
	words := splitSpaces(v)
	if len(words) != 3 {
		return resp.ConfigReasonWrongArgs
	}
	for _, w := range words {
		if n, ok := strtoll(w); !ok || n < -2000 || n > 2000 {
			return resp.ConfigReasonOOMScore
		}
	}
	return ""
}

// strtoll reads s as C's strtoll with the whole string consumed: leading
// white space and a sign allowed, no digits at all read as 0, and a value
// out of range saturates (so it fails any bound check after).
func strtoll(s string) (int64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
		if t == "" {
			return 0, false // strtoll stops before the sign
		}
	}
	if t == "" {
		return 0, s == "" // nothing read: the end pointer is s itself
	}
	var n int64
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-int64(c-'0'))/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// saveReason checks a save value as Redis does: words split at each
// single space, in pairs of seconds (at least 1) and changes (at least
// 0), each a whole strtoll number; "" is no save points.
func saveReason(v string) string {
	words := splitSpaces(v)
	if len(words)%2 != 0 {
		return resp.ConfigReasonSave
	}
	for i, w := range words {
		n, ok := strtoll(w)
		if !ok || n < int64(1-i%2) {
			return resp.ConfigReasonSave
		}
	}
	return ""
}

// splitSpaces splits a multi-word CONFIG SET value as Redis does, at
// each single space (two spaces make an empty word); "" has no words.
func splitSpaces(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, " ")
}
