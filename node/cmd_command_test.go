package node_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/slots"
)

// servedCommands lists every command and subcommand of the table by full
// name, containers apart: a container's INFO and DOCS name its subcommands,
// and Redis has subcommands shardgate does not serve.
func servedCommands() (leaves, containers []string) {
	for _, c := range slots.All() {
		if len(c.Subcommands) > 0 {
			containers = append(containers, c.FullName)
			for _, s := range c.Subcommands {
				leaves = append(leaves, s.FullName)
			}
			continue
		}
		leaves = append(leaves, c.FullName)
	}
	return leaves, containers
}

func TestCommandInfoDocsMatchRedis(t *testing.T) {
	p := difftest.Start(t)
	leaves, containers := servedCommands()
	for _, proto := range []int{2, 3} {
		for _, name := range leaves {
			p.DoProto(t, proto, "COMMAND", "INFO", name)
			p.DoProto(t, proto, "COMMAND", "DOCS", name)
		}
		// Upper case, several names, unknown names and bad pipes.
		p.DoProto(t, proto, "COMMAND", "INFO", "GET", "nosuch", "Config|Get", "config|nosuch", "config|get|x", "SET")
		p.DoProto(t, proto, "COMMAND", "DOCS", "GET", "nosuch", "CLIENT|setname", "getset", "get|x")
		p.DoProto(t, proto, "COMMAND", "INFO", "nosuch")
		p.DoProto(t, proto, "COMMAND", "DOCS", "nosuch")
		p.DoProto(t, proto, "COMMAND", "HELP")
	}
	// Containers: everything but the subcommands must be Redis's, and each
	// listed subcommand must be one of Redis's. Redis orders subcommands
	// by its hash table, which changes with every start, so order is not
	// compared.
	for _, proto := range []int{2, 3} {
		c := p.NewConnProto(t, proto)
		for _, name := range containers {
			args := []string{"COMMAND", "INFO", name}
			a, b := c.Both(t, args...)
			if len(a.Elems) != 1 || len(b.Elems) != 1 || len(a.Elems[0].Elems) != 10 || len(b.Elems[0].Elems) != 10 {
				t.Fatalf("%s: unexpected shape: redis %s, node %s", name, a, b)
			}
			ra, nb := a.Elems[0].Elems, b.Elems[0].Elems
			for i := range 9 {
				c.Compare(t, args, ra[i], nb[i])
			}
			if ra[9].Kind != nb[9].Kind {
				t.Errorf("%s: subcommands are a %s, Redis's a %s", name, nb[9].Kind, ra[9].Kind)
			}
			checkSubset(t, args, ra[9].Elems, nb[9].Elems, 1)

			args = []string{"COMMAND", "DOCS", name}
			a, b = c.Both(t, args...)
			if len(a.Elems) != 2 || len(b.Elems) != 2 {
				t.Fatalf("%s: unexpected shape: redis %s, node %s", name, a, b)
			}
			rSubs, rRest := splitField(a.Elems[1], "subcommands")
			nSubs, nRest := splitField(b.Elems[1], "subcommands")
			c.Compare(t, args, rRest, nRest)
			if rSubs.Kind != nSubs.Kind {
				t.Errorf("%s: DOCS subcommands are a %s, Redis's a %s", name, nSubs.Kind, rSubs.Kind)
			}
			checkSubset(t, args, rSubs.Elems, nSubs.Elems, 2)
		}
	}
}

// splitField takes the value of key out of a map reply (a flat array in
// RESP2) and returns it and the map without it.
func splitField(m difftest.Value, key string) (val, rest difftest.Value) {
	rest = difftest.Value{Kind: m.Kind}
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if string(m.Elems[i].Str) == key {
			val = m.Elems[i+1]
			continue
		}
		rest.Elems = append(rest.Elems, m.Elems[i], m.Elems[i+1])
	}
	return val, rest
}

