package difftest

import (
	"slices"
	"strconv"
	"strings"
)

// The streams family: XADD, the consumer-group commands (XREADGROUP
// without BLOCK, XACK, XCLAIM, XAUTOCLAIM, XPENDING, XGROUP), XDEL, XTRIM,
// XSETID, XINFO, the range reads and XREAD without BLOCK, on three keys of
// one hash tag that now and then hold a string or a list instead.
//
// Two things make stream replies depend on the server's clock, and the
// family is built so that neither can decide an outcome:
//
//   - "XADD key *" takes the id from the clock unless the stream's last id
//     has a later millisecond. Explicit ids live at streamBaseMs (the year
//     2128) and above, and every "XADD ... *" comes right after a primer on
//     the same connection, "XADD key <streamBaseMs+m>-1 p 1", which fails
//     when the stream's last id is already that high and otherwise raises
//     it (or creates the stream). Auto ids are then always last-id + 1.
//   - Idle times and delivery times. Entries are delivered either now (an
//     idle time below the run's length, seconds) or far in the past through
//     XCLAIM's IDLE / TIME (2e8 or 5e8 ms ago, or at time 0), and every
//     min-idle-time (XCLAIM, XAUTOCLAIM, XPENDING IDLE) is 0, 1 hour or 3e8
//     ms, so which entries qualify never depends on milliseconds. Replies
//     that show times (XPENDING's extended form, XINFO CONSUMERS, XINFO
//     STREAM FULL) are compared with CheckStream: exactly, except those
//     time fields, which may differ by Step.Tolerance (StreamTimeTolerance).

// streamBaseMs is the lowest millisecond of the family's explicit ids:
// later than any clock the tests run under, so XADD * after a primer
// never reads the clock.
const streamBaseMs = 5_000_000_000_000

// StreamTimeTolerance is how far (ms) an idle time, seen time or delivery
// time may differ between the two servers. Both execute a command within a
// few milliseconds of each other (at most 5 ms seen over 30,000-command
// runs on a busy 2-core machine), so only a stalled machine comes near it,
// while a time that is not refreshed (or refreshed when it should not be)
// is off by the 2e8 ms of the ancient deliveries or by the time since the
// last refresh, a quarter of a second after some 700 commands.
const StreamTimeTolerance = 250

// Idle times (ms) for XCLAIM IDLE that put a delivery far in the past, and
// min-idle-times that separate them: an entry delivered during the run is
// younger than an hour, one claimed with IDLE 2e8 is between 1 hour and
// 3e8 ms, one with IDLE 5e8 or TIME 0 older than 3e8 ms.
const (
	ancientIdle1 = 200_000_000
	ancientIdle2 = 500_000_000
	minIdleHour  = 3_600_000
	minIdleMid   = 300_000_000
)

// streamGen is the family's generator state: the highest millisecond
// offset (above streamBaseMs) an explicit id has used, so that new explicit
// ids mostly succeed, and a rough model of each key, so that references
// (XACK, XCLAIM, ranges, MINID) hit entries. The model only steers the
// choice of ids: it assumes commands succeed and ignores trimming, and a
// wrong guess makes a less useful command, never a wrong comparison.
type streamGen struct {
	ms     int64
	cur    string // the key the command being generated is about
	models map[string]*streamModel
}

// streamModel is what the generator believes a key holds.
type streamModel struct {
	kind   byte          // 0: nothing, 's': a stream, 'o': another type
	groups [3]bool       // of streamGroups
	glast  [3]streamID   // each group's last delivered id
	pel    [3][]streamID // per group: ids delivered and not acknowledged
	last   streamID
	ids    []streamID // the latest ids added, oldest first
}

type streamID struct{ ms, seq uint64 }

func (a streamID) less(b streamID) bool { return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq }

func (a streamID) String() string {
	return strconv.FormatUint(a.ms, 10) + "-" + strconv.FormatUint(a.seq, 10)
}

// streamModelIDs is how many ids the model keeps per key.
const streamModelIDs = 64

func (g *Gen) streamModel(key string) *streamModel {
	if g.stream.models == nil {
		g.stream.models = map[string]*streamModel{}
	}
	m := g.stream.models[key]
	if m == nil {
		m = &streamModel{}
		g.stream.models[key] = m
	}
	return m
}

// noteXADD updates the model for an XADD of id ("*", "ms-*", "ms-seq",
// "ms") to key, as if it succeeded whenever Redis would let it.
func (g *Gen) noteXADD(key, id string, nomkstream bool) {
	m := g.streamModel(key)
	if m.kind == 'o' || m.kind == 0 && nomkstream {
		return
	}
	var next streamID
	msPart, seqPart, hasSeq := strings.Cut(id, "-")
	switch {
	case id == "*":
		next = streamID{m.last.ms, m.last.seq + 1}
	case hasSeq && seqPart == "*":
		ms, err := strconv.ParseUint(msPart, 10, 64)
		if err != nil || ms < m.last.ms {
			return
		}
		next = streamID{ms, 0}
		if ms == m.last.ms && (m.kind != 0 || ms == 0) {
			next.seq = m.last.seq + 1
		}
	default:
		ms, err := strconv.ParseUint(msPart, 10, 64)
		if err != nil {
			return
		}
		next.ms = ms
		if hasSeq {
			if next.seq, err = strconv.ParseUint(seqPart, 10, 64); err != nil {
				return
			}
		}
		if !m.last.less(next) {
			return
		}
	}
	m.kind, m.last = 's', next
	m.ids = append(m.ids, next)
	if len(m.ids) > streamModelIDs {
		m.ids = slices.Delete(m.ids, 0, 1)
	}
}

