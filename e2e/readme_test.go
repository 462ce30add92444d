package e2e

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/slots"
)

// readmeCommandRE matches a command in the README's table: `GET`,
// `CLIENT NO-EVICT`, `BITFIELD_RO`.
var readmeCommandRE = regexp.MustCompile("`([A-Z_-]+(?: [A-Z_-]+)?)`")

// TestReadmeListsEveryCommand: the README's table of supported commands
// names exactly the commands and subcommands of the command table.
func TestReadmeListsEveryCommand(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Supported commands\n")
	if !ok {
		t.Fatal("README has no '## Supported commands' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Group") {
			continue
		}
		for _, m := range readmeCommandRE.FindAllStringSubmatch(line, -1) {
			listed = append(listed, strings.ToLower(m[1]))
		}
	}
	var table []string
	for _, c := range slots.All() {
		if len(c.Subcommands) == 0 {
			table = append(table, c.Name)
			continue
		}
		for _, sub := range c.Subcommands {
			table = append(table, c.Name+" "+sub.Name)
		}
	}
	slices.Sort(listed)
	slices.Sort(table)
	for _, name := range table {
		if _, found := slices.BinarySearch(listed, name); !found {
			t.Errorf("README does not list %q", strings.ToUpper(name))
		}
	}
	for i, name := range listed {
		if i > 0 && listed[i-1] == name {
			t.Errorf("README lists %q twice", strings.ToUpper(name))
		}
		if _, found := slices.BinarySearch(table, name); !found {
			t.Errorf("README lists %q, which the command table lacks", strings.ToUpper(name))
		}
	}
}