// checkSubset checks that each group of n consecutive elements of ours
// (one entry, or a key and its value) is also in Redis's reply.
func checkSubset(t *testing.T, args []string, redis, ours []difftest.Value, n int) {
	t.Helper()
	for i := 0; i+n <= len(ours); i += n {
		found := false
		for j := 0; j+n <= len(redis) && !found; j += n {
			found = slices.EqualFunc(redis[j:j+n], ours[i:i+n], difftest.Equal)
		}
		if !found {
			t.Errorf("%s: node's subcommand entry %s is not among Redis's", difftest.FormatCommand(args), ours[i])
		}
	}
	if len(ours) == 0 {
		t.Errorf("%s: node lists no subcommands", difftest.FormatCommand(args))
	}
}

func TestCommandGetKeysMatchesRedis(t *testing.T) {
	p := difftest.Start(t)
	for _, args := range [][]string{
		{"GET", "k"},
		{"SET", "k", "v", "GET"},
		{"MSET", "a", "1", "b", "2"},
		{"MSET", "a"},
		{"MGET", "a", "b", "c"},
		{"DEL", "a", "b"},
		{"COPY", "a", "b", "REPLACE"},
		{"RENAME", "a", "b"},
		{"EXPIRE", "k", "10", "NX"},
		{"OBJECT", "ENCODING", "k"},
		{"object", "help"},
		{"MEMORY", "USAGE", "k", "SAMPLES", "5"},
		{"WATCH", "a", "b"},
		{"GETEX", "k", "PERSIST"},
		{"GET"},
		{"GET", "a", "b"},
		{"nosuch", "a"},
		{"PING", "a"},
		{"DBSIZE", "x"},
		{"CLIENT", "nosuch"},
		{"CLIENT", "SETNAME", "x"},
		{"CONFIG", "GET", "x"},
		{"COMMAND", "INFO"},
		// Redis 7.0 commands the node does not serve: keys all the same.
		{"EVAL", "return 1", "2", "a", "b"},
		{"EVAL", "return 1", "0"},
		{"ZUNIONSTORE", "d", "2", "a", "b"},
		{"SORT", "a", "STORE", "b"},
		{"MIGRATE", "h", "1", "", "0", "1", "KEYS", "a", "b"},
		{"GEORADIUS", "a", "1", "1", "1", "km", "STORE", "b"},
		{"HSET", "a"},
		{"HSET", "a", "b", "c"},
		{"FCALL", "f", "1", "a"},
		{"DUMP", "k"},
		{"SINTERCARD", "2", "a", "b"},
		// Not served and without keys: Redis knows them.
		{"PUBLISH", "a", "b"},
		{"CLIENT", "TRACKING", "on"},
		{"SCRIPT", "LOAD", "x"},
		{"SCRIPT", "nosuch"},
		{"ACL", "WHOAMI"},
		// COMMAND INFO's "container|sub" names are no command here.
		{"config|get", "a"},
		{"memory|usage", "a"},
		{"xinfo|stream", "k"},
		{"get|x", "k"},
		{"EVAL|x", "s", "0"},
	} {
		p.Do(t, append([]string{"COMMAND", "GETKEYS"}, args...)...)
	}
	p.Do(t, "COMMAND", "GETKEYS")
}