// noteReset records that key was deleted (kind 0) or overwritten by
// another type ('o').
func (g *Gen) noteReset(key string, kind byte) {
	*g.streamModel(key) = streamModel{kind: kind}
}

// longStreamKey is the stream that is never overwritten, rarely deleted
// and trimmed by length around 100 to 500 entries: it spans many nodes of
// 100 entries, so trims with ~ and LIMIT meet node boundaries.
const longStreamKey = "{a}1"

var (
	streamKeyNames = []string{longStreamKey, "{a}2", "{a}3"}
	streamGroups   = []string{"g1", "g2", "g3"}
	streamConsumer = []string{"c1", "c2", "c3"}
)

func streamTemplates() []template {
	return []template{
		{14, func(g *Gen) Step {
			k := g.streamKey()
			return exact(g.xaddArgs(k, g.xaddID())...)
		}},
		{9, func(g *Gen) Step { return g.xaddAuto() }},
		{14, needsGroup(func(g *Gen) Step { return exact(g.xreadgroupArgs()...) })},
		{6, needsGroup(func(g *Gen) Step { return exact(g.xackArgs()...) })},
		{8, needsGroup(func(g *Gen) Step { return exact(g.xclaimArgs()...) })},
		{5, needsGroup(func(g *Gen) Step { return exact(g.xautoclaimArgs()...) })},
		{3, func(g *Gen) Step {
			return exact(append([]string{"XDEL", g.streamKey()}, g.streamRefIDs(1+g.rng.IntN(3))...)...)
		}},
		{3, func(g *Gen) Step {
			return exact(append([]string{"XTRIM", g.streamKey()}, g.streamTrimArgs(true)...)...)
		}},
		{4, func(g *Gen) Step { return exact(g.xgroupCreateArgs(g.streamKey())...) }},
		{2, needsGroup(func(g *Gen) Step { return exact(g.xgroupSetIDArgs()...) })},
		{2, func(g *Gen) Step {
			return exact("XGROUP", g.pick("CREATECONSUMER", "createconsumer"), g.streamKey(), g.streamGroup(), g.streamConsumerName())
		}},
		{2, func(g *Gen) Step {
			return exact("XGROUP", g.pick("DELCONSUMER", "delconsumer"), g.streamKey(), g.streamGroup(), g.streamConsumerName())
		}},
		{1, func(g *Gen) Step {
			k := g.streamKey()
			grp := g.streamGroup()
			g.noteGroup(k, grp, false, "")
			return exact("XGROUP", "DESTROY", k, grp)
		}},
		{1, func(g *Gen) Step { return exact(g.xgroupOddArgs()...) }},
		{3, needsGroup(func(g *Gen) Step { return exact("XPENDING", g.streamKey(), g.streamGroup()) })},
		{5, needsGroup(func(g *Gen) Step { return streamTimed(g.xpendingArgs()...) })},
		{2, func(g *Gen) Step { return exact("XINFO", "STREAM", g.streamKey()) }},
		{3, func(g *Gen) Step { return streamTimed(g.xinfoFullArgs()...) }},
		{3, func(g *Gen) Step { return exact("XINFO", g.pick("GROUPS", "groups"), g.streamKey()) }},
		{3, func(g *Gen) Step {
			return streamTimed("XINFO", g.pick("CONSUMERS", "consumers"), g.streamKey(), g.streamGroup())
		}},
		{1, func(g *Gen) Step { return exact(g.xinfoOddArgs()...) }},
		{4, func(g *Gen) Step { return exact(g.xrangeArgs()...) }},
		{2, func(g *Gen) Step { return exact("XLEN", g.streamKey()) }},
		{2, func(g *Gen) Step { return exact(g.xreadArgs()...) }},
		{1, func(g *Gen) Step { return exact(g.xsetidArgs()...) }},
		// Other types on the same keys: WRONGTYPE both ways.
		{1, func(g *Gen) Step {
			k := g.otherTypeKey()
			g.noteReset(k, 'o')
			return exact("SET", k, g.pick("x", "1"))
		}},
		{1, func(g *Gen) Step {
			k := g.otherTypeKey()
			if m := g.streamModel(k); m.kind == 0 {
				m.kind = 'o'
			}
			return exact("LPUSH", k, "e")
		}},
		{2, func(g *Gen) Step {
			k := g.otherTypeKey()
			if g.streamModel(streamKeyNames[1]).kind == 'o' && g.chance(0.8) {
				k = streamKeyNames[1] // {a}2 does not stay another type for long
			}
			if g.chance(0.005) {
				k = longStreamKey
			}
			g.noteReset(k, 0)
			return exact("DEL", k)
		}},
		{1, func(g *Gen) Step {
			if g.chance(0.3) {
				return exact("OBJECT", "ENCODING", g.streamKey())
			}
			return exact("TYPE", g.streamKey())
		}},
	}
}

