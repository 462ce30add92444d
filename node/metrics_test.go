package node_test

import (
	"net"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/promscrape"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestNodeMetrics: the node's /metrics follows what clients did.
func TestNodeMetrics(t *testing.T) {
	srv, addr, stop := nodetest.Start(t, node.Options{MetricsAddr: "127.0.0.1:0"}, nil)
	maddr := srv.MetricsAddr()
	if maddr == nil {
		t.Fatal("MetricsAddr is nil with metrics on")
	}
	c := dial(t, addr, 2)
	for _, cmd := range [][]string{
		{"SET", "a", "1"}, {"SET", "b", "x", "EX", "100"}, {"SET", "c", "3"},
		{"GET", "a"}, {"GET", "missing"},
		{"INCR", "b"},       // ERR value is not an integer: a failed call
		{"GET"},             // wrong arity: a rejected call
		{"LPUSH", "a", "x"}, // WRONGTYPE
	} {
		if _, err := c.DoStrings(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	m := promscrape.Scrape(t, maddr.String())
	for series, want := range map[string]float64{
		`shardgate_node_commands_total{command="set"}`:           3,
		`shardgate_node_commands_total{command="get"}`:           2,
		`shardgate_node_command_failures_total{command="incr"}`:  1,
		`shardgate_node_command_rejections_total{command="get"}`: 1,
		`shardgate_node_error_replies_total{code="ERR"}`:         2,
		`shardgate_node_error_replies_total{code="WRONGTYPE"}`:   1,
		`shardgate_node_keys`:                                    3,
		`shardgate_node_expiring_keys`:                           1,
		`shardgate_node_slots_served`:                            16384,
		`shardgate_node_connected_clients`:                       1,
		`shardgate_node_keyspace_hits_total`:                     1,
		`shardgate_node_keyspace_misses_total`:                   1,
		`shardgate_node_loading`:                                 0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if m[`shardgate_node_command_duration_seconds_total{command="set"}`] <= 0 {
		t.Error("no time recorded for SET")
	}
	if m["shardgate_node_net_input_bytes_total"] <= 0 || m["shardgate_node_connections_received_total"] < 1 {
		t.Error("network counters not counting")
	}
	if _, ok := m["shardgate_node_aof_size_bytes"]; ok {
		t.Error("aof series without a log")
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}

	// CONFIG RESETSTAT restarts INFO's counters, not error replies.
	if _, err := c.DoStrings("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	m = promscrape.Scrape(t, maddr.String())
	if got := m[`shardgate_node_commands_total{command="set"}`]; got != 0 {
		t.Errorf("set after RESETSTAT = %v, want 0", got)
	}
	if got := m[`shardgate_node_error_replies_total{code="WRONGTYPE"}`]; got != 1 {
		t.Errorf("WRONGTYPE after RESETSTAT = %v, want 1", got)
	}

	// The endpoint closes with the node.
	stop()
	if conn, err := net.DialTimeout("tcp", maddr.String(), time.Second); err == nil {
		conn.Close()
		t.Error("metrics still listening after Close")
	}
}

// TestNodeMetricsSlotsServed counts the slots a cluster's table gives the
// node.
func TestNodeMetricsSlotsServed(t *testing.T) {
	srv, _, _ := nodetest.Start(t, node.Options{MetricsAddr: "127.0.0.1:0", Ownership: threeNodes("127.0.0.1:1")}, nil)
	m := promscrape.Scrape(t, srv.MetricsAddr().String())
	if got := m["shardgate_node_slots_served"]; got != 5461 {
		t.Errorf("slots_served = %v, want 5461", got)
	}
}

// TestNodeMetricsBadAddr: a bad or busy metrics address is New's error.
func TestNodeMetricsBadAddr(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, addr := range []string{"nocolon", busy.Addr().String()} {
		if srv, err := node.New(node.Options{MetricsAddr: addr}); err == nil {
			srv.Close()
			t.Errorf("New with metrics address %q: no error", addr)
		}
	}
}
