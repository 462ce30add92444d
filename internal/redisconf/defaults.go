package redisconf

import (
	"strconv"
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
	return false
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

// redisEnums are the values Redis 7.0.15 accepts for its enumerated
// parameters that a server here keeps fixed, in the order its error
// lists them.
var redisEnums = map[string][]string{
	"appendfsync":      {"everysec", "always", "no"},
	"maxmemory-policy": {"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"},
	"loglevel":         {"debug", "verbose", "notice", "warning"},
	// Enumerations whose default is yes or no: not bools.
	"sanitize-dump-payload": {"no", "yes", "clients"},
	"oom-score-adj":         {"no", "yes", "relative", "absolute"},
	"tls-auth-clients":      {"no", "yes", "optional"},
}

// redisIntegers are integer parameters of Redis's that a server here keeps
// fixed.
var redisIntegers = []string{"timeout", "hz", "tcp-keepalive", "lua-time-limit", "busy-reply-threshold"}

// redisValueReason is the reason Redis 7.0.15 gives for a bad value of a
// parameter it can change at run time and a server here keeps fixed, or
// "" when Redis would take the value: a value Redis rejects gets Redis's
// error, not the immutable one, which is for values Redis would apply.
// Bool parameters are those whose default is yes or no.
func redisValueReason(name, v string) string {
	name = strings.ToLower(name)
	if opts, ok := redisEnums[name]; ok {
		if !containsFold(opts, v) {
			return "argument(s) must be one of the following: " + strings.Join(opts, ", ")
		}
		return ""
	}
	if name == "save" {
		return saveReason(v)
	}
	if containsFold(redisIntegers, name) {
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return resp.ConfigReasonNotInteger
		}
		return ""
	}
	for _, d := range redisDefaults {
		if d[0] == name && (d[1] == "yes" || d[1] == "no") {
			if !strings.EqualFold(v, "yes") && !strings.EqualFold(v, "no") {
				return resp.ConfigReasonYesNo
			}
			return ""
		}
	}
	return ""
}

// saveReason checks a save value as Redis does: pairs of seconds and
// changes, both non-negative integers, or empty (no save points).
func saveReason(v string) string {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "Invalid save parameters"
	}
	for _, x := range f {
		if n, err := strconv.ParseInt(x, 10, 64); err != nil || n < 0 {
			return "Invalid save parameters"
		}
	}
	return ""
}
