package node

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/node/engine"
)

// CONFIG GET, SET, RESETSTAT and HELP.
//
// The node reports the parameters clients and tools ask a Redis 7.0.15
// cluster node for, with the values that describe what this node really
// does: no automatic RDB-style snapshots (save ""), the append-only log as
// started (appendonly, appendfsync, auto-aof-rewrite-*, dir), no eviction
// (maxmemory 0, noeviction), one database served (but databases 16, which
// is what a Redis cluster node reports too). Parameters the node cannot
// change at run time answer CONFIG SET with Redis's "can't set immutable
// config"; only requirepass and maxclients are settable because only they
// change behaviour here. CONFIG GET * lists this table, which is a subset
// of Redis's ~190 parameters.

// runtimeConfig is the settable part of the configuration, read by other
// goroutines (accept, AUTH, new clients).
type runtimeConfig struct {
	mu      sync.RWMutex
	pass    string
	clients int
}

func (rc *runtimeConfig) init(o Options) {
	rc.pass = o.RequirePass
	rc.clients = o.MaxClients
}

func (rc *runtimeConfig) requirePass() string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.pass
}

func (rc *runtimeConfig) maxClients() int {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.clients
}

// configParam is one parameter: how to read it and, when the node can
// change it at run time, how to check and apply a new value.
type configParam struct {
	name string
	get  func(s *Server) string
	// check validates a value and returns the function that applies it
	// (so a multi-parameter CONFIG SET applies nothing when one value is
	// bad); nil means the parameter is immutable.
	check func(s *Server, v string) (apply func(), reason string)
}

func fixed(v string) func(*Server) string { return func(*Server) string { return v } }

// configParams is in Redis's order of appearance in redis.conf, roughly;
// CONFIG GET with a pattern lists matches in this order.
var configParams = []configParam{
	{name: "bind", get: func(s *Server) string { h, _ := s.listenHostPort(); return h }},
	{name: "port", get: func(s *Server) string { _, p := s.listenHostPort(); return p }},
	{name: "timeout", get: fixed("0")},
	{name: "databases", get: fixed("16")},
	{name: "save", get: fixed("")},
	{name: "appendonly", get: func(s *Server) string { return yesNo(s.aof != nil) }},
	{name: "appendfsync", get: func(s *Server) string {
		if s.opts.AOF == nil {
			return "everysec"
		}
		return s.opts.AOF.Policy.String()
	}},
	{name: "auto-aof-rewrite-percentage", get: func(s *Server) string {
		if s.opts.AOF == nil {
			return "100"
		}
		return strconv.Itoa(s.opts.AOF.RewritePercent)
	}},
	{name: "auto-aof-rewrite-min-size", get: func(s *Server) string {
		if s.opts.AOF == nil {
			return strconv.Itoa(64 << 20)
		}
		return strconv.FormatInt(s.opts.AOF.RewriteMinSize, 10)
	}},
	{name: "dir", get: func(s *Server) string {
		d, err := filepath.Abs(s.opts.Dir) // as Redis: absolute ("" is the working directory)
		if err != nil {
			return s.opts.Dir
		}
		return d
	}},
	{name: "requirepass", get: func(s *Server) string { return s.cfg.requirePass() }, check: checkRequirePass},
	{name: "maxclients", get: func(s *Server) string { return strconv.Itoa(s.cfg.maxClients()) }, check: checkMaxClients},
	{name: "maxmemory", get: fixed("0")},
	{name: "maxmemory-policy", get: fixed("noeviction")},
	{name: "maxmemory-samples", get: fixed("5")},
	{name: "maxmemory-eviction-tenacity", get: fixed("10")},
	{name: "maxmemory-clients", get: fixed("0")},
	{name: "lua-time-limit", get: fixed("5000")},
	{name: "busy-reply-threshold", get: fixed("5000")},
	{name: "cluster-enabled", get: fixed("yes")},
	{name: "slowlog-log-slower-than", get: fixed("10000")},
	{name: "slowlog-max-len", get: fixed("128")},
	{name: "notify-keyspace-events", get: fixed("")},
	{name: "hz", get: fixed("10")},
	{name: "proto-max-bulk-len", get: fixed("536870912")},
}