// needsGroup wraps a template of a command that wants a consumer group:
// when the model says the command's key has none, it is mostly replaced
// by an XGROUP CREATE there, so that NOGROUP stays one answer among many.
func needsGroup(fn func(g *Gen) Step) func(g *Gen) Step {
	return func(g *Gen) Step {
		st := fn(g)
		k := g.stream.cur
		if m := g.streamModel(k); m.kind != 'o' && m.groups == [3]bool{} && g.chance(0.7) {
			return exact(g.xgroupCreateArgs(k)...)
		}
		return st
	}
}

// streamTimed is a step whose reply carries idle or delivery times.
func streamTimed(args ...string) Step {
	return Step{Args: args, Check: CheckStream, Tolerance: StreamTimeTolerance}
}

// Keys, groups, consumers.

// streamKey is mostly one of the family's keys ({a}3 is the one SET and
// LPUSH usually take), sometimes a key of another slot (CROSSSLOT when
// combined, a missing key alone). It becomes the key ids refer to.
func (g *Gen) streamKey() string {
	var k string
	switch r := g.rng.IntN(100); {
	case r < 40:
		k = streamKeyNames[0]
	case r < 80:
		k = streamKeyNames[1]
	case r < 94:
		k = streamKeyNames[2]
	default:
		k = g.pick("{b}1", "k1")
	}
	g.stream.cur = k
	return k
}

// otherTypeKey is the key SET, LPUSH and DEL take: mostly {a}3, sometimes
// {a}2, never the long stream.
func (g *Gen) otherTypeKey() string {
	if g.chance(0.75) {
		return streamKeyNames[2]
	}
	return streamKeyNames[1]
}

func (g *Gen) streamKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.streamKey()
	}
	return out
}

// streamGroup is mostly a group the model believes the current key has.
func (g *Gen) streamGroup() string {
	m := g.streamModel(g.stream.cur)
	var have []string
	for i, name := range streamGroups {
		if m.groups[i] {
			have = append(have, name)
		}
	}
	if len(have) > 0 && g.chance(0.75) {
		return have[g.rng.IntN(len(have))]
	}
	return g.anyGroup()
}

func (g *Gen) anyGroup() string {
	if g.chance(0.15) {
		return "g3"
	}
	return streamGroups[g.rng.IntN(2)]
}

// newGroup is mostly a group the model believes the current key lacks.
func (g *Gen) newGroup() string {
	m := g.streamModel(g.stream.cur)
	var lack []string
	for i, name := range streamGroups[:2] {
		if !m.groups[i] {
			lack = append(lack, name)
		}
	}
	if len(lack) > 0 && g.chance(0.7) {
		return lack[g.rng.IntN(len(lack))]
	}
	return g.anyGroup()
}

// noteGroup records that key has (or lost) group, starting at id.
func (g *Gen) noteGroup(key, group string, has bool, id string) {
	i := slices.Index(streamGroups, group)
	if i < 0 {
		return
	}
	m := g.streamModel(key)
	m.groups[i] = has
	switch id {
	case "$":
		m.glast[i] = m.last
	case "":
	default:
		m.glast[i] = parseModelID(id)
	}
}

// parseModelID is id as the model understands it (0-0 if it does not).
func parseModelID(id string) streamID {
	msPart, seqPart, _ := strings.Cut(id, "-")
	ms, _ := strconv.ParseUint(msPart, 10, 64)
	seq, _ := strconv.ParseUint(seqPart, 10, 64)
	return streamID{ms, seq}
}

// noteDeliver records an XREADGROUP '>' of key for group: the next count
// entries (all for count <= 0) go to the PEL unless noack.
func (g *Gen) noteDeliver(key, group string, count int, noack bool) {
	i := slices.Index(streamGroups, group)
	m := g.streamModel(key)
	if i < 0 || !m.groups[i] {
		return
	}
	for _, id := range m.ids {
		if !m.glast[i].less(id) {
			continue
		}
		m.glast[i] = id
		if !noack && !slices.Contains(m.pel[i], id) {
			m.pel[i] = append(m.pel[i], id)
			if len(m.pel[i]) > streamModelIDs {
				m.pel[i] = slices.Delete(m.pel[i], 0, 1)
			}
		}
		if count--; count == 0 {
			break
		}
	}
}

// notePELRemove records that group acknowledged ids.
func (g *Gen) notePELRemove(key, group string, ids []string) {
	i := slices.Index(streamGroups, group)
	if i < 0 {
		return
	}
	m := g.streamModel(key)
	for _, id := range ids {
		m.pel[i] = slices.DeleteFunc(m.pel[i], func(p streamID) bool { return p == parseModelID(id) })
	}
}

