package slots

import "strings"

// Redis 7.0's commands with keys that shardgate does not serve
// (unservedTable: hashes, sets, sorted sets, geo, scripting, SORT,
// DUMP/RESTORE, MIGRATE). A Redis Cluster node refuses a call whose keys
// span slots with CROSSSLOT before running it, so code written for a
// Redis Cluster meets that refusal here too, where it would otherwise only
// learn that the command is unknown.

// unservedByName indexes unservedTable for LookupUnserved; filled once at
// init, read-only after, as is numAllIDs.
var (
	unservedByName = map[string]*Command{}
	numAllIDs      int
)

// redisCommands and redisContainers index redisCommandNames for
// IsRedisCommand and LookupRedis; filled once at init, read-only after.
var (
	redisCommands   = map[string]RedisCommand{}
	redisContainers = map[string]bool{}
)

// prepareUnserved readies unservedTable; the served table's init calls it
// once its own IDs are given out. The IDs go past NumIDs: the handler
// tables have no room for them, the statistics tables (NumAllIDs) have.
func prepareUnserved() {
	numAllIDs = numIDs
	for _, c := range unservedTable {
		numAllIDs = prepare(c, nil, numAllIDs)
		unservedByName[c.Name] = c
	}
	for _, rc := range redisCommandNames {
		redisCommands[rc.FullName] = rc
		if container, _, ok := strings.Cut(rc.FullName, "|"); ok {
			redisContainers[container] = true
		}
	}
}

// IsRedisCommand reports whether args name a Redis 7.0 command, served or
// not, ignoring case, as Redis's lookupCommand finds one: the first
// argument, or, when it is a container and a second follows, that
// subcommand of it.
func IsRedisCommand(args [][]byte) bool {
	_, found := LookupRedis(args)
	return found == RedisFound
}

// RedisLookup is what LookupRedis finds.
type RedisLookup int

const (
	// RedisUnknown: args name no Redis 7.0 command.
	RedisUnknown RedisLookup = iota
	// RedisUnknownSub: args name a Redis container command and, after
	// it, none of its subcommands.
	RedisUnknownSub
	// RedisFound: args name a Redis command or subcommand.
	RedisFound
)

// RedisCommand is a Redis 7.0 command or subcommand, served or not, as
// COMMAND INFO describes it: enough to refuse a call as Redis would
// before running it.
type RedisCommand struct {
	// FullName is lower case, "container|sub" for a subcommand, as Redis
	// prints it in arity errors.
	FullName string
	// Arity counts the name: N means exactly N arguments, -N at least N.
	Arity int
	// NoAuth: Redis runs it before authentication.
	NoAuth bool
}

// CheckArity reports whether n arguments (the name included) suit c.
func (c RedisCommand) CheckArity(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// LookupRedis finds the Redis 7.0 command args name, served or not, as
// Redis's lookupCommand does: the first argument, or, for a container
// followed by a second, that subcommand of it.
func LookupRedis(args [][]byte) (RedisCommand, RedisLookup) {
	if len(args) == 0 {
		return RedisCommand{}, RedisUnknown
	}
	name := strings.ToLower(string(args[0]))
	if redisContainers[name] && len(args) > 1 {
		name += "|" + strings.ToLower(string(args[1]))
		if _, ok := redisCommands[name]; !ok {
			return RedisCommand{}, RedisUnknownSub
		}
	}
	rc, ok := redisCommands[name]
	if !ok {
		return RedisCommand{}, RedisUnknown
	}
	return rc, RedisFound
}

// Unserved returns the unserved commands, in table order.
func Unserved() []*Command { return unservedTable }

// NumAllIDs is one more than the largest Command.ID of a served or an
// unserved command: statistics count refusals of both.
func NumAllIDs() int { return numAllIDs }

// LookupUnserved finds, ignoring case, a Redis 7.0 command with keys that
// shardgate does not serve; nil for any other name, served or not.
func LookupUnserved(name []byte) *Command {
	if len(name) == 0 || len(name) > maxNameLen {
		return nil
	}
	var buf [maxNameLen]byte
	lower := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return unservedByName[string(lower)]
}

// SpansSlots appends to dst the indexes of the keys a Redis Cluster node
// routes args by (RouteKeyIndexes) and reports whether they lie in more
// than one slot, the case it refuses with CROSSSLOT.
func (c *Command) SpansSlots(args [][]byte, dst []int) ([]int, bool) {
	keys := c.RouteKeyIndexes(args, dst)
	if len(keys) == len(dst) {
		return keys, false
	}
	first := Slot(args[keys[len(dst)]])
	for _, i := range keys[len(dst)+1:] {
		if Slot(args[i]) != first {
			return keys, true
		}
	}
	return keys, false
}
