package node

import (
	"errors"
	"log/slog"
	"time"
)

// Options configure a node. Zero values mean the defaults in DefaultOptions.
type Options struct {
	// Addr is the RESP listen address, e.g. "127.0.0.1:7001".
	Addr string
	// RequirePass, when set, makes clients AUTH before anything else.
	RequirePass string
	// MaxClients caps concurrent client connections (Redis's maxclients).
	MaxClients int
	// QueryBufferLimit closes a client whose query buffer exceeds it
	// (Redis's client-query-buffer-limit, 1 GB by default), measured as
	// Redis does: one argument (whole or arriving), or what a blocked
	// client keeps sending.
	QueryBufferLimit int64
	// MaxMemory is Redis's maxmemory with the noeviction policy: while
	// the node's live heap is over it, commands that may grow the data
	// get Redis's OOM error (internal/memlimit). 0: no limit.
	MaxMemory int64
	// ActiveExpiryInterval is how often expired keys are swept in the
	// background (Redis: 10 times a second).
	ActiveExpiryInterval time.Duration
	// ShutdownGrace bounds how long Close lets clients finish: it stops
	// reading new commands at once, and each client gets the replies to
	// the commands it had sent (a blocked one is let go, as if it had
	// disconnected) before its connection closes; whoever is still busy
	// after this is disconnected. Default 5 s.
	ShutdownGrace time.Duration
	// MetricsAddr, when set, serves Prometheus metrics over HTTP at
	// /metrics (metrics.go).
	MetricsAddr string
	// Logger receives the node's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now. Tests pass a fake.
	Now func() time.Time
	// Ownership, when set, makes the node one master of a cluster: it
	// serves the slots Ownership gives it and redirects the others
	// (ownership.go). nil: a standalone node that serves every slot.
	Ownership Ownership

	// Migration, for a node of a gossip cluster, lets it give and take
	// slots online (migrate.go); nil: its slots never move by migration.
	Migration *MigrationOptions

	// Dir is the node's data directory: with AOF off, SAVE and BGSAVE
	// write Dir/dump.snap and the node loads it at start ("" with AOF
	// off: nothing is kept). With AOF on, AOF.Dir is where everything
	// lives.
	Dir string

	// AOF, when set, logs every write before its reply and replays the
	// log at start (persist.go); nil: nothing is kept across restarts.
	AOF *AOFOptions

	// LoadWhileServing moves loading the data kept in Dir (or AOF.Dir)
	// from New to Serve, which then accepts clients at once and answers
	// them as Redis does while it loads: LOADING for every command that
	// Redis refuses then, INFO with loading:1 and the load's progress.
	// Without it New loads before returning.
	LoadWhileServing bool
}

// DefaultOptions returns the options a node runs with unless told otherwise.
func DefaultOptions() Options {
	return Options{
		Addr:                 "127.0.0.1:7001",
		MaxClients:           10000,
		QueryBufferLimit:     1 << 30,
		ActiveExpiryInterval: 100 * time.Millisecond,
		ShutdownGrace:        5 * time.Second,
	}
}

// withDefaults fills zero fields from DefaultOptions and validates.
func (o Options) withDefaults() (Options, error) {
	d := DefaultOptions()
	if o.Addr == "" {
		o.Addr = d.Addr
	}
	if o.AOF != nil {
		a := *o.AOF // the caller's struct stays as given
		if a.RewriteMinSize == 0 {
			a.RewriteMinSize = 64 << 20
		}
		if a.RewritePercent == 0 {
			a.RewritePercent = 100
		}
		o.AOF = &a
	}
	if o.MaxClients == 0 {
		o.MaxClients = d.MaxClients
	}
	if o.MaxClients < 0 {
		return o, errors.New("node: MaxClients must be positive")
	}
	if o.QueryBufferLimit == 0 {
		o.QueryBufferLimit = d.QueryBufferLimit
	}
	if o.QueryBufferLimit < 0 {
		return o, errors.New("node: QueryBufferLimit must be positive")
	}
	if o.MaxMemory < 0 {
		return o, errors.New("node: MaxMemory must not be negative")
	}
	if o.ActiveExpiryInterval == 0 {
		o.ActiveExpiryInterval = d.ActiveExpiryInterval
	}
	if o.ActiveExpiryInterval < 0 {
		return o, errors.New("node: ActiveExpiryInterval must be positive")
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = d.ShutdownGrace
	}
	if o.ShutdownGrace < 0 {
		return o, errors.New("node: ShutdownGrace must be positive")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}