// streamPELIDs are n ids, mostly of entries the model believes pending in
// the current key's group.
func (g *Gen) streamPELIDs(group string, n int) []string {
	out := g.streamRefIDs(n)
	i := slices.Index(streamGroups, group)
	if i < 0 {
		return out
	}
	if pel := g.streamModel(g.stream.cur).pel[i]; len(pel) > 0 {
		for i := range out {
			if g.chance(0.7) {
				out[i] = pel[g.rng.IntN(len(pel))].String()
			}
		}
	}
	return out
}

func (g *Gen) streamConsumerName() string {
	if g.chance(0.05) {
		return g.pick("c4", "")
	}
	return streamConsumer[g.rng.IntN(len(streamConsumer))]
}

// Ids.

func streamMs(off int64) string { return strconv.FormatInt(streamBaseMs+off, 10) }

// streamSeq is a sequence number: mostly small, as explicit ids and short
// runs of auto ids make them.
func (g *Gen) streamSeq() string {
	switch r := g.rng.IntN(10); {
	case r < 6:
		return strconv.Itoa(g.rng.IntN(4))
	case r < 9:
		return strconv.Itoa(4 + g.rng.IntN(12))
	default:
		return g.pick("18446744073709551615", "100", "99")
	}
}

// xaddID is the id of an XADD with an explicit or half-explicit id: new
// milliseconds (succeeds), the current one (succeeds or not), an older one
// (fails on a stream that has it), ids below streamBaseMs and invalid ones.
func (g *Gen) xaddID() string {
	s := &g.stream
	switch r := g.rng.IntN(100); {
	case r < 35:
		s.ms += 1 + int64(g.rng.IntN(2))
		id := streamMs(s.ms) + "-" + g.pick("0", "0", "1", "5")
		if g.chance(0.04) {
			return g.oddSpelling(id)
		}
		return id
	case r < 50:
		if g.chance(0.5) {
			s.ms++
		}
		return streamMs(s.ms) + "-*"
	case r < 58:
		s.ms++
		return streamMs(s.ms) // seq 0
	case r < 68:
		return g.currentMsID()
	case r < 84:
		return g.streamRefID()
	case r < 92:
		return g.pick("1-1", "2", "3-*", "0-*", "0-1")
	default:
		if g.chance(0.05) && g.stream.cur != longStreamKey {
			// The last possible id: the stream takes no more entries.
			return g.pick("18446744073709551615-18446744073709551615", "18446744073709551615-*", "18446744073709551615")
		}
		return g.pick("abc", "-", "+", "$", ">", "", "0-0", "0", "1-", "-1", "1--1", "1-2-3",
			"18446744073709551616-0", "5-18446744073709551616", "*-1", "1.5", " 1")
	}
}

// currentMsID is an id in the explicit ids' current millisecond. After
// the millisecond's last sequence the next explicit ids move on: Redis
// 7.0.15 answers "ms-*" there with whichever of two errors the process's
// stale errno selects (the previous failed XADD's EDOM, or not), which no
// reimplementation can follow.
func (g *Gen) currentMsID() string {
	seq := g.streamSeq()
	id := streamMs(g.stream.ms) + "-" + seq
	if seq == "18446744073709551615" {
		g.stream.ms++
	}
	return id
}

// streamRefID is the id of an entry likely to exist in the current key:
// one the model remembers, or a recent millisecond and a small sequence.
func (g *Gen) streamRefID() string {
	id := g.plainRefID()
	if g.chance(0.04) {
		return g.oddSpelling(id)
	}
	return id
}

// oddSpelling writes id the way Redis's string2ull still reads (leading
// space, '+', zeros; strtoull's negation wrapping "-18446744073709551615"
// to 1) or does not (a trailing space, "--1").
func (g *Gen) oddSpelling(id string) string {
	ms, seq, ok := strings.Cut(id, "-")
	if !ok {
		return g.pick(" "+ms, "+"+ms, "0"+ms, "\t"+ms, ms+" ")
	}
	return g.pick(" "+id, "+"+id, "00"+id, ms+"-+"+seq, ms+"- "+seq, ms+"-0"+seq,
		ms+"--18446744073709551615", ms+"--1", id+" ", ms+"-"+seq+"\x00")
}

func (g *Gen) plainRefID() string {
	if ids := g.streamModel(g.stream.cur).ids; len(ids) > 0 && g.chance(0.7) {
		return ids[g.rng.IntN(len(ids))].String()
	}
	m := g.stream.ms - int64(g.rng.IntN(10)) + 1
	if m < 0 || g.chance(0.03) {
		m = 0
	}
	if g.chance(0.1) {
		return streamMs(m) // sequence 0 or the whole millisecond, per command
	}
	return streamMs(m) + "-" + g.streamSeq()
}

