package difftest

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// oracle is the one redis-server a test binary shares. Starting redis per
// test would cost ~100 ms each; sharing is safe because Start serialises
// Pairs (see lock) and flushes the server before handing it out.
//
// This is package-level state on purpose: it lives exactly as long as the
// test process, and Main stops it when the tests end.
var oracle struct {
	once  sync.Once
	redis *Redis
	err   error
	// lock is held by the live Pair, so tests that run in parallel take
	// turns on the shared server instead of flushing each other's data.
	lock sync.Mutex
}

// Main runs a package's tests and then stops the shared redis-server.
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { difftest.Main(m) }
//
// Without it the server is still killed when the test binary exits (on
// Linux, through the parent-death signal), but its temporary directory
// stays behind.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared redis-server if one was started.
func StopShared() {
	if oracle.redis != nil {
		oracle.redis.Stop()
	}
}

// sharedRedis returns the shared server, starting it on first use. A
// missing redis-server skips the test, except under CI=true where it
// fails: CI must never pass by skipping every differential test.
func sharedRedis(t testing.TB) *Redis {
	t.Helper()
	if _, err := exec.LookPath(RedisBinary); err != nil {
		msg := "redis-server not on PATH: differential tests need Redis 7.0 (apt-get install redis-server)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	oracle.once.Do(func() {
		oracle.redis, oracle.err = StartRedis()
	})
	if oracle.err != nil {
		t.Fatal(oracle.err)
	}
	return oracle.redis
}
