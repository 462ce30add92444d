package redisinfo

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrorStats counts error replies by their code (the first word of the
// message), for INFO's errorstats section and total_error_replies. Like
// Redis it tracks at most MaxErrorCodes distinct codes; later new codes
// count only in the total. The zero value is ready to use.
type ErrorStats struct {
	mu     sync.Mutex
	total  int64
	byCode map[string]int64
	// ever counts by code since the start, which Reset leaves alone:
	// Prometheus counters must never go down (Cumulative).
	ever map[string]int64
}

// MaxErrorCodes is Redis's ERROR_STATS_NUMBER: how many distinct codes
// errorstats lists.
const MaxErrorCodes = 128

// Record counts one error reply with message msg ("ERR wrong ...").
func (e *ErrorStats) Record(msg string) {
	code := msg
	if i := strings.IndexByte(msg, ' '); i >= 0 {
		code = msg[:i]
	}
	e.mu.Lock()
	e.total++
	if e.byCode == nil {
		e.byCode = map[string]int64{}
	}
	if _, ok := e.byCode[code]; ok || len(e.byCode) < MaxErrorCodes {
		e.byCode[code]++
	}
	if e.ever == nil {
		e.ever = map[string]int64{}
	}
	if _, ok := e.ever[code]; ok || len(e.ever) < MaxErrorCodes {
		e.ever[code]++
	}
	e.mu.Unlock()
}

// Total is total_error_replies.
func (e *ErrorStats) Total() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total
}

// ErrorCount is one code's count.
type ErrorCount struct {
	Code string
	N    int64
}

// Snapshot returns the counts sorted by code (Redis keeps them in a radix
// tree, so INFO lists them in byte order).
func (e *ErrorStats) Snapshot() []ErrorCount {
	return e.sorted(func() map[string]int64 { return e.byCode })
}

// Cumulative returns the counts since the start, CONFIG RESETSTAT
// notwithstanding, sorted by code: what a metrics counter reports.
func (e *ErrorStats) Cumulative() []ErrorCount {
	return e.sorted(func() map[string]int64 { return e.ever })
}

// sorted copies the map counts picks (under the lock) sorted by code.
func (e *ErrorStats) sorted(counts func() map[string]int64) []ErrorCount {
	e.mu.Lock()
	m := counts()
	out := make([]ErrorCount, 0, len(m))
	for k, v := range m {
		out = append(out, ErrorCount{k, v})
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b ErrorCount) int { return strings.Compare(a.Code, b.Code) })
	return out
}

// Fields gives INFO errorstats: errorstat_<CODE>:count=<n> per code.
func (e *ErrorStats) Fields(field func(k, v string)) {
	for _, c := range e.Snapshot() {
		field("errorstat_"+c.Code, "count="+strconv.FormatInt(c.N, 10))
	}
}

// Reset forgets every count (CONFIG RESETSTAT) but the cumulative ones.
func (e *ErrorStats) Reset() {
	e.mu.Lock()
	e.total = 0
	e.byCode = nil
	e.mu.Unlock()
}