// oldID is an id from the older part of what the model remembers of the
// current key (MINID that trims some but not all).
func (g *Gen) oldID() string {
	ids := g.streamModel(g.stream.cur).ids
	if len(ids) < 4 {
		return g.streamRefID()
	}
	return ids[g.rng.IntN(len(ids)/4)].String()
}

func (g *Gen) streamRefIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.streamRefID()
		if g.chance(0.03) {
			out[i] = g.pick("abc", "-", "+", "0-0", "0", "$", ">", "18446744073709551615-18446744073709551615", "1-x")
		}
	}
	return out
}

// streamRangeID is a bound of XRANGE / XPENDING: special, inclusive,
// exclusive or invalid.
func (g *Gen) streamRangeID(low bool) string {
	switch r := g.rng.IntN(20); {
	case r < 7:
		if low {
			return "-"
		}
		return "+"
	case r < 14:
		return g.streamRefID()
	case r < 17:
		return "(" + g.streamRefID()
	case r < 18:
		return g.pick("0", "0-0", "18446744073709551615-18446744073709551615", "(0-0", "(18446744073709551615-18446744073709551615")
	default:
		return g.pick("-", "+", "(-", "(+", "abc", "", "1-x", "$", ">", "(")
	}
}

// XADD.

func (g *Gen) streamFields() []string {
	n := 1 + g.rng.IntN(3)
	out := make([]string, 0, 2*n)
	for range n {
		f := g.pick("f", "f", "g", "h")
		if g.chance(0.1) {
			f = g.value()
		}
		var v string
		switch r := g.rng.IntN(20); {
		case r < 12:
			v = strconv.Itoa(g.rng.IntN(1000))
		case r < 18:
			v = g.value()
			if len(v) > 64 && g.stream.cur == longStreamKey && g.chance(0.9) {
				v = v[:8] // entries small enough for 100 to a node
			}
		default:
			v = strconv.Itoa(g.rng.IntN(1000))
			if g.stream.cur != longStreamKey || g.chance(0.1) {
				v = strings.Repeat("v", 500+g.rng.IntN(2000)) // nodes fill by bytes
			}
		}
		out = append(out, f, v)
	}
	if g.chance(0.03) {
		out = out[:len(out)-1]
	}
	return out
}

// streamTrimArgs is a trimming clause (XADD's or XTRIM's), now and then
// malformed.
func (g *Gen) streamTrimArgs(alone bool) []string {
	var args []string
	strategy := g.pick("MAXLEN", "MINID", "maxlen")
	args = append(args, strategy)
	approx := g.chance(0.5)
	if approx {
		args = append(args, "~")
	} else if g.chance(0.3) {
		args = append(args, "=")
	}
	long := g.stream.cur == longStreamKey
	switch {
	case strings.EqualFold(strategy, "MAXLEN") && long && g.chance(0.98):
		args = append(args, g.pick("90", "100", "101", "150", "199", "200", "250", "300", "500"))
	case !strings.EqualFold(strategy, "MAXLEN") && long && g.chance(0.95):
		// The model remembers too few ids to trim a long stream by MINID
		// without emptying most of it: trim by length instead.
		args[0] = "MAXLEN"
		args = append(args, g.pick("150", "200", "250"))
	case strings.EqualFold(strategy, "MAXLEN") && g.chance(0.8):
		args = append(args, g.pick("5", "10", "20", "50", "100", "150", "200", "300"))
	case strings.EqualFold(strategy, "MAXLEN"):
		args = append(args, g.pick("0", "1", "2", "3", "-1", "abc", "9223372036854775807"))
	case g.chance(0.8):
		args = append(args, g.oldID())
	default:
		args = append(args, g.pick(g.streamRefID(), streamMs(max(0, g.stream.ms-3)), "0", "-", "+", "abc"))
	}
	if g.chance(0.3) {
		if !approx && g.chance(0.7) {
			// LIMIT without ~ is an error; keep it rare.
			args = append(args[:1], append([]string{"~"}, args[1:]...)...)
			if args[2] == "=" {
				args = slices.Delete(args, 2, 3)
			}
		}
		args = append(args, "LIMIT", g.pick("0", "1", "2", "10", "100", "1000", "-1", "abc"))
	}
	if g.chance(0.04) {
		args = append(args, g.pick("MAXLEN", "MINID", "LIMIT", "~", "FOO"))
	}
	if alone && g.chance(0.03) {
		args = args[:1] // XTRIM key MAXLEN: syntax error
	}
	return args
}

// xaddArgs is an XADD of id to key, options in random order now and
// then.
func (g *Gen) xaddArgs(key, id string) []string {
	var opts [][]string
	nomk := g.chance(0.15)
	if nomk {
		opts = append(opts, []string{"NOMKSTREAM"})
	}
	if g.chance(0.2) {
		opts = append(opts, g.streamTrimArgs(false))
	}
	if len(opts) > 1 && g.chance(0.5) {
		opts[0], opts[1] = opts[1], opts[0]
	}
	args := []string{"XADD", key}
	for _, o := range opts {
		args = append(args, o...)
	}
	args = append(args, id)
	fields := g.streamFields()
	if len(fields)%2 == 0 {
		g.noteXADD(key, id, nomk)
	}
	return append(args, fields...)
}

