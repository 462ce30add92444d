package node_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestMain stops the shared redis-server of the differential tests when
// the package's tests end (one TestMain per test binary: keep it here).
func TestMain(m *testing.M) { difftest.Main(m) }
