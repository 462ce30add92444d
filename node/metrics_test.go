package node_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
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
	start, ok := m["process_start_time_seconds"]
	if !ok {
		t.Fatal("no process_start_time_seconds")
	}
	if !stillServingMetrics(maddr.String(), start) {
		t.Fatal("the check does not see the live endpoint")
	}
	stop()
	if stillServingMetrics(maddr.String(), start) {
		t.Error("metrics still listening after Close")
	}
}

// stillServing reports whether addr, where a node served commands until
// it closed, still reaches that node. Other test processes listen on
// ephemeral ports too and may take the freed port at once, so a
// connection counts only if what answers CLUSTER MYID is the node whose
// ID was myID.
func stillServing(addr, myID string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	io.WriteString(conn, "CLUSTER MYID\r\n")
	br := bufio.NewReader(conn)
	br.ReadString('\n') // the bulk string's length
	id, _ := br.ReadString('\n')
	return strings.TrimSpace(id) == myID
}

// stillServingMetrics is stillServing for a node's /metrics: it counts
// only if what answers serves this process's node metrics (the same
// process_start_time_seconds, start).
func stillServingMetrics(addr string, start float64) bool {
	client := http.Client{Timeout: time.Second}
	res, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	node, same := false, false
	for _, line := range strings.Split(string(body), "\n") {
		node = node || strings.HasPrefix(line, "shardgate_node_")
		if v, ok := strings.CutPrefix(line, "process_start_time_seconds "); ok {
			f, err := strconv.ParseFloat(v, 64)
			same = err == nil && f == start
		}
	}
	return node && same
}
