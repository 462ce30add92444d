package scaleload

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// testConfig is a small dataset and a short settle for tests.
func testConfig(addr string) Config {
	return Config{Addr: addr, Keys: 1500, Workers: 4, Seed: 7, Prefix: "t",
		BitmapMaxOffset: 200_000, Settle: 200 * time.Millisecond, Window: 250 * time.Millisecond, MaxSamples: 50}
}

// startProxy runs three in-process nodes behind a proxy.
func startProxy(t *testing.T) string {
	t.Helper()
	return proxytest.Start(t, 3, proxy.Options{}).Addr
}

// startRedis runs a plain redis-server, the reference: the model must
// agree with Redis itself before it can judge shardgate.
func startRedis(t *testing.T) string {
	t.Helper()
	r, err := difftest.StartPlainRedis()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("needs redis-server (the reference) on PATH: %v", err)
	}
	t.Cleanup(r.Stop)
	return r.Addr
}

// runFor populates, runs for d and verifies, failing the test on any
// error, mismatch or verify failure.
func runFor(t *testing.T, cfg Config, d time.Duration) (*Model, *Stats, Report) {
	t.Helper()
	ctx := context.Background()
	m, err := Populate(ctx, cfg)
	if err != nil {
		t.Fatalf("Populate: %v", err)
	}
	if rep, err := Verify(ctx, cfg, m); err != nil || !rep.OK() {
		t.Fatalf("Verify after Populate: %v\n%v", err, rep)
	}
	var mu sync.Mutex
	var windows []Window
	cfg.OnWindow = func(w Window) {
		mu.Lock()
		defer mu.Unlock()
		windows = append(windows, w)
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	st, err := Run(runCtx, cfg, m)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("run: %v", st)
	rep, err := Verify(ctx, cfg, m)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	t.Logf("%v", rep)
	if !rep.OK() {
		t.Errorf("Verify failed:\n%v", rep)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(windows) < 2 || len(windows) != len(st.Windows()) {
		t.Errorf("OnWindow saw %d windows, Stats has %d; want the same, at least 2", len(windows), len(st.Windows()))
	}
	return m, st, rep
}

func checkClean(t *testing.T, st *Stats) {
	t.Helper()
	tot := st.Total()
	if tot.Ops < 500 {
		t.Errorf("only %d operations", tot.Ops)
	}
	if tot.Errors != 0 || tot.Mismatches != 0 {
		t.Errorf("%d errors (%q), %d mismatches (%q)", tot.Errors, st.ErrorSamples(), tot.Mismatches, st.MismatchSamples())
	}
	cmds := st.Commands()
	for _, c := range []string{"SET", "MSET", "SET PX", "SET PXAT", "INCR", "MULTI", "GET", "MGET", "SETBIT", "GETBIT",
		"BITCOUNT", "PFADD", "PFCOUNT", "LPUSH", "LMOVE", "RPOPLPUSH", "BLMOVE", "LREM", "LLEN", "LRANGE",
		"XADD", "XREADGROUP", "XCLAIM", "XACK", "XLEN", "XPENDING"} {
		if cmds[c].Ops == 0 {
			t.Errorf("no %s was sent", c)
		}
	}
}

func TestRunVerifyRedis(t *testing.T) {
	cfg := testConfig(startRedis(t))
	_, st, _ := runFor(t, cfg, 1500*time.Millisecond)
	checkClean(t, st)
}

func TestRunVerifyProxy(t *testing.T) {
	addr := startProxy(t)
	// The proxy keeps separate node connections per protocol version.
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			cfg := testConfig(addr)
			cfg.Protocol = proto
			_, st, _ := runFor(t, cfg, 1500*time.Millisecond)
			checkClean(t, st)
		})
	}
}

func TestRate(t *testing.T) {
	cfg := testConfig(startProxy(t))
	cfg.Keys, cfg.Rate = 300, 1000
	ctx := context.Background()
	m, err := Populate(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	st, err := Run(runCtx, cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	if ops := st.Total().Ops; ops < 1000 || ops > 1600 {
		t.Errorf("%d operations in 1.5 s at %v/s", ops, cfg.Rate)
	}
}