// xaddAuto returns the primer of an "XADD ... *" and leaves the XADD
// itself to follow on the same connection (see the family's comment).
func (g *Gen) xaddAuto() Step {
	key := g.streamKey()
	primer := exact("XADD", key, streamMs(max(0, g.stream.ms-10))+"-1", "p", "1")
	if g.isExcluded(primer.Args) {
		return primer // never sent either
	}
	g.noteXADD(key, primer.Args[2], false)
	add := g.xaddArgs(key, "*")
	g.follow = &Step{Args: add}
	return primer
}

// XREADGROUP and XREAD (never BLOCK: the runner waits for each reply).

func (g *Gen) xreadgroupArgs() []string {
	n := 1
	if g.chance(0.2) {
		n = 2
	}
	keys := g.streamKeys(n)
	args := []string{"XREADGROUP", "GROUP", g.streamGroup(), g.streamConsumerName()}
	if g.chance(0.03) {
		args[1] = g.pick("GRUOP", "group")
	}
	noack := g.chance(0.15)
	count := 0
	if g.chance(0.5) {
		c := g.pick("1", "1", "2", "3", "5", "10", "0", "-1", "abc")
		count, _ = strconv.Atoi(c)
		count := []string{"COUNT", c}
		if noack && g.chance(0.5) {
			args = append(args, "NOACK")
			noack = false
		}
		args = append(args, count...)
	}
	if noack {
		args = append(args, "NOACK")
	}
	args = append(args, "STREAMS")
	args = append(args, keys...)
	for range n {
		switch r := g.rng.IntN(20); {
		case r < 14:
			args = append(args, ">")
		case r < 17:
			args = append(args, g.pick("0", "0-0"))
		case r < 19:
			args = append(args, g.streamRefID())
		default:
			args = append(args, g.pick("$", "+", "-", "abc", "(0"))
		}
	}
	if g.chance(0.03) {
		return args[:len(args)-1] // unbalanced
	}
	for i, k := range keys {
		if args[len(args)-n+i] == ">" {
			g.noteDeliver(k, args[2], count, args[len(args)-2*n-2] == "NOACK" || args[4] == "NOACK")
		}
	}
	return args
}

func (g *Gen) xreadArgs() []string {
	args := []string{"XREAD"}
	if g.chance(0.6) {
		args = append(args, "COUNT", g.pick("1", "2", "5", "0", "-1", "abc"))
	}
	n := 1 + g.rng.IntN(2)
	args = append(args, "STREAMS")
	args = append(args, g.streamKeys(n)...)
	for range n {
		args = append(args, g.pick("0", "$", "-", "+", g.streamRefID(), g.streamRefID(), ">"))
	}
	return args
}

// XACK, XCLAIM, XAUTOCLAIM.

func (g *Gen) xackArgs() []string {
	args := []string{"XACK", g.streamKey(), g.streamGroup()}
	ids := g.streamPELIDs(args[2], 1+g.rng.IntN(3))
	g.notePELRemove(args[1], args[2], ids)
	return append(args, ids...)
}

func (g *Gen) minIdle() string {
	switch r := g.rng.IntN(20); {
	case r < 12:
		return "0"
	case r < 15:
		return strconv.Itoa(minIdleHour)
	case r < 18:
		return strconv.Itoa(minIdleMid)
	default:
		return g.pick("-5", "abc", "9223372036854775807", "")
	}
}

func (g *Gen) xclaimArgs() []string {
	args := []string{"XCLAIM", g.streamKey(), g.streamGroup(), g.streamConsumerName(), g.minIdle()}
	args = append(args, g.streamPELIDs(args[2], 1+g.rng.IntN(4))...)
	baseMs := g.base * 1000
	var opts [][]string
	if g.chance(0.3) {
		opts = append(opts, []string{"IDLE", g.pick("0", strconv.Itoa(ancientIdle1), strconv.Itoa(ancientIdle2),
			strconv.Itoa(ancientIdle2), "9000000000000", "-5", "abc")})
	}
	if g.chance(0.2) {
		opts = append(opts, []string{"TIME", g.pick(
			strconv.FormatInt(baseMs-ancientIdle1, 10), strconv.FormatInt(baseMs-ancientIdle2, 10),
			strconv.FormatInt(baseMs+100_000_000, 10), "0", "-1", "abc")})
	}
	if g.chance(0.2) {
		opts = append(opts, []string{"RETRYCOUNT", g.pick("0", "1", "5", "-1", "abc")})
	}
	if g.chance(0.25) {
		opts = append(opts, []string{"FORCE"})
	}
	if g.chance(0.3) {
		opts = append(opts, []string{"JUSTID"})
	}
	if g.chance(0.15) {
		opts = append(opts, []string{"LASTID", g.pick(g.streamRefID(), g.streamRefID(), "abc", "0")})
	}
	if g.chance(0.03) {
		opts = append(opts, []string{g.pick("FOO", "IDLE", "TIME", "RETRYCOUNT", "LASTID")})
	}
	g.rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	for _, o := range opts {
		args = append(args, o...)
	}
	return args
}

