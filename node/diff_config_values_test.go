package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// configValueProbes are values CONFIG SET is tried with for every
// parameter: words, integers around the usual bounds, memory amounts and
// percentages, and the spellings string2ll, strtoll and memtoull tell
// apart.
var configValueProbes = []string{
	"abc", "", "yes", "No", "-1", "0", "1", "01", "+1", "-0", " 1", "1 ", "1.5",
	"100", "65536", "2147483648", "4294967296", "9223372036854775807",
	"9223372036854775808", "18446744073709551615", "-9223372036854775808",
	"1kb", "1mb", "1tb", "5%", "100%", "101%", "-1%", "%",
	"KEA", "Kx", "normal 0 0 0", "normal 1mb 1mb", "foo 0 0 0", "normal 0 0 -1",
	"1 2 3", "1 2", "-2001 0 0", "3600 1", "3600",
}

// configValueSkipped are the parameters this test leaves out: those the
// node changes for real (their own differential tests cover them), those
// whose accepted values would move the oracle's listener or password,
// and those Redis checks only when it applies the value (TLS needs
// certificates, defragmentation a jemalloc build, the title template's
// variables), where the node answers that the value is fixed.
var configValueSkipped = map[string]bool{
	"requirepass": true, "maxclients": true, "maxmemory": true,
	"slowlog-log-slower-than": true, "slowlog-max-len": true,
	"latency-tracking": true, "latency-tracking-info-percentiles": true,
	"port": true, "bind": true, "unixsocket": true,
	"tls-port": true, "tls-cluster": true, "tls-replication": true,
	"activedefrag": true, "proc-title-template": true,
}

// TestDiffConfigSetValues: for every parameter Redis 7.0.15 knows, a value
// Redis refuses gets Redis's reason to the letter from the node, which
// keeps most of them fixed; a value Redis takes gets OK or "can't set
// immutable config". The oracle is a fresh redis-server of its own, since
// the values it takes change it.
func TestDiffConfigSetValues(t *testing.T) {
	p := difftest.Start(t)
	node := p.NewConn(t).Node
	r, err := difftest.StartPlainRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	oracle, err := difftest.Dial(r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()

	all, err := oracle.DoStrings("CONFIG", "GET", "*")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i+1 < len(all.Elems); i += 2 {
		names = append(names, string(all.Elems[i].Str))
	}
	// Redis's hidden parameters answer CONFIG GET of their exact name only
	// (not *, above); the software watchdog's period is read but not set,
	// since a short one would interrupt the oracle all along.
	for _, name := range []string{"key-load-delay", "loading-process-events-interval-bytes",
		"rdb-key-save-delay", "use-exit-on-panic", "watchdog-period"} {
		want, _ := oracle.DoStrings("CONFIG", "GET", name)
		got, _ := node.DoStrings("CONFIG", "GET", name)
		if len(want.Elems) != 2 || !difftest.Equal(want, got) {
			t.Errorf("CONFIG GET %s: redis %s, node %s", name, want, got)
		}
		if name != "watchdog-period" {
			names = append(names, name)
		}
	}
	checked := 0
	for _, name := range names {
		if configValueSkipped[name] {
			continue
		}
		for _, v := range configValueProbes {
			want, err := oracle.DoStrings("CONFIG", "SET", name, v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := node.DoStrings("CONFIG", "SET", name, v)
			if err != nil {
				t.Fatal(err)
			}
			if want.Kind == difftest.Error {
				checked++
				if !difftest.Equal(want, got) {
					t.Errorf("CONFIG SET %s %q: redis %s, node %s", name, v, want, got)
				}
				continue
			}
			immutable := "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config"
			if got.Kind != difftest.SimpleString && string(got.Str) != immutable {
				t.Errorf("CONFIG SET %s %q: redis takes it, node %s", name, v, got)
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d refused values compared: the probes no longer reach Redis's checks", checked)
	}
}
