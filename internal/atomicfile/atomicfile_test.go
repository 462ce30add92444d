package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first", "second, longer than the first", ""} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != content {
			t.Fatalf("after Write(%q) the file holds %q (%v)", content, b, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x")); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}
