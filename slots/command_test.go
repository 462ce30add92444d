package slots

import (
	"bytes"
	"strings"
	"testing"
)

// TestLookupEveryCommand finds every top-level command under its name in
// lower, upper and mixed case, and nothing for near misses.
func TestLookupEveryCommand(t *testing.T) {
	for _, c := range All() {
		mixed := []byte(c.Name)
		for i := 0; i < len(mixed); i += 2 {
			mixed[i] = bytes.ToUpper(mixed[i : i+1])[0]
		}
		for _, name := range [][]byte{[]byte(c.Name), []byte(strings.ToUpper(c.Name)), mixed} {
			if got := Lookup(name); got != c {
				t.Errorf("Lookup(%q) = %v, want %s", name, got, c.Name)
			}
		}
		for _, miss := range []string{c.Name + "x", c.Name[:len(c.Name)-1] + "_", "x" + c.Name} {
			if got := Lookup([]byte(miss)); got != nil && got.Name != strings.ToLower(miss) {
				t.Errorf("Lookup(%q) = %s", miss, got.Name)
			}
		}
	}
}

func TestLookupMisses(t *testing.T) {
	for _, name := range []string{"", "g", "ge", "gett", "{get", "@get", "`et", "0get", "\xc7et",
		strings.Repeat("a", maxNameLen+1), "client|list", "get\x00"} {
		if got := Lookup([]byte(name)); got != nil {
			t.Errorf("Lookup(%q) = %s, want nil", name, got.Name)
		}
	}
}

// FuzzLookup checks Lookup against a scan of the whole table.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{"get", "GET", "Pfcount", "bitfield_ro", "", "{", "zzzzzz"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, name []byte) {
		var want *Command
		for _, c := range All() {
			if equalFold(c.Name, name) {
				want = c
			}
		}
		if got := Lookup(name); got != want {
			t.Fatalf("Lookup(%q) = %v, want %v", name, got, want)
		}
	})
}

// TestMayBlockAgreesWithTheFlag: MayBlock's shortcut on the first letter
// never hides a command flagged blocking, in any case; WAIT blocks too.
func TestMayBlockAgreesWithTheFlag(t *testing.T) {
	blocking := 0
	for _, c := range All() {
		want := c.Has(FlagBlocking) || c.Name == "wait"
		if want {
			blocking++
		}
		for _, name := range []string{c.Name, strings.ToUpper(c.Name)} {
			if got := MayBlock([]byte(name)); got != want {
				t.Errorf("MayBlock(%q) = %v, want %v", name, got, want)
			}
		}
	}
	if blocking == 0 {
		t.Fatal("no command is flagged blocking")
	}
	for _, name := range []string{"", "b", "blpopx", "x", "wa", "waitx"} {
		if MayBlock([]byte(name)) {
			t.Errorf("MayBlock(%q) = true", name)
		}
	}
}
