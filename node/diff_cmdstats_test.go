package node_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestDiffCommandStats compares INFO commandstats and latencystats with
// redis-server's (difftest.CommandStatsScenario).
func TestDiffCommandStats(t *testing.T) {
	difftest.CommandStatsScenario(t, difftest.Start(t))
}

// TestDiffCommandStatsUnblocked: how Redis 7.0 counts a blocking pop
// that did not get an element. Timed out or left by its client: a call,
// not failed, and not in the latency histogram. Ended by CLIENT UNBLOCK,
// TIMEOUT or ERROR: a failed call, in the histogram.
func TestDiffCommandStatsUnblocked(t *testing.T) {
	p := difftest.Start(t)
	c := p.ConnPair
	c.Do(t, "CONFIG", "RESETSTAT")
	c.Do(t, "BLPOP", "q", "0.05")
	for _, how := range []string{"TIMEOUT", "ERROR"} {
		b := p.NewConn(t)
		idR, idN := b.Both(t, "CLIENT", "ID")
		b.Redis.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
		b.Node.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
		waitBlocked(t, c, 1)
		p.Redis.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(idR.Int), how)
		p.Node.DoStrings("CLIENT", "UNBLOCK", fmt.Sprint(idN.Int), how)
		ra, _ := b.Redis.Receive()
		rb, _ := b.Node.Receive()
		b.Compare(t, []string{"BLPOP", "q", "0", "(unblocked " + how + ")"}, ra, rb)
	}
	gone := p.NewConn(t)
	gone.Redis.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
	gone.Node.Send([]byte("BLPOP"), []byte("q"), []byte("0"))
	waitBlocked(t, c, 1)
	gone.Redis.NetConn().Close()
	gone.Node.NetConn().Close()
	waitBlocked(t, c, 0)
	// The node counts the pop as its client's goroutine ends.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if v, _ := p.Node.DoStrings("INFO", "commandstats"); strings.Contains(v.Text(), "cmdstat_blpop:calls=4,") {
			break
		}
	}
	difftest.CompareCommandStats(t, c)
	difftest.CompareHistograms(t, c, "blpop")
}
