package cmdstats

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// LATENCY, as Redis 7.0 answers it with its latency monitor off
// (latency-monitor-threshold 0, the default and the only value here): no
// event is ever recorded, so LATEST and HISTORY are empty, RESET resets
// nothing, GRAPH has no samples and DOCTOR says monitoring is disabled.
// HISTOGRAM reads the per-command histograms INFO latencystats does.

// LatencyCommands are the subcommands Latency answers, by full name.
var LatencyCommands = []string{
	"latency|latest", "latency|history", "latency|reset", "latency|doctor",
	"latency|graph", "latency|histogram", "latency|help",
}

// LatencyHelp is LATENCY HELP's text.
var LatencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
	"HELP",
	"    Prints this help.",
}

// latencyDoctorOff is LATENCY DOCTOR's report with monitoring off.
const latencyDoctorOff = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. " +
	"You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. " +
	"If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"

// Latency answers LATENCY <subcommand> (args[1], already resolved and
// arity-checked against the command table).
func (t *Table) Latency(w *resp.Writer, args [][]byte) {
	switch strings.ToLower(string(args[1])) {
	case "latest", "history":
		w.Array(0)
	case "reset":
		w.Int(0)
	case "doctor":
		w.Verbatim(latencyDoctorOff)
	case "graph":
		w.Error(fmt.Sprintf("ERR No samples available for event '%s'", resp.CString(args[2], len(args[2])))) // Redis's %s
	case "histogram":
		t.writeHistograms(w, args[2:])
	default: // help
		redisinfo.WriteHelp(w, LatencyHelp)
	}
}

// writeHistograms is LATENCY HISTOGRAM [command ...]: a map from each
// named command (a container names its subcommands too; unknown names
// are skipped), or every command, that has a histogram to its calls and
// cumulative distribution.
func (t *Table) writeHistograms(w *resp.Writer, names [][]byte) {
	// Each histogram is loaded once: CONFIG RESETSTAT may drop it
	// meanwhile.
	type entry struct {
		id int
		h  *Histogram
	}
	var list []entry
	add := func(id int) {
		if h := t.cmds[id].hist.Load(); h != nil {
			list = append(list, entry{id, h})
		}
	}
	if len(names) == 0 {
		for _, id := range t.byName {
			add(id)
		}
	}
	for _, name := range names {
		cmd := lookupFullName(name)
		if cmd == nil {
			continue
		}
		add(cmd.ID)
		for _, sub := range cmd.Subcommands {
			add(sub.ID)
		}
	}
	w.Map(len(list))
	for _, e := range list {
		counts := e.h.Snapshot()
		w.BulkString(t.names[e.id])
		w.Map(2)
		w.BulkString("calls")
		w.Int(counts.Total())
		w.BulkString("histogram_usec")
		cdf := counts.cdf()
		w.Map(len(cdf))
		for _, p := range cdf {
			w.Int(p.usec)
			w.Int(p.count)
		}
	}
}

// lookupFullName finds a command by its full name, "get" or
// "config|get", in any case, as Redis's lookupCommandBySds does.
func lookupFullName(name []byte) *slots.Command {
	parent, sub, isSub := bytes.Cut(name, []byte("|"))
	cmd := slots.Lookup(parent)
	if cmd == nil || !isSub {
		return cmd
	}
	if bytes.IndexByte(sub, '|') >= 0 || len(cmd.Subcommands) == 0 {
		return nil
	}
	return slots.LookupSub(cmd, sub)
}

// cdfPoint is one step of LATENCY HISTOGRAM's distribution.
type cdfPoint struct{ usec, count int64 }

// cdf is the cumulative distribution Redis reports, read with its HDR
// log iterator from 1024 ns doubling: at each power of two, the highest
// value of its bucket in whole microseconds and how many values are no
// more than that, where that count grew. The iterator stops at the last
// bucket, so the levels end with 2^29 ns: like Redis, values past that
// bucket (half a second and more) are counted in calls only.
func (c *Counts) cdf() []cdfPoint {
	var out []cdfPoint
	var cum, prev int64
	i := 0
	for level := int64(1024); level <= valueAt(countsLen-1); level *= 2 {
		top := highestEquivalent(level)
		for ; i < countsLen && valueAt(i) <= top; i++ {
			cum += c[i]
		}
		if cum > prev {
			out = append(out, cdfPoint{top / 1000, cum})
			prev = cum
		}
	}
	return out
}
