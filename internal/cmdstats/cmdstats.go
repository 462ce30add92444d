// Package cmdstats keeps Redis 7.0's per-command statistics: INFO
// commandstats (calls, time, rejected and failed calls of each command
// and subcommand) and INFO latencystats (a latency histogram per command,
// read at the latency-tracking-info-percentiles). It also serves the two
// parameters that steer them, latency-tracking and
// latency-tracking-info-percentiles.
//
// The hot path touches no shared memory: each connection notes its
// commands in a Pending, and the server publishes it into the Table once
// per batch (when it writes the replies), one atomic add per counter per
// run of equal commands and one per latency sample.
package cmdstats

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/shardgate/shardgate/internal/redisconf"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Table is a server's statistics by command, indexed by slots.Command.ID.
type Table struct {
	cmds     []entry
	names    []string // by ID: the command's full name (config|get)
	byName   []int    // IDs in name order, as INFO lists them
	tracking atomic.Bool
	// percentiles is latency-tracking-info-percentiles.
	percentiles atomic.Pointer[[]float64]
}

// entry is one command's counters, on a cache line of its own: clients on
// different cores publish different commands side by side.
type entry struct {
	calls, ns, rejected, failed atomic.Int64
	hist                        atomic.Pointer[Histogram]
	_                           [24]byte
}

// New returns a table for every command of the command table, and for
// the Redis commands shardgate does not serve (whose cross-slot calls are
// refused, and count as rejected), with Redis's defaults: latency
// tracking on, percentiles 50, 99 and 99.9.
func New() *Table {
	t := &Table{cmds: make([]entry, slots.NumAllIDs()), names: make([]string, slots.NumAllIDs())}
	var walk func(c *slots.Command)
	walk = func(c *slots.Command) {
		t.names[c.ID] = c.FullName
		t.byName = append(t.byName, c.ID)
		for _, sub := range c.Subcommands {
			walk(sub)
		}
	}
	for _, c := range slots.All() {
		walk(c)
	}
	for _, c := range slots.Unserved() {
		walk(c)
	}
	slices.SortFunc(t.byName, func(a, b int) int { return strings.Compare(t.names[a], t.names[b]) })
	t.tracking.Store(true)
	p := []float64{50, 99, 99.9}
	t.percentiles.Store(&p)
	return t
}

// Pending is one connection's statistics not yet in the Table. Its owner
// goroutine alone uses it.
type Pending struct {
	ops []op
}

// op is one call (ns >= 0) or one rejection (ns < 0).
type op struct {
	id     int32
	failed bool
	// untimed: counted in calls and usec but not in the latency
	// histogram (a blocking command that timed out or whose client left).
	untimed bool
	// noCall: the call was counted when it blocked (Blocked); this is
	// its end, which adds its time and whether it failed.
	noCall bool
	ns     int64
}

// maxPending bounds a Pending: a longer pipeline publishes as it goes.
const maxPending = 256

// Call notes a call of command id that took ns nanoseconds (without the
// time it waited blocked) and whether it replied with an error.
func (t *Table) Call(p *Pending, id int, ns int64, failed bool) {
	p.ops = append(p.ops, op{id: int32(id), failed: failed, ns: max(ns, 0)})
	if len(p.ops) >= maxPending {
		t.Publish(p)
	}
}

// CallUntimed is Call for a blocking command that timed out or whose
// client left while it waited: Redis 7.0 counts it in commandstats but
// leaves it out of the latency histogram.
func (t *Table) CallUntimed(p *Pending, id int, ns int64) {
	p.ops = append(p.ops, op{id: int32(id), untimed: true, ns: max(ns, 0)})
	if len(p.ops) >= maxPending {
		t.Publish(p)
	}
}

// Blocked notes a call of command id that starts to wait: Redis 7.0
// counts the call when the command blocks. Its end is noted with
// Unblocked.
func (t *Table) Blocked(p *Pending, id int) {
	p.ops = append(p.ops, op{id: int32(id), untimed: true})
}

