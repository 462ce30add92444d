package cmdstats

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Expected figures are what redis-server 7.0.15's INFO latencystats
// printed for one call of the given length in whole microseconds.
func TestHistogramMatchesRedisFigures(t *testing.T) {
	for _, tc := range []struct {
		usec int64
		want int64 // ns, the p50 of one sample
	}{
		{0, 1}, // 0 µs is clamped to the histogram's 1 ns
		{1, 1003},
		{2, 2007},
		{5, 5023},
		{20, 20095},
		{51, 51199},
		{177, 177151},
		{1060, 1064959},
		{2_000_000, MaxValue | 0x3fffff}, // clamped to 1 s, whose bucket spans 2^22 ns
	} {
		var h Histogram
		h.Record(tc.usec * 1000)
		if got := h.ValueAt(50); got != tc.want {
			t.Errorf("%d µs: p50 %d ns, want %d", tc.usec, got, tc.want)
		}
	}
}

func TestHistogramPercentiles(t *testing.T) {
	var h Histogram
	// Redis's config|set above: samples of 14 and 7..21 µs.
	for _, us := range []int64{7, 14, 14, 21} {
		h.Record(us * 1000)
	}
	for _, tc := range []struct {
		p    float64
		want int64
	}{
		{0, 6976}, // the lowest equivalent of 7000
		{0.0000001, 7007},
		{25, 7007},
		{50, 14015},
		{75, 14015},
		{99, 21119},
		{100, 21119},
		{150, 21119},
	} {
		if got := h.ValueAt(tc.p); got != tc.want {
			t.Errorf("p%v = %d, want %d", tc.p, got, tc.want)
		}
	}
	var empty Histogram
	if got := empty.ValueAt(99); got != 0 {
		t.Errorf("empty p99 = %d", got)
	}
}

func TestHistogramLayoutRoundTrips(t *testing.T) {
	for v := int64(1); v <= MaxValue; v = v*3/2 + 1 {
		i := indexOf(v)
		if i < 0 || i >= countsLen {
			t.Fatalf("index %d of %d out of range", i, v)
		}
		lo := valueAt(i)
		if lo != lowestEquivalent(v) || v < lo || v > highestEquivalent(v) {
			t.Fatalf("%d: bucket [%d,%d], index start %d", v, lowestEquivalent(v), highestEquivalent(v), lo)
		}
		// Two significant digits: a bucket is at most 1/128 of its values.
		if w := highestEquivalent(v) - lo + 1; v >= 256 && w*128 > lo {
			t.Fatalf("%d: bucket width %d too coarse", v, w)
		}
	}
}

func TestTableCommandStats(t *testing.T) {
	tab := New()
	get := slots.Lookup([]byte("get"))
	cfg := slots.LookupSub(slots.Lookup([]byte("config")), []byte("get"))
	var p Pending
	tab.Call(&p, get.ID, 3000, false)
	tab.Call(&p, get.ID, 4500, true)
	tab.Rejected(&p, get.ID)
	tab.Call(&p, cfg.ID, 1200, false)
	tab.Rejected(&p, slots.Lookup([]byte("set")).ID)
	if got := lines(tab.CommandStats); got != "" {
		t.Fatalf("published before Publish: %q", got)
	}
	tab.Publish(&p)
	want := "cmdstat_config|get:calls=1,usec=1,usec_per_call=1.00,rejected_calls=0,failed_calls=0\n" +
		"cmdstat_get:calls=2,usec=7,usec_per_call=3.50,rejected_calls=1,failed_calls=1\n" +
		"cmdstat_set:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0\n"
	if got := lines(tab.CommandStats); got != want {
		t.Fatalf("commandstats:\n%s\nwant:\n%s", got, want)
	}
	// 3000 and 4500 ns are measured as 3 and 5 µs (rounded); rejections
	// have no histogram.
	wantLat := "latency_percentiles_usec_config|get:p50=1.003,p99=1.003,p99.9=1.003\n" +
		"latency_percentiles_usec_get:p50=3.007,p99=5.023,p99.9=5.023\n"
	if got := lines(tab.LatencyStats); got != wantLat {
		t.Fatalf("latencystats:\n%s\nwant:\n%s", got, wantLat)
	}
	tab.Reset()
	if got := lines(tab.CommandStats) + lines(tab.LatencyStats); got != "" {
		t.Fatalf("after Reset: %q", got)
	}
}

func TestUsecPerCallSinglePrecision(t *testing.T) {
	// (float)123456789/7 in C is 17636684.0, not 17636684.14.
	if got := usecPerCall(123456789, 7); got != float64(float32(123456789)/float32(7)) || got == 123456789.0/7 {
		t.Fatalf("usecPerCall = %v", got)
	}
}

