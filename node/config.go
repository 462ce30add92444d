package node

import (
	"math"
	"path/filepath"
	"strconv"

	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
)

// CONFIG GET, SET, RESETSTAT, REWRITE and HELP.
//
// The node reports the parameters clients and tools ask a Redis 7.0.15
// cluster node for, with the values that describe what this node really
// does: no automatic RDB-style snapshots (save ""), the append-only log as
// started (appendonly, appendfsync, auto-aof-rewrite-*, dir), maxmemory
// with the one policy the node has (noeviction), one database served (but
// databases 16, which is what a Redis cluster node reports too).
// Parameters the node cannot change at run time answer CONFIG SET with
// Redis's "can't set immutable config"; only requirepass, maxclients,
// maxmemory, the slowlog's and the latency tracking's are settable
// because only they change behaviour here. CONFIG
// GET * lists this table and then every
// other parameter Redis 7.0.15 knows with Redis's default value (settings
// with no counterpart here: encodings, replication, TLS, ...), except the
// persistence file names, which would describe files the node does not
// write.

// configParam is one parameter: how to read it, or, for the ones the
// node changes at run time, the Endpoint's parameter that serves it.
type configParam struct {
	name     string
	get      func(s *Server) string
	endpoint func(*redisconf.Endpoint) redisconf.Param
	// settable, for the node's own run-time parameters, serves it.
	settable func(s *Server) redisconf.Param
}

// configTable binds the parameters to s.
func (s *Server) configTable() redisconf.Table {
	t := make(redisconf.Table, len(configParams))
	for i, p := range configParams {
		if p.endpoint != nil {
			t[i] = p.endpoint(s.cfg)
			continue
		}
		if p.settable != nil {
			t[i] = p.settable(s)
			continue
		}
		t[i] = redisconf.Param{Name: p.name, Get: func() string { return p.get(s) }}
	}
	// Redis's default file names would describe files this node does not
	// write (its log and snapshots have their own layout, node/aof).
	return t.WithRedisDefaults("appendfilename", "appenddirname", "dbfilename")
}

func fixed(v string) func(*Server) string { return func(*Server) string { return v } }

// configParams is in Redis's order of appearance in redis.conf, roughly;
// CONFIG GET with a pattern lists matches in this order.
var configParams = []configParam{
	{name: "bind", get: func(s *Server) string { h, _ := s.listenHostPort(); return h }},
	// No protected mode: a node (and a proxy) answers every client that
	// reaches its address, password or not, so it says so rather than
	// Redis's yes (bind to loopback or set a password).
	{name: "protected-mode", get: fixed("no")},
	{name: "port", get: func(s *Server) string { _, p := s.listenHostPort(); return p }},
	{name: "timeout", get: fixed("0")},
	// Go's listeners keep connections alive with 15 s probes.
	{name: "tcp-keepalive", get: fixed("15")},
	{name: "databases", get: fixed("16")},
	{name: "save", get: fixed("")},
	{name: "appendonly", get: func(s *Server) string { return yesNo(s.opts.AOF != nil) }}, // configured, also while loading
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
	{name: "requirepass", endpoint: (*redisconf.Endpoint).RequirePassParam},
	{name: "maxclients", endpoint: (*redisconf.Endpoint).MaxClientsParam},
	{name: "client-query-buffer-limit", get: func(s *Server) string { return strconv.FormatInt(s.opts.QueryBufferLimit, 10) }},
	{name: "maxmemory", settable: (*Server).maxMemoryParam},
	{name: "maxmemory-policy", get: fixed("noeviction")},
	{name: "maxmemory-samples", get: fixed("5")},
	{name: "maxmemory-eviction-tenacity", get: fixed("10")},
	{name: "maxmemory-clients", get: fixed("0")},
	{name: "lua-time-limit", get: fixed("5000")},
	{name: "busy-reply-threshold", get: fixed("5000")},
	{name: "cluster-enabled", get: fixed("yes")},
	{name: "slowlog-log-slower-than", settable: func(s *Server) redisconf.Param { return s.slowlog.ThresholdParam() }},
	{name: "slowlog-max-len", settable: func(s *Server) redisconf.Param { return s.slowlog.MaxLenParam() }},
	{name: "latency-tracking", settable: func(s *Server) redisconf.Param { return s.cmdStats.TrackingParam() }},
	{name: "latency-tracking-info-percentiles", settable: func(s *Server) redisconf.Param { return s.cmdStats.PercentilesParam() }},
	{name: "notify-keyspace-events", get: fixed("")},
	{name: "hz", get: fixed("10")},
	{name: "proto-max-bulk-len", get: fixed("536870912")},
}

// maxMemoryParam serves maxmemory: a memory value as Redis reads it
// (100mb, 1gb, bytes), 0 for none.
func (s *Server) maxMemoryParam() redisconf.Param {
	return redisconf.Param{
		Name: "maxmemory",
		Get:  func() string { return strconv.FormatUint(s.maxMemory.Load(), 10) },
		Check: func(v string) (func(), string) {
			n, ok := redisconf.MemToULL(v)
			if !ok {
				return nil, resp.ConfigReasonNotMemory
			}
			return func() { s.maxMemorySet.Store(true); s.setMaxMemory(n) }, ""
		},
	}
}

// setMaxMemory applies maxmemory n and, as Redis, warns when the node
// already uses more.
func (s *Server) setMaxMemory(n uint64) {
	s.maxMemory.Store(n)
	used := s.mem.SetLimit(int64(min(n, math.MaxInt64)))
	if n > 0 && uint64(used) > n {
		s.log.Warn("maxmemory is below the memory in use: commands that may grow the data get OOM until memory is freed",
			"maxmemory", n, "used_memory", used)
	}
}

// listenHostPort splits the listening address for CONFIG GET bind/port.
func (s *Server) listenHostPort() (string, string) {
	return redisconf.ListenHostPort(s.opts.Addr, s.Addr())
}

// cmdConfigGet answers CONFIG GET pattern [pattern ...].
func (s *Server) cmdConfigGet(c *client, args [][]byte) { s.config.Get(&c.w, args[2:]) }

// cmdConfigSet answers CONFIG SET name value [name value ...].
func (s *Server) cmdConfigSet(c *client, args [][]byte) { s.config.Set(&c.w, args[2:]) }

// cmdConfigRewrite is CONFIG REWRITE: a node is configured by its flags,
// so it answers as a Redis started without a config file.
func (s *Server) cmdConfigRewrite(c *client, args [][]byte) { c.w.Error(resp.ErrNoConfigFile) }

// cmdConfigResetStat zeroes INFO's counters, as Redis's resetServerStats.
func (s *Server) cmdConfigResetStat(c *client, args [][]byte) {
	s.resetStats()
	c.w.OK()
}

func (s *Server) resetStats() {
	st := &s.stats
	for _, n := range []interface{ Store(int64) }{
		&st.connections, &st.commands, &st.rejected, &st.netInput, &st.netOutput,
		&st.reads, &st.writes, &st.expireCycle, &st.unexpectedErrors,
		&s.ks.Stats.ExpiredKeys, &s.ks.Stats.KeyspaceHits, &s.ks.Stats.KeyspaceMiss, &s.ks.Stats.ExpireTimeCap,
	} {
		n.Store(0)
	}
	s.errs.Reset()
	s.cmdStats.Reset()
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