// Unblocked notes the end of a call Blocked counted: its time, whether it
// failed, and whether the latency histogram takes it (served or ended by
// CLIENT UNBLOCK; not timed out, nor left by its client).
func (t *Table) Unblocked(p *Pending, id int, ns int64, failed, timed bool) {
	p.ops = append(p.ops, op{id: int32(id), noCall: true, untimed: !timed, failed: failed, ns: max(ns, 0)})
	if len(p.ops) >= maxPending {
		t.Publish(p)
	}
}

// Rejected notes a command refused before it ran (wrong arity, NOAUTH,
// CROSSSLOT, MOVED, OOM, ...): Redis's rejected_calls.
func (t *Table) Rejected(p *Pending, id int) {
	p.ops = append(p.ops, op{id: int32(id), ns: -1})
	if len(p.ops) >= maxPending {
		t.Publish(p)
	}
}

// Publish adds p's notes to the table and empties p.
func (t *Table) Publish(p *Pending) {
	ops := p.ops
	if len(ops) == 0 {
		return
	}
	tracking := t.tracking.Load()
	for i := 0; i < len(ops); {
		id := ops[i].id
		var calls, ns, rejected, failed int64
		ran := false
		j := i
		for ; j < len(ops) && ops[j].id == id; j++ {
			o := ops[j]
			if o.ns < 0 {
				rejected++
				continue
			}
			ran = true
			if !o.noCall {
				calls++
			}
			ns += o.ns
			if o.failed {
				failed++
			}
		}
		e := &t.cmds[id]
		if ran {
			e.calls.Add(calls)
			e.ns.Add(ns)
			if tracking && timed(ops[i:j]) {
				h := e.histogram()
				for _, o := range ops[i:j] {
					if o.ns >= 0 && !o.untimed {
						h.Record(asRedisMeasures(o.ns))
					}
				}
			}
		}
		if rejected > 0 {
			e.rejected.Add(rejected)
		}
		if failed > 0 {
			e.failed.Add(failed)
		}
		i = j
	}
	p.ops = ops[:0]
}

// timed reports whether ops hold a call for the latency histogram.
func timed(ops []op) bool {
	for _, o := range ops {
		if o.ns >= 0 && !o.untimed {
			return true
		}
	}
	return false
}

// asRedisMeasures rounds a duration to whole microseconds, as Redis's
// ustime() differences are, before the histogram sees it in nanoseconds:
// its percentiles then fall on the values Redis's do (2.007 µs, not 2.3).
func asRedisMeasures(ns int64) int64 { return (ns + 500) / 1000 * 1000 }

// histogram returns e's histogram, creating it on first use (Redis
// allocates one per command on its first call).
func (e *entry) histogram() *Histogram {
	for {
		if h := e.hist.Load(); h != nil {
			return h
		}
		// Lost to another client: take theirs, unless a CONFIG
		// RESETSTAT dropped it meanwhile.
		if h := new(Histogram); e.hist.CompareAndSwap(nil, h) {
			return h
		}
	}
}

// Reset forgets every count and histogram (CONFIG RESETSTAT).
func (t *Table) Reset() {
	for i := range t.cmds {
		e := &t.cmds[i]
		e.calls.Store(0)
		e.ns.Store(0)
		e.rejected.Store(0)
		e.failed.Store(0)
		e.hist.Store(nil)
	}
}

// Stat is one command's counters.
type Stat struct {
	Name                          string
	Calls, Usec, Rejected, Failed int64
}

// Snapshot returns the commands with a call, a rejection or a failure, in
// name order.
func (t *Table) Snapshot() []Stat {
	var out []Stat
	for _, id := range t.byName {
		e := &t.cmds[id]
		s := Stat{Name: t.names[id], Calls: e.calls.Load(), Usec: e.ns.Load() / 1000,
			Rejected: e.rejected.Load(), Failed: e.failed.Load()}
		if s.Calls != 0 || s.Rejected != 0 || s.Failed != 0 {
			out = append(out, s)
		}
	}
	return out
}

