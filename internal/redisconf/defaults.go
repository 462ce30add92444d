package redisconf

import "strings"

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