func (g *Gen) xautoclaimArgs() []string {
	start := g.pick("0", "0-0", "-", g.streamRefID(), g.streamRefID(), "(0", "abc", "+")
	args := []string{"XAUTOCLAIM", g.streamKey(), g.streamGroup(), g.streamConsumerName(), g.minIdle(), start}
	if g.chance(0.5) {
		args = append(args, "COUNT", g.pick("1", "2", "3", "10", "100", "0", "-1", "abc", "9223372036854775807"))
	}
	if g.chance(0.3) {
		args = append(args, "JUSTID")
	}
	if g.chance(0.03) {
		args = append(args, g.pick("FOO", "COUNT"))
	}
	return args
}

// XGROUP.

func (g *Gen) groupStartID() string {
	switch r := g.rng.IntN(20); {
	case r < 7:
		return "$"
	case r < 12:
		return g.pick("0", "0-0")
	case r < 18:
		return g.streamRefID()
	default:
		return g.pick("-", "+", "abc", ">", "18446744073709551615-18446744073709551615")
	}
}

func (g *Gen) entriesRead() string {
	return g.pick("0", "1", "2", "5", "100", "-1", "-2", "abc")
}

func (g *Gen) xgroupCreateArgs(key string) []string {
	args := []string{"XGROUP", g.pick("CREATE", "create"), key, g.newGroup(), g.groupStartID()}
	var opts [][]string
	m := g.streamModel(args[2])
	if g.chance(0.3) {
		opts = append(opts, []string{"MKSTREAM"})
		if m.kind == 0 {
			m.kind = 's'
		}
	}
	if m.kind == 's' {
		g.noteGroup(args[2], args[3], true, args[4])
	}
	if g.chance(0.25) {
		opts = append(opts, []string{"ENTRIESREAD", g.entriesRead()})
	}
	if g.chance(0.03) {
		opts = append(opts, []string{g.pick("FOO", "ENTRIESREAD")})
	}
	g.rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	for _, o := range opts {
		args = append(args, o...)
	}
	return args
}

func (g *Gen) xgroupSetIDArgs() []string {
	args := []string{"XGROUP", "SETID", g.streamKey(), g.streamGroup(), g.groupStartID()}
	if i := slices.Index(streamGroups, args[3]); i >= 0 && g.streamModel(args[2]).groups[i] {
		g.noteGroup(args[2], args[3], true, args[4])
	}
	if g.chance(0.3) {
		args = append(args, "ENTRIESREAD", g.entriesRead())
	}
	if g.chance(0.03) {
		args = append(args, "FOO")
	}
	return args
}

// xgroupOddArgs: HELP, unknown subcommands, wrong arities.
func (g *Gen) xgroupOddArgs() []string {
	k := g.streamKey()
	switch g.rng.IntN(6) {
	case 0:
		return []string{"XGROUP", g.pick("HELP", "help")}
	case 1:
		return []string{"XGROUP", "FOO", k}
	case 2:
		return []string{"XGROUP", "CREATE", k, "g1"}
	case 3:
		return []string{"XGROUP", "DESTROY", k}
	case 4:
		return []string{"XGROUP", "CREATECONSUMER", k, "g1"}
	default:
		return []string{"XGROUP"}
	}
}

// XPENDING, XINFO, ranges, XSETID.

func (g *Gen) xpendingArgs() []string {
	args := []string{"XPENDING", g.streamKey(), g.streamGroup()}
	if g.chance(0.3) {
		args = append(args, "IDLE", g.pick("0", strconv.Itoa(minIdleHour), strconv.Itoa(minIdleMid), "-1", "abc"))
	}
	args = append(args, g.streamRangeID(true), g.streamRangeID(false), g.pick("1", "2", "5", "10", "100", "0", "-1", "abc"))
	if g.chance(0.4) {
		args = append(args, g.streamConsumerName())
	}
	if g.chance(0.03) {
		args = append(args, "FOO")
	}
	return args
}

func (g *Gen) xinfoFullArgs() []string {
	args := []string{"XINFO", "STREAM", g.streamKey(), g.pick("FULL", "full")}
	if g.chance(0.5) {
		args = append(args, "COUNT", g.pick("0", "1", "2", "5", "-1", "abc"))
	}
	if g.chance(0.03) {
		args = append(args, "FOO")
	}
	return args
}

func (g *Gen) xinfoOddArgs() []string {
	k := g.streamKey()
	switch g.rng.IntN(5) {
	case 0:
		return []string{"XINFO", g.pick("HELP", "help")}
	case 1:
		return []string{"XINFO", "FOO", k}
	case 2:
		return []string{"XINFO", "STREAM", k, "FOO"}
	case 3:
		return []string{"XINFO", "CONSUMERS", k}
	default:
		return []string{"XINFO", "STREAM"}
	}
}

