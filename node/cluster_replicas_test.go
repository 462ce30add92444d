package node_test

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
	"github.com/shardgate/shardgate/node"
	"github.com/shardgate/shardgate/node/nodetest"
)

// TestClusterReplicas: a standalone node is the one master of its cluster,
// without replicas. CLUSTER REPLICAS and SLAVES answer an empty array for
// its id and Redis's errors for any other id (ids are case-sensitive) and
// for a missing argument, in both protocols. COUNT-FAILURE-REPORTS
// counts 0 for it and knows no other id.
func TestClusterReplicas(t *testing.T) {
	_, addr, _ := nodetest.Start(t, node.Options{}, nil)
	for _, proto := range []int{2, 3} {
		c, err := difftest.DialProto(addr, proto)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		id, err := c.DoStrings("CLUSTER", "MYID")
		if err != nil || len(id.Str) != 40 {
			t.Fatalf("CLUSTER MYID: %v %v", id, err)
		}
		for _, tc := range []struct {
			args []string
			want difftest.Value
		}{
			{[]string{"CLUSTER", "REPLICAS", string(id.Str)}, difftest.ArrayOf()},
			{[]string{"CLUSTER", "SLAVES", string(id.Str)}, difftest.ArrayOf()},
			{[]string{"CLUSTER", "REPLICAS", "abc"}, difftest.Err("ERR Unknown node abc")},
			{[]string{"cluster", "slaves", strings.ToUpper(string(id.Str))}, difftest.Err("ERR Unknown node " + strings.ToUpper(string(id.Str)))},
			{[]string{"CLUSTER", "REPLICAS"}, difftest.Err("ERR wrong number of arguments for 'cluster|replicas' command")},
			{[]string{"CLUSTER", "SLAVES", "a", "b"}, difftest.Err("ERR wrong number of arguments for 'cluster|slaves' command")},
			{[]string{"CLUSTER", "COUNT-FAILURE-REPORTS", string(id.Str)}, difftest.Int(0)},
			{[]string{"CLUSTER", "COUNT-FAILURE-REPORTS", "abc"}, difftest.Err("ERR Unknown node abc")},
			{[]string{"CLUSTER", "COUNT-FAILURE-REPORTS"}, difftest.Err("ERR wrong number of arguments for 'cluster|count-failure-reports' command")},
		} {
			got, err := c.DoStrings(tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !difftest.Equal(got, tc.want) {
				t.Errorf("RESP%d %q = %s, want %s", proto, tc.args, got, tc.want)
			}
		}
	}
}
