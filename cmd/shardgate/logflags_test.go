package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
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

// TestProxyStartErrors: a metrics address already in use is a runtime
// failure (exit 1, as for --addr), logged through the logger as the node
// logs it; a node listed twice is a usage error (exit 2); neither message
// repeats its prefix.
func TestProxyStartErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		args []string
		rc   int
		want string
	}{
		{[]string{"--addr", "127.0.0.1:0", "--nodes", "127.0.0.1:1", "--metrics", busy.Addr().String()}, 1, `msg="proxy could not start" err="proxy: metrics listener: `},
		{[]string{"--addr", "127.0.0.1:0", "--nodes", "127.0.0.1:1,127.0.0.1:1"}, 2, "shardgate proxy: --nodes: node 127.0.0.1:1 listed twice"},
	} {
		var out bytes.Buffer
		rc := runProxy(context.Background(), tc.args, &out, &out)
		if rc != tc.rc || !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "proxy: proxy:") {
			t.Errorf("shardgate proxy %q: rc %d, output %q; want rc %d and %q", tc.args, rc, out.String(), tc.rc, tc.want)
		}
	}
}
