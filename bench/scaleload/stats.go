package scaleload

import (
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// Histogram buckets: below histLinear µs one bucket per µs, above that 32
// buckets per power of two (about 3% wide) up to 2^histMaxExp µs (about
// 19 hours), and one for anything longer. Fixed buckets keep recording
// allocation-free and make the histograms of windows mergeable into a
// phase's.
const (
	histSubBits = 5
	histLinear  = 2 << histSubBits // 64 µs
	histMaxExp  = 36
	histBuckets = histLinear + (histMaxExp-histSubBits-1)<<histSubBits + 1
)

// Histogram is a latency histogram with about 3% resolution. The zero
// value is empty and ready to use. It is not safe for concurrent use.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

func histIndex(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < histLinear {
		return int(us)
	}
	p := bits.Len64(us) - 1 // p >= histSubBits+1
	if p >= histMaxExp {
		return histBuckets - 1
	}
	sub := int(us>>(p-histSubBits)) - 1<<histSubBits // 0..31
	return histLinear + (p-histSubBits-1)*(1<<histSubBits) + sub
}

// histUpper is the (exclusive) upper bound of bucket i; quantiles report
// it, so they never understate a latency.
func histUpper(i int) time.Duration {
	if i < histLinear {
		return time.Duration(i+1) * time.Microsecond
	}
	j := i - histLinear
	p := j>>histSubBits + histSubBits + 1
	m := uint64(j&(1<<histSubBits-1)) + 1<<histSubBits
	return time.Duration((m+1)<<(p-histSubBits)) * time.Microsecond
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	h.counts[histIndex(d)]++
	h.n++
	h.max = max(h.max, d)
}

// Merge adds o's latencies to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of latencies recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest latency recorded (exact).
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the latency below or at which a fraction q of the
// recorded ones lie (rounded up to its bucket's upper bound, capped at
// Max); 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// Summary is the count and latency figures of a set of operations.
type Summary struct {
	Ops        int64         `json:"ops"`
	Errors     int64         `json:"errors"`     // client-visible errors (error replies, timeouts, broken connections)
	Mismatches int64         `json:"mismatches"` // replies that contradicted the model
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	P999       time.Duration `json:"p999_ns"`
	Max        time.Duration `json:"max_ns"`
}

// Window is what happened in one stretch of a run: a stats window, or a
// phase made by Stats.Between.
type Window struct {
	Start      time.Time     `json:"start"`
	Duration   time.Duration `json:"duration_ns"`
	Throughput float64       `json:"ops_per_sec"` // operations completed per second, errors included
	Summary
	hist *Histogram
}

func makeWindow(start time.Time, dur time.Duration, ops, errs, mism int64, h *Histogram) Window {
	w := Window{Start: start, Duration: dur, hist: h}
	w.Ops, w.Errors, w.Mismatches = ops, errs, mism
	if dur > 0 {
		w.Throughput = float64(ops) / dur.Seconds()
	}
	w.P50, w.P99, w.P999, w.Max = h.Quantile(0.50), h.Quantile(0.99), h.Quantile(0.999), h.Max()
	return w
}

// counters accumulate one command's (or one window's) figures.
type counters struct {
	ops, errs, mism int64
	hist            Histogram
}

func (c *counters) add(o *counters) {
	c.ops += o.ops
	c.errs += o.errs
	c.mism += o.mism
	c.hist.Merge(&o.hist)
}

func (c *counters) summary() Summary {
	return Summary{Ops: c.ops, Errors: c.errs, Mismatches: c.mism,
		P50: c.hist.Quantile(0.50), P99: c.hist.Quantile(0.99), P999: c.hist.Quantile(0.999), Max: c.hist.Max()}
}

// recorder is one worker's figures. Its lock is contended only by the
// window ticker, so workers do not serialize on each other.
type recorder struct {
	mu   sync.Mutex
	win  *counters            // the current window
	cmds map[string]*counters // the whole run, by command
}

func newRecorder() *recorder {
	return &recorder{win: new(counters), cmds: make(map[string]*counters)}
}

func (r *recorder) record(cmd string, d time.Duration, failed, mismatch bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cmds[cmd]
	if c == nil {
		c = new(counters)
		r.cmds[cmd] = c
	}
	for _, c := range [2]*counters{r.win, c} {
		c.ops++
		if failed {
			c.errs++
		}
		if mismatch {
			c.mism++
		}
		c.hist.Record(d)
	}
}

// take returns the current window's figures and starts a new window.
func (r *recorder) take() *counters {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.win
	r.win = new(counters)
	return w
}

// Stats are the figures of one Run. Its methods are safe to call while
// the run goes on (from Config.OnWindow, say) and after it.
type Stats struct {
	mu         sync.Mutex
	maxSamples int
	start, end time.Time
	recs       []*recorder
	windows    []Window
	errSamples []string
	misSamples []string
	lastTick   time.Time
}

func newStats(workers, maxSamples int, start time.Time) *Stats {
	s := &Stats{maxSamples: maxSamples, start: start, lastTick: start}
	for range workers {
		s.recs = append(s.recs, newRecorder())
	}
	return s
}

func (s *Stats) errorSample(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errSamples) < s.maxSamples {
		s.errSamples = append(s.errSamples, text)
	}
}