// redisConfigNames are the parameters (and aliases) Redis 7.0.15 knows. A
// CONFIG SET of one the node does not serve answers Redis's immutable-config
// error rather than the unknown-option one, since Redis would accept the
// name.
const redisConfigNames = "" +
	"acl-pubsub-default aclfile acllog-max-len active-defrag-cycle-max active-defrag-cycle-min " +
	"active-defrag-ignore-bytes active-defrag-max-scan-fields active-defrag-threshold-lower " +
	"active-defrag-threshold-upper active-expire-effort activedefrag activerehashing " +
	"always-show-logo aof-disable-auto-gc aof-load-truncated aof-rewrite-incremental-fsync " +
	"aof-timestamp-enabled aof-use-rdb-preamble aof_rewrite_cpulist appenddirname appendfilename " +
	"appendfsync appendonly auto-aof-rewrite-min-size auto-aof-rewrite-percentage bgsave_cpulist " +
	"bind bind-source-addr bio_cpulist busy-reply-threshold client-output-buffer-limit " +
	"client-query-buffer-limit cluster-allow-pubsubshard-when-down cluster-allow-reads-when-down " +
	"cluster-allow-replica-migration cluster-announce-bus-port cluster-announce-hostname " +
	"cluster-announce-ip cluster-announce-port cluster-announce-tls-port cluster-config-file " +
	"cluster-enabled cluster-link-sendbuf-limit cluster-migration-barrier cluster-node-timeout " +
	"cluster-port cluster-preferred-endpoint-type cluster-replica-no-failover " +
	"cluster-replica-validity-factor cluster-require-full-coverage cluster-slave-no-failover " +
	"cluster-slave-validity-factor crash-log-enabled crash-memcheck-enabled daemonize databases " +
	"dbfilename dir disable-thp dynamic-hz enable-debug-command enable-module-command " +
	"enable-protected-configs hash-max-listpack-entries hash-max-listpack-value " +
	"hash-max-ziplist-entries hash-max-ziplist-value hll-sparse-max-bytes hz ignore-warnings " +
	"io-threads io-threads-do-reads jemalloc-bg-thread latency-monitor-threshold latency-tracking " +
	"latency-tracking-info-percentiles lazyfree-lazy-eviction lazyfree-lazy-expire " +
	"lazyfree-lazy-server-del lazyfree-lazy-user-del lazyfree-lazy-user-flush lfu-decay-time " +
	"lfu-log-factor list-compress-depth list-max-listpack-size list-max-ziplist-size logfile " +
	"loglevel lua-time-limit masterauth masteruser maxclients maxmemory maxmemory-clients " +
	"maxmemory-eviction-tenacity maxmemory-policy maxmemory-samples min-replicas-max-lag " +
	"min-replicas-to-write min-slaves-max-lag min-slaves-to-write no-appendfsync-on-rewrite " +
	"notify-keyspace-events oom-score-adj oom-score-adj-values pidfile port proc-title-template " +
	"propagation-error-behavior protected-mode proto-max-bulk-len rdb-del-sync-files " +
	"rdb-save-incremental-fsync rdbchecksum rdbcompression repl-backlog-size repl-backlog-ttl " +
	"repl-disable-tcp-nodelay repl-diskless-load repl-diskless-sync repl-diskless-sync-delay " +
	"repl-diskless-sync-max-replicas repl-ping-replica-period repl-ping-slave-period repl-timeout " +
	"replica-announce-ip replica-announce-port replica-announced replica-ignore-disk-write-errors " +
	"replica-ignore-maxmemory replica-lazy-flush replica-priority replica-read-only " +
	"replica-serve-stale-data replicaof requirepass sanitize-dump-payload save server_cpulist " +
	"set-max-intset-entries set-proc-title shutdown-on-sigint shutdown-on-sigterm shutdown-timeout " +
	"slave-announce-ip slave-announce-port slave-ignore-maxmemory slave-lazy-flush slave-priority " +
	"slave-read-only slave-serve-stale-data slaveof slowlog-log-slower-than slowlog-max-len " +
	"socket-mark-id stop-writes-on-bgsave-error stream-node-max-bytes stream-node-max-entries " +
	"supervised syslog-enabled syslog-facility syslog-ident tcp-backlog tcp-keepalive timeout " +
	"tls-auth-clients tls-ca-cert-dir tls-ca-cert-file tls-cert-file tls-ciphers tls-ciphersuites " +
	"tls-client-cert-file tls-client-key-file tls-client-key-file-pass tls-cluster " +
	"tls-dh-params-file tls-key-file tls-key-file-pass tls-port tls-prefer-server-ciphers " +
	"tls-protocols tls-replication tls-session-cache-size tls-session-cache-timeout " +
	"tls-session-caching tracking-table-max-keys unixsocket unixsocketperm " +
	"zset-max-listpack-entries zset-max-listpack-value zset-max-ziplist-entries " +
	"zset-max-ziplist-value "