// CommandStats writes INFO commandstats's lines, one per command with a
// call, a rejection or a failure. Redis lists them in its command
// dictionary's hash order; here they are in name order.
func (t *Table) CommandStats(field func(k, v string)) {
	var b []byte
	for _, s := range t.Snapshot() {
		b = append(b[:0], "calls="...)
		b = strconv.AppendInt(b, s.Calls, 10)
		b = append(b, ",usec="...)
		b = strconv.AppendInt(b, s.Usec, 10)
		b = append(b, ",usec_per_call="...)
		b = strconv.AppendFloat(b, usecPerCall(s.Usec, s.Calls), 'f', 2, 64)
		b = append(b, ",rejected_calls="...)
		b = strconv.AppendInt(b, s.Rejected, 10)
		b = append(b, ",failed_calls="...)
		b = strconv.AppendInt(b, s.Failed, 10)
		field("cmdstat_"+s.Name, string(b))
	}
}

// usecPerCall divides as Redis does, in single precision
// ((float)microseconds/calls), so that large sums round alike.
func usecPerCall(usec, calls int64) float64 {
	if calls == 0 {
		return 0
	}
	return float64(float32(usec) / float32(calls))
}

// LatencyStats writes INFO latencystats's lines: for each command with a
// histogram, its value in microseconds at each configured percentile.
// With latency-tracking off the section is empty.
func (t *Table) LatencyStats(field func(k, v string)) {
	if !t.tracking.Load() {
		return
	}
	ps := *t.percentiles.Load()
	var b []byte
	for _, id := range t.byName {
		h := t.cmds[id].hist.Load()
		if h == nil {
			continue
		}
		b = b[:0]
		counts := h.Snapshot()
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, 'p')
			b = appendPercentile(b, p)
			b = append(b, '=')
			b = strconv.AppendFloat(b, float64(counts.ValueAt(p))/1000, 'f', 3, 64)
		}
		field("latency_percentiles_usec_"+t.names[id], string(b))
	}
}

// appendPercentile formats a percentile as Redis does: "%f" with the
// trailing zeros (and a trailing point) trimmed.
func appendPercentile(b []byte, p float64) []byte {
	s := strconv.FormatFloat(p, 'f', 6, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return append(b, s...)
}

// TrackingParam serves latency-tracking: yes or no.
func (t *Table) TrackingParam() redisconf.Param {
	return redisconf.Param{
		Name: "latency-tracking",
		Get: func() string {
			if t.tracking.Load() {
				return "yes"
			}
			return "no"
		},
		Check: func(v string) (func(), string) {
			on, ok := redisconf.ParseYesNo(v)
			if !ok {
				return nil, resp.ConfigReasonYesNo
			}
			return func() { t.tracking.Store(on) }, ""
		},
	}
}

// PercentilesParam serves latency-tracking-info-percentiles: numbers from
// 0 to 100 separated by single spaces, or nothing.
func (t *Table) PercentilesParam() redisconf.Param {
	return redisconf.Param{
		Name: "latency-tracking-info-percentiles",
		Get: func() string {
			var b []byte
			for i, p := range *t.percentiles.Load() {
				if i > 0 {
					b = append(b, ' ')
				}
				b = appendPercentile(b, p)
			}
			return string(b)
		},
		Check: func(v string) (func(), string) {
			ps, reason := ParsePercentiles(v)
			if reason != "" {
				return nil, reason
			}
			return func() { t.percentiles.Store(&ps) }, ""
		},
	}
}

// ParsePercentiles reads latency-tracking-info-percentiles as Redis
// does: the value split at each single space, each part a number as
// strtod reads it (not NaN), from 0 to 100.
func ParsePercentiles(v string) ([]float64, string) {
	ps := []float64{}
	if v == "" {
		return ps, ""
	}
	for _, part := range strings.Split(v, " ") {
		f, ok := string2d(part)
		if !ok {
			return nil, resp.ConfigReasonPercentiles
		}
		if f < 0 || f > 100 {
			return nil, resp.ConfigReasonPercentilesRange
		}
		ps = append(ps, f)
	}
	return ps, ""
}
