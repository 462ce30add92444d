package proxy_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestMain stops the shared oracles of the differential tests when the
// package's tests end: the cluster-mode redis-server of difftest.Start and
// the 3-master Redis Cluster of sharedCluster.
func TestMain(m *testing.M) {
	code := m.Run()
	stopSharedCluster()
	difftest.StopShared()
	os.Exit(code)
}

func onPath(bin string) bool {
	_, err := exec.LookPath(bin)
	return err == nil
}

// skipOrFail skips a test that lacks a Redis program, except under CI=true,
// where it fails: CI must never pass by skipping the differential tests.
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// startPlainOracle starts a plain (non-cluster) redis-server for a
// differential test and returns its address; without redis-server the test
// is skipped (failed under CI). what names the test in the message.
func startPlainOracle(t *testing.T, what string) string {
	t.Helper()
	if !onPath(difftest.RedisBinary) {
		skipOrFail(t, "redis-server not on PATH: the "+what+" differential test needs Redis 7.0")
	}
	r, err := difftest.StartPlainRedis()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r.Addr
}

// diffSeq runs cmds in order on the oracle and on the proxy connection
// and reports every reply that differs.
func diffSeq(t *testing.T, oracle, px *difftest.Conn, proto int, cmds [][]string) {
	t.Helper()
	for _, args := range cmds {
		want, err := oracle.DoStrings(args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := do(t, px, args...); !difftest.Equal(want, got) {
			t.Errorf("%s", difftest.Mismatch(args, proto, want, got))
		}
	}
}
