package proxy_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/promscrape"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// scrape reads /metrics into series name{labels} -> value.
func scrape(t *testing.T, addr string) map[string]float64 { return promscrape.Scrape(t, addr) }

// pollUntil retries cond until it holds or limit passes.
func pollUntil(t *testing.T, limit time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	cl := proxytest.Start(t, 3, proxy.Options{MetricsAddr: "127.0.0.1:0"})
	maddr := cl.Proxy.MetricsAddr()
	if maddr == nil {
		t.Fatal("MetricsAddr is nil with metrics on")
	}
	addr := maddr.String()
	c := dial(t, cl.Addr, 2)

	// A pipeline of 5 SETs and 7 GETs, some local and unknown commands.
	for i := range 5 {
		if err := c.Send([]byte("SET"), fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 7 {
		if err := c.Send([]byte("GET"), fmt.Appendf(nil, "k%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for range 12 {
		if v, err := c.Receive(); err != nil || v.IsError() {
			t.Fatalf("pipeline reply %v %v", v, err)
		}
	}
	do(t, c, "PING")
	do(t, c, "CLIENT", "LIST")
	do(t, c, "NOSUCHCOMMAND", "x")
	do(t, c, "READONLY")
	if v := do(t, c, "MSET", "a", "1", "b", "2"); !strings.HasPrefix(v.Text(), "CROSSSLOT") {
		t.Fatalf("MSET a b: %v", v)
	}

	m := scrape(t, addr)
	want := map[string]float64{
		`shardgate_proxy_commands_total{command="set"}`:                            5,
		`shardgate_proxy_commands_total{command="get"}`:                            7,
		`shardgate_proxy_commands_total{command="ping"}`:                           1,
		`shardgate_proxy_commands_total{command="client|list"}`:                    1,
		`shardgate_proxy_commands_total{command="unknown"}`:                        1,
		`shardgate_proxy_commands_total{command="readonly"}`:                       1,
		`shardgate_proxy_commands_total{command="mset"}`:                           1,
		`shardgate_proxy_command_duration_seconds_count{command="get"}`:            7,
		`shardgate_proxy_command_duration_seconds_bucket{command="get",le="+Inf"}`: 7,
		`shardgate_proxy_crossslot_rejections_total`:                               1,
		`shardgate_proxy_error_replies_total{code="CROSSSLOT"}`:                    1,
		`shardgate_proxy_error_replies_total{code="ERR"}`:                          1,
		`shardgate_proxy_connected_clients`:                                        1,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if m[`shardgate_proxy_command_duration_seconds_sum{command="get"}`] <= 0 {
		t.Error("get latency sum is not positive")
	}
	var requests float64
	for _, n := range cl.NodeAddrs {
		requests += m[fmt.Sprintf(`shardgate_proxy_node_requests_total{node="%s"}`, n)]
		if _, ok := m[fmt.Sprintf(`shardgate_proxy_node_errors_total{node="%s"}`, n)]; !ok {
			t.Errorf("no error counter for node %s", n)
		}
	}
	if requests != 12 {
		t.Errorf("node requests sum to %v, want 12", requests)
	}
	for _, k := range []string{"go_goroutines", "process_open_fds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s missing (runtime collectors)", k)
		}
	}
	for k := range m {
		if strings.Contains(k, `command="k`) {
			t.Errorf("a key became a label: %s", k)
		}
	}

	// A stopped node's errors count up while its slots fail.
	key := keyOnNode(t, cl.Proxy.Topology(), 1, "dead")
	cl.StopNode[1]()
	series := fmt.Sprintf(`shardgate_proxy_node_errors_total{node="%s"}`, cl.NodeAddrs[1])
	pollUntil(t, 5*time.Second, func() error {
		do(t, c, "GET", key)
		if got := scrape(t, addr)[series]; got < 1 {
			return fmt.Errorf("%s = %v after the node stopped", series, got)
		}
		return nil
	})

	// Close stops the metrics server with the proxy.
	cl.Stop()
	if res, err := http.Get("http://" + addr + "/metrics"); err == nil {
		res.Body.Close()
		t.Error("metrics still served after Close")
	}
}

func TestMetricsBadAddress(t *testing.T) {
	topo, err := proxy.NewStaticTopology([]string{"127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proxy.New(proxy.Options{Topology: topo, MetricsAddr: "no-port"}); err == nil {
		t.Error("New accepted metrics address no-port")
	}
	// An address in use is New's error too.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := proxy.New(proxy.Options{Topology: topo, MetricsAddr: busy.Addr().String()}); err == nil {
		t.Error("New accepted a metrics address in use")
	}
	// A proxy closed without ever serving releases its metrics listener.
	srv, err := proxy.New(proxy.Options{Topology: topo, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	maddr := srv.MetricsAddr().String()
	srv.Close()
	if ln, err := net.Listen("tcp", maddr); err != nil {
		t.Errorf("metrics address still taken after Close: %v", err)
	} else {
		ln.Close()
	}
}

// TestMetricsOffByDefault: no metrics server, and MetricsAddr is nil.
func TestMetricsOffByDefault(t *testing.T) {
	cl := proxytest.Start(t, 1, proxy.Options{})
	if a := cl.Proxy.MetricsAddr(); a != nil {
		t.Errorf("MetricsAddr = %v with metrics off", a)
	}
	do(t, dial(t, cl.Addr, 2), "SET", "k", "v")
}

// TestMetricsSurviveResetStat: CONFIG RESETSTAT starts INFO's counters
// again, as Redis's, but the Prometheus counters keep counting up (a
// counter that goes down reads as a restart and breaks rate()).
func TestMetricsSurviveResetStat(t *testing.T) {
	cl := proxytest.Start(t, 2, proxy.Options{MetricsAddr: "127.0.0.1:0"})
	addr := cl.Proxy.MetricsAddr().String()
	c := dial(t, cl.Addr, 2)
	do(t, c, "MGET", "a", "b") // CROSSSLOT
	do(t, c, "NOSUCH")         // ERR
	series := []string{
		"shardgate_proxy_crossslot_rejections_total",
		"shardgate_proxy_connections_received_total",
		`shardgate_proxy_error_replies_total{code="CROSSSLOT"}`,
		`shardgate_proxy_error_replies_total{code="ERR"}`,
	}
	before := scrape(t, addr)
	for _, s := range series {
		if before[s] < 1 {
			t.Fatalf("%s = %v before the reset, want at least 1", s, before[s])
		}
	}
	do(t, c, "CONFIG", "RESETSTAT")
	after := scrape(t, addr)
	for _, s := range series {
		if after[s] < before[s] {
			t.Errorf("%s went down at CONFIG RESETSTAT: %v, then %v", s, before[s], after[s])
		}
	}
	for _, f := range []string{"crossslot_rejections", "total_error_replies", "total_connections_received"} {
		if v := infoField(t, c, "stats", f); v != "0" {
			t.Errorf("INFO %s after CONFIG RESETSTAT = %s, want 0", f, v)
		}
	}
}
