package node_test

import (
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestProxySlowlogWrappers: SHARDGATE UNLOGGED runs its command, which
// the slow log then lacks; SHARDGATE MICROS SLOWLOG GET adds each entry's
// time in microseconds; the two nest, and ask for AUTH first.
func TestProxySlowlogWrappers(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{RequirePass: "pw"}, nil)
	c := dialDiff(t, addr)
	expect := replyChecker(t, c)
	expect(`error:"NOAUTH Authentication required."`, "SHARDGATE", "UNLOGGED", "PING")
	expect(`simple:"OK"`, "AUTH", "pw")
	expect(`error:"ERR wrong number of arguments for 'shardgate|unlogged' command"`, "SHARDGATE", "UNLOGGED")
	expect(`error:"ERR wrong number of arguments for 'shardgate|micros' command"`, "SHARDGATE", "MICROS")
	expect(`error:"ERR wrong number of arguments for 'get' command"`, "SHARDGATE", "UNLOGGED", "GET")

	expect(`simple:"OK"`, "CONFIG", "SET", "slowlog-log-slower-than", "0")
	expect(`simple:"OK"`, "SLOWLOG", "RESET")
	expect(`simple:"OK"`, "SHARDGATE", "UNLOGGED", "SET", "k", "v")
	expect(`bulk:"v"`, "SHARDGATE", "unlogged", "GET", "k")
	expect(`int:1`, "SLOWLOG", "LEN")                          // the RESET only
	expect(`int:2`, "SHARDGATE", "UNLOGGED", "SLOWLOG", "LEN") // and that LEN

	before := time.Now().UnixMicro()
	expect(`simple:"OK"`, "SET", "k", "w")
	after := time.Now().UnixMicro()
	v, err := c.DoStrings("SHARDGATE", "UNLOGGED", "SHARDGATE", "MICROS", "SLOWLOG", "GET", "1")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Elems) != 1 || len(v.Elems[0].Elems) != 7 {
		t.Fatalf("SHARDGATE MICROS SLOWLOG GET 1: %v", v)
	}
	e := v.Elems[0].Elems
	if got := e[3].String(); got != `array[bulk:"SET", bulk:"k", bulk:"w"]` {
		t.Errorf("newest entry %s, want the SET", got)
	}
	if us := e[6].Int; us < before || us > after || us/1e6 != e[1].Int {
		t.Errorf("entry time %d µs (%d s), want within [%d, %d]", us, e[1].Int, before, after)
	}
	// Plain SLOWLOG GET keeps Redis's six elements; the wrapped GET was
	// not logged, the plain one will be.
	v, err = c.DoStrings("SLOWLOG", "GET")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Elems) != 3 || len(v.Elems[0].Elems) != 6 {
		t.Errorf("SLOWLOG GET: %v, want the SET, the LEN and the RESET", v)
	}
}

// TestSlotBoundWrapper: SHARDGATE SLOT runs its command where the node
// serves the slot and answers the slot's redirection elsewhere, so that a
// proxy's SCAN page or CLUSTER COUNTKEYSINSLOT follows a slot that has
// just moved instead of reading the old owner's nothing.
func TestSlotBoundWrapper(t *testing.T) {
	own := newFakeOwnership(fakeNode{id: "self", addr: "127.0.0.1:1"}, fakeNode{id: "other", addr: "127.0.0.1:2"})
	own.assign(0, 99, 0)
	own.assign(100, 199, 1)
	_, addr := startOwned(t, own, nil)
	c := dialDiff(t, addr)
	expect := replyChecker(t, c)
	expect(`error:"ERR wrong number of arguments for 'shardgate|slot' command"`, "SHARDGATE", "SLOT", "5")
	expect(`error:"ERR Invalid slot"`, "SHARDGATE", "SLOT", "16384", "PING")
	expect(`error:"ERR Invalid slot"`, "SHARDGATE", "SLOT", "x", "PING")
	expect(`int:0`, "SHARDGATE", "SLOT", "5", "CLUSTER", "COUNTKEYSINSLOT", "5")
	expect(`error:"MOVED 150 127.0.0.1:2"`, "SHARDGATE", "SLOT", "150", "CLUSTER", "COUNTKEYSINSLOT", "150")
	expect(`error:"MOVED 150 127.0.0.1:2"`, "SHARDGATE", "SLOT", "150", "SCAN", "82463372083200")
	expect(`error:"CLUSTERDOWN Hash slot not served"`, "SHARDGATE", "SLOT", "300", "SCAN", "0")
	expect(`array[bulk:"0", array[]]`, "SHARDGATE", "SLOT", "5", "SCAN", "0")
}

// TestBriefWrapper: SHARDGATE BRIEF XINFO STREAM answers every field as
// XINFO STREAM does but the first and last entries, nil in their place
// (a proxy reads the ids only); errors are XINFO STREAM's.
func TestBriefWrapper(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	c := dialDiff(t, addr)
	expect := replyChecker(t, c)
	expect(`error:"ERR wrong number of arguments for 'shardgate|brief' command"`, "SHARDGATE", "BRIEF")
	expect(`error:"ERR no such key"`, "SHARDGATE", "BRIEF", "XINFO", "STREAM", "s")
	expect(`bulk:"1-1"`, "XADD", "s", "1-1", "f", "a big value")
	expect(`bulk:"2-1"`, "XADD", "s", "2-1", "f", "another")
	full, err := c.DoStrings("XINFO", "STREAM", "s")
	if err != nil {
		t.Fatal(err)
	}
	brief, err := c.DoStrings("SHARDGATE", "brief", "XINFO", "STREAM", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Elems) != 20 || len(brief.Elems) != len(full.Elems) {
		t.Fatalf("XINFO STREAM %v\nbrief %v", full, brief)
	}
	for i := 0; i < len(full.Elems); i += 2 {
		name := string(full.Elems[i].Str)
		f, b := full.Elems[i+1].String(), brief.Elems[i+1].String()
		switch name {
		case "first-entry", "last-entry":
			if k := brief.Elems[i+1].Kind; k != difftest.NullBulk && k != difftest.Null || f == b {
				t.Errorf("brief %s: %s (full: %s), want nil", name, b, f)
			}
		default:
			if string(brief.Elems[i].Str) != name || f != b {
				t.Errorf("brief %s: %s, full %s", name, b, f)
			}
		}
	}
}
