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
