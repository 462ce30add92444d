package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// strCommands are the commands FuzzStringArgs drives.
var strCommands = []string{
	"get", "set", "setnx", "setex", "psetex", "getset", "getdel", "getex", "mget", "mset",
	"msetnx", "append", "strlen", "getrange", "setrange", "incr", "decr", "incrby", "decrby",
	"incrbyfloat", "lcs", "substr",
}

// fuzzMaxOffset keeps SETRANGE from building strings of hundreds of MB
// (which Redis would, and which a fuzzer would ask for all the time).
const fuzzMaxOffset = 1 << 16

// fuzzMaxLCSCells bounds the LCS tables the fuzzer builds.
const fuzzMaxLCSCells = 1 << 22

// FuzzStringArgs feeds random argument vectors to the strings commands,
// one script per input: lines are commands, tab-separated arguments, the
// first byte of a line picks the command. Every key gets the same hash tag
// so multi-key commands see one slot, as the dispatcher guarantees. The
// commands must never panic, must always write a reply, and must leave the
// keyspace consistent (expiry counter, "int" encoding only on integers).
func FuzzStringArgs(f *testing.F) {
	seeds := []string{
		"\x01k\tv\tEX\t10\tGET",
		"\x01k\t1\n\x0fk\n\x13k\t1.5",
		"\x07k\tPXAT\t1\n\x00k",
		"\x0ek\t5\tx\n\x0dk\t-3\t-1",
		"\x09a\t1\tb\t2\n\x08a\tb\tc",
		"\x13k\t0x1p-16445\n\x13k\t1e4000",
		"\x01k\tv\tNX\x00\tKEEPTTL\n\x0bk\t",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		s := newStrEnv(t)
		putList(s, "{f}l")
		s.run("SET", "{f}n", "42", "PX", "1000")
		for _, line := range bytes.Split(script, []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			name := strCommands[int(line[0])%len(strCommands)]
			args := [][]byte{[]byte(name)}
			if len(line) > 1 {
				args = append(args, bytes.Split(line[1:], []byte{'\t'})...)
			}
			cmd := slots.Lookup(args[0])
			if cmd == nil || !cmd.CheckArity(len(args)) {
				continue
			}
			for _, i := range cmd.KeyIndexes(args, nil) {
				args[i] = append([]byte("{f}"), args[i]...)
			}
			if name == "setrange" {
				if off, ok := resp.ParseInt(args[2]); ok && off > fuzzMaxOffset {
					continue
				}
			}
			if name == "lcs" && s.strLen(args[1])*s.strLen(args[2]) > fuzzMaxLCSCells {
				continue // a table of hundreds of MB: allowed, but not a thousand times a second
			}
			if reply := s.runBytes(args); reply == "" {
				t.Fatalf("%q wrote no reply", args)
			}
			checkShardInvariants(t, s, args)
		}
	})
}

// checkShardInvariants verifies the fuzz shard after a command.
func checkShardInvariants(t *testing.T, s *strEnv, args [][]byte) {
	sh := s.ks.ShardOf([]byte("{f}"))
	expiring := 0
	sh.Keys(func(k string, e *Entry) bool {
		if e.Expire != 0 {
			expiring++
		}
		if e.Kind == KindString && e.Enc == EncInt && !isRedisInt(e.Str) {
			t.Fatalf("after %q: %q is int-encoded", args, e.Str)
		}
		if e.Kind == KindString && e.Enc == EncEmbstr && len(e.Str) > embstrMax {
			t.Fatalf("after %q: %d bytes embstr", args, len(e.Str))
		}
		if !strings.HasPrefix(k, "{f}") {
			t.Fatalf("after %q: key %q outside the fuzz slot", args, k)
		}
		return true
	})
	if expiring != sh.Expires() {
		t.Fatalf("after %q: %d keys expire, counter says %d", args, expiring, sh.Expires())
	}
}