func (g *Gen) xrangeArgs() []string {
	cmd := g.pick("XRANGE", "XREVRANGE")
	lo, hi := g.streamRangeID(true), g.streamRangeID(false)
	if cmd == "XREVRANGE" {
		lo, hi = g.streamRangeID(false), g.streamRangeID(true)
	}
	args := []string{cmd, g.streamKey(), lo, hi}
	if g.chance(0.4) {
		args = append(args, "COUNT", g.pick("1", "2", "3", "10", "0", "-1", "abc"))
	}
	return args
}

func (g *Gen) xsetidArgs() []string {
	id := g.pick(g.currentMsID(), streamMs(g.stream.ms+1), g.streamRefID(), "0-0", "abc")
	args := []string{"XSETID", g.streamKey(), id}
	if g.chance(0.3) {
		args = append(args, "ENTRIESADDED", g.pick("0", "1", "10", "1000", "-1", "abc"))
	}
	if g.chance(0.3) {
		args = append(args, "MAXDELETEDID", g.pick(g.streamRefID(), "0-0", "abc", streamMs(g.stream.ms+5)))
	}
	return args
}

// Comparing replies that carry times.

// sameStream is CheckStream: a and b equal once the time fields of the
// command's reply are set aside, and those times within tol of each other.
func sameStream(st Step, a, b Value) bool {
	ma, ta := maskStreamTimes(st.Args, a)
	mb, tb := maskStreamTimes(st.Args, b)
	if !Equal(ma, mb) || len(ta) != len(tb) {
		return false
	}
	for i := range ta {
		if d := ta[i] - tb[i]; d > st.Tolerance || -d > st.Tolerance {
			return false
		}
	}
	return true
}

// maskStreamTimes returns v with the integers that are times replaced by 0,
// and those times in the order met. Only the places where the command's
// reply has times are looked at; an element of another kind there is left
// alone, so it still has to match exactly.
func maskStreamTimes(args []string, v Value) (Value, []int64) {
	m := &timeMask{}
	if len(args) < 2 {
		return v, nil
	}
	cmd := strings.ToUpper(args[0])
	switch {
	case cmd == "XPENDING" && len(args) > 3:
		// Extended form: [id, consumer, idle, deliveries] per entry.
		v = m.eachArray(v, func(e Value) Value { return m.at(e, 4, 2) })
	case cmd == "XINFO" && strings.EqualFold(args[1], "CONSUMERS"):
		v = m.eachArray(v, func(c Value) Value { return m.fields(c, "idle", "inactive") })
	case cmd == "XINFO" && strings.EqualFold(args[1], "STREAM") && len(args) > 3 && strings.EqualFold(args[3], "FULL"):
		v = m.field(v, "groups", func(gs Value) Value {
			return m.eachArray(gs, func(grp Value) Value {
				grp = m.field(grp, "pending", func(pel Value) Value {
					return m.eachArray(pel, func(e Value) Value { return m.at(e, 4, 2) })
				})
				return m.field(grp, "consumers", func(cs Value) Value {
					return m.eachArray(cs, func(c Value) Value {
						c = m.fields(c, "seen-time", "active-time")
						return m.field(c, "pending", func(p Value) Value {
							return m.eachArray(p, func(e Value) Value { return m.at(e, 3, 1) })
						})
					})
				})
			})
		})
	}
	return v, m.times
}

type timeMask struct{ times []int64 }

// take records an integer time and returns its placeholder.
func (m *timeMask) take(v Value) Value {
	if v.Kind != Integer {
		return v
	}
	m.times = append(m.times, v.Int)
	return Int(0)
}

// eachArray applies fn to the elements of an array (or RESP3 set).
func (m *timeMask) eachArray(v Value, fn func(Value) Value) Value {
	if v.Kind != Array && v.Kind != Set {
		return v
	}
	e := slices.Clone(v.Elems)
	for i := range e {
		e[i] = fn(e[i])
	}
	v.Elems = e
	return v
}

// at masks element i of an array of length n.
func (m *timeMask) at(v Value, n, i int) Value {
	if v.Kind != Array || len(v.Elems) != n {
		return v
	}
	e := slices.Clone(v.Elems)
	e[i] = m.take(e[i])
	v.Elems = e
	return v
}

// field applies fn to the value of a named field of a RESP3 map or a RESP2
// flat name/value array.
func (m *timeMask) field(v Value, name string, fn func(Value) Value) Value {
	if (v.Kind != Map && v.Kind != Array) || len(v.Elems)%2 != 0 {
		return v
	}
	e := slices.Clone(v.Elems)
	for i := 0; i+1 < len(e); i += 2 {
		if (e[i].Kind == Bulk || e[i].Kind == SimpleString) && string(e[i].Str) == name {
			e[i+1] = fn(e[i+1])
		}
	}
	v.Elems = e
	return v
}

// fields masks the named integer fields.
func (m *timeMask) fields(v Value, names ...string) Value {
	for _, n := range names {
		v = m.field(v, n, m.take)
	}
	return v
}
