package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/shardgate/shardgate/cluster"
)

// TestJSONLogsReadable: --log-format json writes one JSON object per line
// with durations and named values as the text format shows them, and
// errors as their message.
func TestJSONLogsReadable(t *testing.T) {
	var out bytes.Buffer
	lf := logFlags{level: "info", format: "json"}
	log, err := lf.logger(&out)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("x", "timeout", 5*time.Second, "role", cluster.RoleNode, "err", errors.New("boom"), "n", 3)
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON object: %q: %v", out.String(), err)
	}
	for k, want := range map[string]any{"timeout": "5s", "role": "node", "err": "boom", "n": float64(3)} {
		if rec[k] != want {
			t.Errorf("%s = %#v, want %#v (line %s)", k, rec[k], want, out.String())
		}
	}
	if _, err := (&logFlags{level: "verbose", format: "text"}).logger(&out); err == nil || !bytes.Contains([]byte(err.Error()), []byte("debug, info, warn or error")) {
		t.Errorf("--log-level verbose: %v, want an error listing the levels", err)
	}
}
