// Package prefetch asks the CPU to start loading a cache line that the
// program will read soon, without waiting for it.
//
// Why: a node serving a pipeline of commands on random keys spends most of
// its time in the program waiting for memory: each lookup reads the key's
// shard, then a slot of its key table, then the key, each a cache miss
// that depends on the one before. The addresses of the first two are
// known for every command of a batch as soon as it is read, so asking for
// them all up front lets the misses of sixteen commands overlap instead of
// following one another. A prefetch never faults, so a stale or wrong
// address costs nothing but the wasted load.
package prefetch
