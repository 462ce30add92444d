package engine

import "github.com/shardgate/shardgate/internal/glob"

// Match reports whether str matches the glob pattern pat, with Redis's
// stringmatchlen semantics (KEYS, SCAN MATCH). The matcher lives in
// internal/glob, shared with the proxy's --segment-keys patterns.
func Match(pat, str []byte) bool { return glob.Match(pat, str) }

// MatchString is Match for a string key, without copying it.
func MatchString(pat []byte, key string) bool { return glob.MatchString(pat, key) }