func isRedisConfigName(name string) bool {
	for _, n := range strings.Fields(redisConfigNames) {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

func lookupConfig(name string) *configParam {
	for i := range configParams {
		if strings.EqualFold(configParams[i].name, name) {
			return &configParams[i]
		}
	}
	return nil
}

func checkRequirePass(s *Server, v string) (func(), string) {
	return func() {
		s.cfg.mu.Lock()
		s.cfg.pass = v
		s.cfg.mu.Unlock()
	}, ""
}

func checkMaxClients(s *Server, v string) (func(), string) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, resp.ConfigReasonNotInteger
	}
	if n < 1 || n > 4294967295 {
		return nil, fmt.Sprintf(resp.ConfigReasonRange, 1, int64(4294967295))
	}
	return func() {
		s.cfg.mu.Lock()
		s.cfg.clients = int(n)
		s.cfg.mu.Unlock()
	}, ""
}

// listenHostPort splits the listening address for CONFIG GET bind/port.
func (s *Server) listenHostPort() (string, string) {
	addr := s.opts.Addr
	if a := s.Addr(); a != nil {
		addr = a.String()
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "0"
	}
	return h, p
}

// cmdConfigGet answers CONFIG GET pattern [pattern ...]: a map of the
// matching parameters, each once. An exact name (no glob characters) is
// echoed as the client spelled it, as Redis does.
func (s *Server) cmdConfigGet(c *client, args [][]byte) {
	type match struct{ key, val string }
	var out []match
	seen := map[*configParam]bool{}
	for _, a := range args[2:] {
		pat := string(a)
		if !strings.ContainsAny(pat, "[*?") {
			if p := lookupConfig(pat); p != nil && !seen[p] {
				seen[p] = true
				out = append(out, match{pat, p.get(s)})
			}
			continue
		}
		// Names are lower case, so a lower-cased pattern matches them
		// the way Redis's case-insensitive stringmatch does.
		lp := bytes.ToLower(a)
		for i := range configParams {
			p := &configParams[i]
			if !seen[p] && engine.MatchString(lp, p.name) {
				seen[p] = true
				out = append(out, match{p.name, p.get(s)})
			}
		}
	}
	c.w.Map(len(out))
	for _, m := range out {
		c.w.BulkString(m.key)
		c.w.BulkString(m.val)
	}
}

// cmdConfigSet answers CONFIG SET name value [name value ...]: every
// pair is checked before any is applied, so the command is all or nothing.
func (s *Server) cmdConfigSet(c *client, args [][]byte) {
	if len(args)%2 != 0 {
		c.w.Error(resp.ErrSyntax)
		return
	}
	pairs := args[2:]
	params := make([]*configParam, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		name := string(pairs[i])
		p := lookupConfig(name)
		if p == nil && !isRedisConfigName(name) {
			c.w.Error(fmt.Sprintf(resp.ErrConfigSetUnknown, name))
			return
		}
		if p == nil || p.check == nil {
			c.w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, name, resp.ConfigReasonImmutable))
			return
		}
		for _, q := range params {
			if q == p {
				c.w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, name, resp.ConfigReasonDuplicate))
				return
			}
		}
		params = append(params, p)
	}
	applies := make([]func(), len(params))
	for i, p := range params {
		apply, reason := p.check(s, string(pairs[2*i+1]))
		if apply == nil {
			// Value errors name the parameter as Redis spells it.
			c.w.Error(fmt.Sprintf(resp.ErrConfigSetFailed, p.name, reason))
			return
		}
		applies[i] = apply
	}
	for _, apply := range applies {
		apply()
	}
	c.w.OK()
}

// cmdConfigResetStat zeroes INFO's counters, as Redis's resetServerStats.
func (s *Server) cmdConfigResetStat(c *client, args [][]byte) {
	s.resetStats()
	c.w.OK()
}

func (s *Server) resetStats() {
	st := &s.stats
	for _, n := range []interface{ Store(int64) }{
		&st.connections, &st.commands, &st.rejected, &st.netInput, &st.netOutput,
		&st.unexpectedErrors,
		&s.ks.Stats.ExpiredKeys, &s.ks.Stats.KeyspaceHits, &s.ks.Stats.KeyspaceMiss,
	} {
		n.Store(0)
	}
	s.errs.reset()
	s.rates.Reset()
}

var configHelp = []string{
	"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET <pattern>",
	"    Return parameters matching the glob-like <pattern> and their values.",
	"SET <directive> <value>",
	"    Set the configuration <directive> to <value>.",
	"RESETSTAT",
	"    Reset statistics reported by the INFO command.",
	"REWRITE",
	"    Rewrite the configuration file.",
	"HELP",
	"    Prints this help.",
}

func (s *Server) cmdConfigHelp(c *client, args [][]byte) { writeHelp(c, configHelp) }

// writeHelp writes a HELP reply: an array of status lines.
func writeHelp(c *client, lines []string) { redisinfo.WriteHelp(&c.w, lines) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
