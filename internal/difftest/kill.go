package difftest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KilledClientScenario checks, on the oracle and on the server under test
// alike, that nothing a client sent runs after a CLIENT KILL of it has
// answered, as in Redis, which frees the client before the reply: not the
// rest of a pipeline it had sent (INCRs after the kill would undo the
// killer's SET), and not a blocking pop sent just before the kill, which
// would take the element the killer pushes next (a job lost). The kill
// races the victim's command on purpose, so each case runs rounds times.
func KilledClientScenario(t *testing.T, p *Pair, rounds int) {
	t.Helper()
	for _, addr := range []struct{ name, addr string }{{"redis", p.Oracle.Addr}, {"target", p.NodeAddr}} {
		if bad := killedClientRounds(t, addr.addr, rounds); len(bad) > 0 {
			t.Errorf("%s: %d cases where a killed client's command ran after the kill's reply, e.g. %s", addr.name, len(bad), strings.Join(bad[:min(3, len(bad))], "; "))
		}
	}
}

func killedClientRounds(t *testing.T, addr string, rounds int) (bad []string) {
	killer := dialT(t, addr)
	defer killer.Close()
	do := func(args ...string) Value {
		t.Helper()
		v, err := killer.DoStrings(args...)
		if err != nil {
			t.Fatalf("%s: %q: %v", addr, args, err)
		}
		return v
	}
	// sendVictim dials a client, sends raw without reading, and returns
	// the client's id.
	sendVictim := func(raw []byte) int64 {
		t.Helper()
		v := dialT(t, addr)
		t.Cleanup(func() { v.Close() })
		id, err := v.DoStrings("CLIENT", "ID")
		if err != nil {
			t.Fatal(err)
		}
		if err := v.WriteRaw(raw); err != nil {
			t.Fatal(err)
		}
		return id.Int
	}
	kill := func(id int64) {
		t.Helper()
		if v := do("CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)); v.Int != 1 {
			t.Fatalf("%s: CLIENT KILL ID %d: %s", addr, id, v)
		}
	}
	// settled waits until the server has let go of the victim (as many
	// clients as before it), so that whatever its commands did is done.
	connected := func() string {
		for _, l := range strings.Split(string(do("INFO", "clients").Str), "\r\n") {
			if strings.HasPrefix(l, "connected_clients:") {
				return l
			}
		}
		return ""
	}
	before := connected()
	settled := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for connected() != before {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the killed client is still connected", addr)
			}
			time.Sleep(time.Millisecond)
		}
	}

	pops := [][]string{
		{"BLPOP", "{k}q", "0"},
		{"BLMPOP", "0", "1", "{k}q", "LEFT"},
		{"BRPOPLPUSH", "{k}q", "{k}dst", "0"},
		{"BLMOVE", "{k}q", "{k}dst", "LEFT", "LEFT", "0"},
	}
	for _, pop := range pops {
		for round := range rounds {
			do("DEL", "{k}q", "{k}dst")
			id := sendVictim(AppendCommand(nil, toBytes(pop)...))
			kill(id)
			do("RPUSH", "{k}q", "job")
			settled()
			if q, dst := do("LRANGE", "{k}q", "0", "-1").String(), do("LRANGE", "{k}dst", "0", "-1").String(); q != `array[bulk:"job"]` || dst != "array[]" {
				bad = append(bad, fmt.Sprintf("%q round %d: the list holds %s, the destination %s", pop, round, q, dst))
			}
		}
	}

	const incrs = 20000
	var pipeline []byte
	for range incrs {
		pipeline = AppendCommand(pipeline, []byte("INCR"), []byte("{k}n"))
	}
	for round := range max(rounds/10, 1) {
		do("SET", "{k}n", "0")
		id := sendVictim(pipeline)
		deadline := time.Now().Add(10 * time.Second)
		for do("GET", "{k}n").String() == `bulk:"0"` && time.Now().Before(deadline) {
		}
		kill(id)
		do("SET", "{k}n", "0")
		settled()
		if n := do("GET", "{k}n").String(); n != `bulk:"0"` {
			bad = append(bad, fmt.Sprintf("pipeline round %d: %s after the killer's SET to 0", round, n))
		}
	}
	do("DEL", "{k}q", "{k}dst", "{k}n")
	return bad
}

func dialT(t *testing.T, addr string) *Conn {
	t.Helper()
	c, err := Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
