package cmdstats

import (
	"math/bits"
	"sync/atomic"
)

// Histogram counts latencies in nanoseconds with the layout of Redis 7.0's
// HDR histograms (hdr_init(1, 1e9, 2)): two significant digits, so each
// power-of-two range above 256 ns is cut into 128 equal buckets. INFO
// latencystats prints a bucket's highest equivalent value, so matching
// the layout makes its figures read like Redis's (1.003, 2.007, 51.199
// µs) rather than merely close to them. Adds are atomic: clients of
// several goroutines record into one histogram.
type Histogram struct {
	counts [countsLen]atomic.Int64
}

// The layout's constants, as hdr_calculate_bucket_config derives them for
// a lowest value of 1, a highest of MaxValue and 2 significant figures.
const (
	// MinValue and MaxValue clamp what is recorded (Redis's
	// LATENCY_HISTOGRAM_MIN_VALUE and _MAX_VALUE: 1 ns to 1 s).
	MinValue = 1
	MaxValue = 1_000_000_000

	subBucketCount        = 256 // 2^ceil(log2(2 * 10^2))
	subBucketHalfCount    = subBucketCount / 2
	subBucketHalfCountMag = 7
	subBucketMask         = subBucketCount - 1
	// bucketCount is how many doublings of 256 it takes to pass MaxValue.
	bucketCount = 23
	countsLen   = (bucketCount + 1) * subBucketHalfCount
)

// bucketOf is get_bucket_index: which power-of-two range v falls in.
func bucketOf(v int64) int {
	return 64 - bits.LeadingZeros64(uint64(v)|subBucketMask) - (subBucketHalfCountMag + 1)
}

// indexOf is counts_index_for.
func indexOf(v int64) int {
	b := bucketOf(v)
	sub := int(v >> b)
	return (b+1)<<subBucketHalfCountMag + sub - subBucketHalfCount
}

// valueAt is hdr_value_at_index: the lowest value of bucket index i.
func valueAt(i int) int64 {
	b := i>>subBucketHalfCountMag - 1
	sub := i&(subBucketHalfCount-1) + subBucketHalfCount
	if b < 0 {
		sub -= subBucketHalfCount
		b = 0
	}
	return int64(sub) << b
}

// lowestEquivalent and highestEquivalent bound the values that share v's
// bucket.
func lowestEquivalent(v int64) int64 {
	b := bucketOf(v)
	return (v >> b) << b
}

func highestEquivalent(v int64) int64 {
	return lowestEquivalent(v) + 1<<bucketOf(v) - 1
}

// Record counts one latency of ns nanoseconds, clamped to [MinValue,
// MaxValue].
func (h *Histogram) Record(ns int64) {
	ns = min(max(ns, MinValue), MaxValue)
	h.counts[indexOf(ns)].Add(1) // one atomic: the total is summed when read
}

// Counts is a copy of a Histogram's buckets at one moment. Every figure
// of one INFO line or LATENCY HISTOGRAM entry is read from one copy, so
// that they agree (percentiles in order, the distribution ending at the
// calls) while clients go on recording.
type Counts [countsLen]int64

// Snapshot copies h's buckets.
func (h *Histogram) Snapshot() *Counts {
	var c Counts
	for i := range h.counts {
		c[i] = h.counts[i].Load()
	}
	return &c
}

// ValueAt is hdr_value_at_percentile on a snapshot of h.
func (h *Histogram) ValueAt(percentile float64) int64 { return h.Snapshot().ValueAt(percentile) }

// ValueAt is hdr_value_at_percentile: the highest value equivalent to the
// one below which percentile per cent of the recorded values fall (the
// lowest equivalent for percentile 0).
func (c *Counts) ValueAt(percentile float64) int64 {
	p := min(percentile, 100)
	want := max(int64(p/100*float64(c.Total())+0.5), 1)
	var seen int64
	v := int64(0)
	for i, n := range c {
		seen += n
		if seen >= want {
			v = valueAt(i)
			break
		}
	}
	if percentile == 0 {
		return lowestEquivalent(v)
	}
	return highestEquivalent(v)
}

// Total is how many values were recorded.
func (c *Counts) Total() int64 {
	var n int64
	for _, k := range c {
		n += k
	}
	return n
}