func (s *Stats) mismatchSample(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.misSamples) < s.maxSamples {
		s.misSamples = append(s.misSamples, text)
	}
}

// tick closes the current window at now and returns it.
func (s *Stats) tick(now time.Time) Window {
	acc := new(counters)
	for _, r := range s.recs {
		acc.add(r.take())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := makeWindow(s.lastTick, now.Sub(s.lastTick), acc.ops, acc.errs, acc.mism, &acc.hist)
	s.windows = append(s.windows, w)
	s.lastTick = now
	return w
}

func (s *Stats) finish(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end = now
}

// Start is when the run began.
func (s *Stats) Start() time.Time { return s.start }

// End is when the run ended (zero while it goes on).
func (s *Stats) End() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// Windows returns the closed windows so far, oldest first.
func (s *Stats) Windows() []Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.windows)
}

// Between merges the closed windows that start at or after from and
// before to into one (a phase: before, during or after a scale-out), with
// exact percentiles over the phase's latencies at the histogram's
// resolution. Its Duration is the sum of theirs.
func (s *Stats) Between(from, to time.Time) Window {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := new(Histogram)
	var ops, errs, mism int64
	var dur time.Duration
	start := time.Time{}
	for _, w := range s.windows {
		if w.Start.Before(from) || !w.Start.Before(to) {
			continue
		}
		if start.IsZero() {
			start = w.Start
		}
		ops, errs, mism, dur = ops+w.Ops, errs+w.Errors, mism+w.Mismatches, dur+w.Duration
		h.Merge(w.hist)
	}
	return makeWindow(start, dur, ops, errs, mism, h)
}

// Commands returns the whole run's figures by command name ("SET PX",
// "BLMOVE", "RESYNC" for the re-reads after an ambiguous write ...).
func (s *Stats) Commands() map[string]Summary {
	out := make(map[string]Summary)
	for cmd, c := range s.byCommand() {
		out[cmd] = c.summary()
	}
	return out
}

func (s *Stats) byCommand() map[string]*counters {
	out := make(map[string]*counters)
	for _, r := range s.recs {
		r.mu.Lock()
		for cmd, c := range r.cmds {
			acc := out[cmd]
			if acc == nil {
				acc = new(counters)
				out[cmd] = acc
			}
			acc.add(c)
		}
		r.mu.Unlock()
	}
	return out
}

// Total returns the whole run's figures over all commands.
func (s *Stats) Total() Summary {
	acc := new(counters)
	cmds := s.byCommand()
	for _, cmd := range slices.Sorted(maps.Keys(cmds)) {
		acc.add(cmds[cmd])
	}
	return acc.summary()
}

// ErrorSamples returns the first client-visible errors, each as
// "COMMAND key: error".
func (s *Stats) ErrorSamples() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errSamples)
}

// MismatchSamples returns the first replies that contradicted the model.
func (s *Stats) MismatchSamples() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.misSamples)
}

// String is a one-line summary.
func (s *Stats) String() string {
	t := s.Total()
	d := s.End().Sub(s.start)
	if s.End().IsZero() {
		d = time.Since(s.start)
	}
	return fmt.Sprintf("%d ops in %v (%.0f/s), %d errors, %d mismatches, p50 %v p99 %v p999 %v max %v",
		t.Ops, d.Round(time.Millisecond), float64(t.Ops)/max(d.Seconds(), 1e-9), t.Errors, t.Mismatches, t.P50, t.P99, t.P999, t.Max)
}