// TestCommandGetKeysAndFlagsMatchesRedis checks the reply's shape (the
// flags are a set in RESP3) and the error cases; slots.KeyRefs is compared
// with Redis for every command in package slots.
func TestCommandGetKeysAndFlagsMatchesRedis(t *testing.T) {
	p := difftest.Start(t)
	for _, args := range [][]string{
		{"GET", "k"},
		{"SET", "k", "v"},
		{"SET", "k", "v", "GET"},
		{"BITFIELD", "k", "GET", "u8", "0"},
		{"BITFIELD", "k", "INCRBY", "u8", "0", "1"},
		{"LMOVE", "a", "b", "LEFT", "RIGHT"},
		{"LMPOP", "02", "a", "b", "LEFT"},
		{"MSET", "a", "1", "b", "2"},
		{"MSET", "a"},
		{"GET"},
		{"nosuch", "a"},
		{"PING", "a"},
		{"CLIENT", "SETNAME", "x"},
		{"OBJECT", "ENCODING", "k"},
		{"object|encoding", "k"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0"},
		// Not served: flags from the key specs, or as Redis's getkeys
		// procedures give them (SORT, MIGRATE), none for a count read
		// leniently.
		{"HSET", "a", "b", "c"},
		{"SORT", "a", "STORE", "b"},
		{"SORT", "a", "BY", "x", "STORE", "b", "STORE", "c"},
		{"SORT_RO", "a"},
		{"MIGRATE", "h", "1", "", "0", "1", "KEYS", "a", "b"},
		{"MIGRATE", "h", "1", "k", "0", "1"},
		{"MIGRATE", "h", "1", "k", "0", "1", "KEYS"},
		{"MIGRATE", "h", "1", "", "0", "1", "KEYS"},
		{"MIGRATE", "h", "1", "k", "0", "1", "COPY", "KEYS"},
		{"MIGRATE", "h", "1", "k", "0", "1", "KEYS", "a"},
		{"MIGRATE", "h", "1", "", "0", "1", "AUTH", "KEYS", "a"},
		{"ZUNIONSTORE", "d", "2", "a", "b"},
		{"EVAL", "s", "2a", "a", "b"},
		{"GEORADIUS", "a", "1", "1", "1", "km", "STOREDIST", "b"},
	} {
		full := append([]string{"COMMAND", "GETKEYSANDFLAGS"}, args...)
		p.Do(t, full...)
		p.DoProto(t, 3, full...)
	}
	p.Do(t, "COMMAND", "GETKEYSANDFLAGS")
}

func TestCommandMiscMatchesRedis(t *testing.T) {
	p := difftest.Start(t)
	for _, args := range [][]string{
		{"COMMAND", "HELP"},
		{"COMMAND", "HELP", "x"},
		{"COMMAND", "COUNT", "x"},
		{"COMMAND", "nosub"},
		{"COMMAND", "LIST", "x"},
		{"COMMAND", "LIST", "FILTERBY"},
		{"COMMAND", "LIST", "FILTERBY", "pattern"},
		{"COMMAND", "LIST", "FILTERBY", "nosuch", "x"},
		{"COMMAND", "LIST", "FILTERBY", "PATTERN", "a", "b"},
		{"COMMAND", "LIST", "FILTERBY", "MODULE", "x"},
		{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"},
		{"COMMAND", "LIST", "FILTERBY", "PATTERN", "nosuch*"},
	} {
		p.Do(t, args...)
	}
}

// TestCommandListAndCount checks the lists against the table and against
// Redis: every name listed is one Redis lists for the same filter.
func TestCommandListAndCount(t *testing.T) {
	p := difftest.Start(t)
	var want []string
	for _, c := range slots.All() {
		want = append(want, c.FullName)
		for _, s := range c.Subcommands {
			want = append(want, s.FullName)
		}
	}
	_, count := p.Both(t, "COMMAND", "COUNT")
	if count.Kind != difftest.Integer || count.Int != int64(len(slots.All())) {
		t.Errorf("COMMAND COUNT = %s, want %d", count, len(slots.All()))
	}
	_, all := p.Both(t, "COMMAND")
	if len(all.Elems) != len(slots.All()) {
		t.Errorf("COMMAND returned %d entries, want %d", len(all.Elems), len(slots.All()))
	}
	for _, filter := range [][]string{nil, {"FILTERBY", "ACLCAT", "dangerous"}, {"FILTERBY", "ACLCAT", "Stream\x00z"}, {"FILTERBY", "PATTERN", "C*"}, {"FILTERBY", "PATTERN", "*|*"}} {
		args := append([]string{"COMMAND", "LIST"}, filter...)
		a, b := p.Both(t, args...)
		redisNames := map[string]bool{}
		for _, e := range a.Elems {
			redisNames[string(e.Str)] = true
		}
		var got []string
		for _, e := range b.Elems {
			got = append(got, string(e.Str))
			if !redisNames[string(e.Str)] {
				t.Errorf("%s: node lists %q, Redis does not", strings.Join(args, " "), e.Str)
			}
		}
		if filter == nil && !slices.Equal(got, want) {
			t.Errorf("COMMAND LIST = %q, want the table %q", got, want)
		}
		// Everything Redis lists that we serve must be listed by us.
		for n := range redisNames {
			if slices.Contains(want, n) && !slices.Contains(got, n) {
				t.Errorf("%s: node does not list %q", strings.Join(args, " "), n)
			}
		}
	}
}
