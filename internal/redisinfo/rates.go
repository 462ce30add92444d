package redisinfo

import (
	"sync"
	"time"
)

// Rates computes INFO's instantaneous_* values the way Redis does: the
// server samples its counters every RateInterval (Tick), and a value is
// the mean rate over the last RateSamples samples.
type Rates struct {
	mu      sync.Mutex
	lastAt  time.Time
	last    [3]int64 // commands, input bytes, output bytes at lastAt
	samples [3][RateSamples]float64
	idx     int
}

// The sampling period and window of Rates.
const (
	RateSamples  = 16
	RateInterval = 100 * time.Millisecond
)

// Tick records the counters (commands, input bytes, output bytes) at now.
func (r *Rates) Tick(now time.Time, vals [3]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.lastAt.IsZero() {
		dt := now.Sub(r.lastAt).Seconds()
		if dt > 0 {
			for i := range vals {
				r.samples[i][r.idx] = float64(vals[i]-r.last[i]) / dt
			}
			r.idx = (r.idx + 1) % RateSamples
		}
	}
	r.lastAt, r.last = now, vals
}

// Current returns ops/sec, input bytes/sec and output bytes/sec.
func (r *Rates) Current() (ops, in, out float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum [3]float64
	for i := range sum {
		for _, v := range r.samples[i] {
			sum[i] += v
		}
	}
	return sum[0] / RateSamples, sum[1] / RateSamples, sum[2] / RateSamples
}

// Reset forgets every sample (CONFIG RESETSTAT).
func (r *Rates) Reset() {
	r.mu.Lock()
	r.samples = [3][RateSamples]float64{}
	r.lastAt = time.Time{}
	r.mu.Unlock()
}
