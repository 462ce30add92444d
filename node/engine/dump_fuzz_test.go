package engine

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var dumpUpdateSeeds = flag.Bool("dump.update-seeds", false, "TestDumpFuzzSeeds: rewrite testdata/fuzz/FuzzDecodeEntry from dumpSeeds")

// FuzzDecodeEntry feeds arbitrary bytes to DecodeEntry: it must never
// panic, must refuse with one of its errors, and whatever it accepts must
// re-encode to bytes that decode to the same value, share no memory with
// the input, and survive the commands of its kind. Random bytes almost
// never carry a valid CRC, so each input is also tried with its last four
// bytes replaced by the right CRC: that way the fuzzer reaches the parser.
func FuzzDecodeEntry(f *testing.F) {
	for _, enc := range dumpSeeds(f) {
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, slices.Clone(data))
		if len(data) > dumpCRCSize {
			fuzzDecode(t, dumpSeal(slices.Clone(data[:len(data)-dumpCRCSize])))
		}
	})
}

func fuzzDecode(t *testing.T, in []byte) {
	d, err := DecodeEntry(in)
	if err != nil {
		if !errors.Is(err, ErrDumpCorrupt) && !errors.Is(err, ErrDumpChecksum) && !errors.Is(err, ErrDumpVersion) {
			t.Fatalf("unexpected error type: %v", err)
		}
		return
	}
	enc := AppendEntry(nil, d)
	d2, err := DecodeEntry(enc)
	if err != nil {
		t.Fatalf("re-encoding of an accepted input refused: %v", err)
	}
	if enc2 := AppendEntry(nil, d2); !bytes.Equal(enc, enc2) {
		t.Fatalf("re-encoding is not stable")
	}
	for i := range in {
		in[i] ^= 0xa5
	}
	if again := AppendEntry(nil, d); !bytes.Equal(again, enc) {
		t.Fatalf("the decoded value changed with its input")
	}
	// Both copies must answer the reads alike and take writes without
	// breaking: what DecodeEntry accepts, the engine must handle.
	e := newDumpEnv(t)
	e.store("{f}a", d)
	e.store("{f}b", d2)
	if e.peek("{f}a") == nil { // expired at the test clock: nothing to run
		return
	}
	compareBatteries(t, e, "{f}a", "{f}b", "decoded")
	for _, args := range dumpFollowUps(d, "{f}a") {
		e.do(args...)
	}
	dumpBattery(e, "{f}a")
}

// TestDumpFuzzSeeds checks that the committed seed corpus still holds
// valid encodings (a format change must come with new seeds: run with
// -dump.update-seeds to write them from dumpSeeds).
func TestDumpFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeEntry")
	if *dumpUpdateSeeds {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, enc := range dumpSeeds(t) {
			body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(enc)) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, "seed_"+name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "seed_*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(dumpSeeds(t)) {
		t.Fatalf("%d seed files in %s, want one per dumpSeeds value", len(files), dir)
	}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		head, lit, ok := strings.Cut(string(raw), "\n")
		lit = strings.TrimSpace(lit)
		if !ok || head != "go test fuzz v1" || !strings.HasPrefix(lit, "[]byte(") || !strings.HasSuffix(lit, ")") {
			t.Fatalf("%s: not a fuzz corpus file", name)
		}
		s, err := strconv.Unquote(lit[len("[]byte(") : len(lit)-1])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := DecodeEntry([]byte(s)); err != nil {
			t.Errorf("%s: no longer a valid encoding: %v", name, err)
		}
	}
}
