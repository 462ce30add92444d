package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// helpFlagRE matches a flag line of a command's --help ("  --name ...").
var helpFlagRE = regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`)

// TestReadmeDocumentsEveryFlag: every flag a command's --help lists is
// written in the README as `--name` (its flag tables), so that the two do
// not drift apart as flags are added.
func TestReadmeDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		{"node"}, {"proxy"}, {"up"},
		{"cluster", "status"}, {"cluster", "drain"}, {"cluster", "rebalance"},
	} {
		var out, errb bytes.Buffer
		if rc := run(append(cmd, "--help"), &out, &errb); rc != 0 {
			t.Fatalf("%s --help: rc %d, stderr %q", cmd, rc, errb.String())
		}
		flags := helpFlagRE.FindAllStringSubmatch(out.String(), -1)
		if len(flags) < 3 {
			t.Fatalf("%s --help lists %d flags: %q", cmd, len(flags), out.String())
		}
		for _, m := range flags {
			if !bytes.Contains(readme, []byte("`"+m[1]+"`")) {
				t.Errorf("shardgate %s %s is not in the README", strings.Join(cmd, " "), m[1])
			}
		}
	}
}