func TestLatencyParams(t *testing.T) {
	tab := New()
	pp := tab.PercentilesParam()
	if got := pp.Get(); got != "50 99 99.9" {
		t.Fatalf("default percentiles %q", got)
	}
	for _, tc := range []struct{ in, reason, get string }{
		{"33.33333333 0.0000001 100.0 99.90", "", "33.333333 0 100 99.9"},
		{"", "", ""},
		{"1e1 0x10 -0", "", "10 16 -0"},
		{"abc", "Invalid latency-tracking-info-percentiles parameters", ""},
		{" 50  99 ", "Invalid latency-tracking-info-percentiles parameters", ""},
		{" ", "Invalid latency-tracking-info-percentiles parameters", ""},
		{"nan", "Invalid latency-tracking-info-percentiles parameters", ""},
		{"50,99", "Invalid latency-tracking-info-percentiles parameters", ""},
		{"1e-400", "Invalid latency-tracking-info-percentiles parameters", ""},
		{"1_0", "Invalid latency-tracking-info-percentiles parameters", ""},
		{"101", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]", ""},
		{"-1", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]", ""},
		{"inf", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]", ""},
		{"1e999", "Invalid latency-tracking-info-percentiles parameters", ""},
	} {
		apply, reason := pp.Check(tc.in)
		if reason != tc.reason {
			t.Errorf("%q: reason %q, want %q", tc.in, reason, tc.reason)
			continue
		}
		if apply != nil {
			apply()
			if got := pp.Get(); got != tc.get {
				t.Errorf("%q: get %q, want %q", tc.in, got, tc.get)
			}
		}
	}
	tp := tab.TrackingParam()
	if _, reason := tp.Check("maybe"); reason != "argument must be 'yes' or 'no'" {
		t.Fatalf("latency-tracking maybe: %q", reason)
	}
	apply, _ := tp.Check("NO")
	apply()
	var p Pending
	tab.Call(&p, slots.Lookup([]byte("get")).ID, 1000, false)
	tab.Publish(&p)
	if got := lines(tab.LatencyStats); got != "" || tp.Get() != "no" {
		t.Fatalf("tracking off: %q, %s", got, tp.Get())
	}
}

func TestString2d(t *testing.T) {
	for _, tc := range []struct {
		in string
		f  float64
		ok bool
	}{
		{"1", 1, true}, {"+.5", 0.5, true}, {"5.", 5, true}, {"0x1p4", 16, true},
		{"0X.8", 0.5, true}, {"INFINITY", math.Inf(1), true}, {"-inf", math.Inf(-1), true},
		{"", 0, false}, {".", 0, false}, {"1e", 0, false}, {"0x", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"NaN", 0, false}, {"1e-400", 0, false},
		{"0e-400", 0, true}, {"0x1_0", 0, false}, {"1i", 0, false},
	} {
		f, ok := string2d(tc.in)
		if ok != tc.ok || (ok && f != tc.f) {
			t.Errorf("string2d(%q) = %v, %v; want %v, %v", tc.in, f, ok, tc.f, tc.ok)
		}
	}
}

func lines(gen func(func(k, v string))) string {
	var b strings.Builder
	gen(func(k, v string) { b.WriteString(k + ":" + v + "\n") })
	return b.String()
}

// TestHistogramCDF: LATENCY HISTOGRAM's distribution for samples like
// those redis-server 7.0.15 answered [1 1 4 3 8 4 16 5] and [4 1 33 2]
// for; a value past the last reported level (half a second) counts in
// calls only, as in Redis.
func TestHistogramCDF(t *testing.T) {
	for _, tc := range []struct {
		usec []int64
		want []cdfPoint
	}{
		{[]int64{1, 3, 3, 7, 15}, []cdfPoint{{1, 1}, {4, 3}, {8, 4}, {16, 5}}},
		{[]int64{4, 32}, []cdfPoint{{4, 1}, {33, 2}}},
		{[]int64{0}, []cdfPoint{{1, 1}}},
		{[]int64{5, 900_000}, []cdfPoint{{8, 1}}},
	} {
		var h Histogram
		for _, us := range tc.usec {
			h.Record(us * 1000)
		}
		if got := h.Snapshot().cdf(); !slices.Equal(got, tc.want) {
			t.Errorf("%v µs: cdf %v, want %v", tc.usec, got, tc.want)
		}
	}
}

// TestFiguresAgreeWhileRecording: an INFO line's percentiles and a
// LATENCY HISTOGRAM entry come from one copy of the counts, so they
// agree with each other while other clients record (and reset).
func TestFiguresAgreeWhileRecording(t *testing.T) {
	tab := New()
	id := slots.Lookup([]byte("set")).ID
	apply, _ := tab.PercentilesParam().Check("50 99 99.9 100")
	apply()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p Pending
			for i := int64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tab.Call(&p, id, (i*7919+int64(g)*104729)%2_000_000, false)
				if i%64 == 0 {
					tab.Publish(&p)
				}
				if g == 0 && i%5000 == 0 {
					tab.Reset()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for range 300 {
		tab.LatencyStats(func(k, v string) {
			var prev float64
			for _, f := range strings.Split(v, ",") {
				_, num, _ := strings.Cut(f, "=")
				x, err := strconv.ParseFloat(num, 64)
				if err != nil || x < prev {
					t.Fatalf("%s:%s: percentiles out of order", k, v)
				}
				prev = x
			}
		})
		var w resp.Writer
		w.Proto = 3
		tab.writeHistograms(&w, nil)
		if h := tab.cmds[id].hist.Load(); h != nil {
			c := h.Snapshot()
			if cdf := c.cdf(); len(cdf) > 0 && cdf[len(cdf)-1].count > c.Total() {
				t.Fatalf("distribution ends at %d over %d calls", cdf[len(cdf)-1].count, c.Total())
			}
		}
	}
}
