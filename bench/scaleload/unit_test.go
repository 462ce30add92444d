package scaleload

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shardgate/shardgate/slots"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for us := int64(0); us < 1<<histMaxExp; us = us + 1 + us/50 {
		d := time.Duration(us) * time.Microsecond
		i := histIndex(d)
		if i < prev || i >= histBuckets {
			t.Fatalf("histIndex(%v) = %d after %d (of %d)", d, i, prev, histBuckets)
		}
		prev = i
		if up := histUpper(i); d >= up || (i > 0 && d < histUpper(i-1)) {
			t.Fatalf("%v in bucket %d, which holds [%v, %v)", d, i, histUpper(i-1), up)
		}
		if lo := histUpper(i - 1 + boolInt(i == 0)); i > histLinear && float64(histUpper(i)-lo)/float64(lo) > 0.035 {
			t.Fatalf("bucket %d is %v..%v, wider than 3.5%%", i, lo, histUpper(i))
		}
	}
	if i := histIndex(48 * time.Hour); i != histBuckets-1 {
		t.Errorf("48h in bucket %d, want the last (%d)", i, histBuckets-1)
	}
	if i := histIndex(-time.Second); i != 0 {
		t.Errorf("negative duration in bucket %d", i)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 {
		t.Error("empty histogram has a p99")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var all []time.Duration
	for range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(500*time.Microsecond))
		all = append(all, d)
		h.Record(d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := all[min(int(q*float64(len(all))), len(all)-1)]
		got := h.Quantile(q)
		// Never below, at most a bucket (3%) plus a microsecond above.
		if got < exact || float64(got) > float64(exact)*1.035+float64(time.Microsecond) {
			t.Errorf("q%v: got %v, exact %v", q, got, exact)
		}
	}
	if h.Max() != all[len(all)-1] || h.Quantile(1) != h.Max() {
		t.Errorf("max %v, q1 %v, want %v", h.Max(), h.Quantile(1), all[len(all)-1])
	}
	var a, b Histogram
	for i, d := range all {
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	if a != h {
		t.Error("merged halves differ from the whole")
	}
}

func TestStatsWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := newStats(2, 2, t0)
	// Window 1: 10 ops of 1 ms; window 2: 10 ops of 10 ms, one error;
	// window 3: 30 ops of 1 ms.
	for i := range 10 {
		st.recs[i%2].record("GET", time.Millisecond, false, false)
	}
	st.tick(t0.Add(time.Second))
	for i := range 10 {
		st.recs[i%2].record("SET", 10*time.Millisecond, i == 0, false)
	}
	st.tick(t0.Add(2 * time.Second))
	for i := range 30 {
		st.recs[i%2].record("GET", time.Millisecond, false, i == 0)
	}
	st.tick(t0.Add(4 * time.Second))
	ws := st.Windows()
	if len(ws) != 3 || ws[0].Ops != 10 || ws[1].Errors != 1 || ws[2].Ops != 30 || ws[2].Mismatches != 1 {
		t.Fatalf("windows %+v", ws)
	}
	if ws[2].Throughput != 15 || ws[1].P50 < 10*time.Millisecond || ws[1].P50 > 11*time.Millisecond {
		t.Errorf("window 3 throughput %v (want 15), window 2 p50 %v", ws[2].Throughput, ws[1].P50)
	}
	during := st.Between(t0.Add(time.Second), t0.Add(2*time.Second))
	if during.Ops != 10 || during.Errors != 1 || during.P99 < 10*time.Millisecond {
		t.Errorf("during %+v", during)
	}
	all := st.Between(t0, t0.Add(time.Hour))
	if all.Ops != 50 || all.Duration != 4*time.Second || all.Throughput != 12.5 || all.P50 > 2*time.Millisecond || all.P99 < 10*time.Millisecond {
		t.Errorf("all %+v", all)
	}
	cmds := st.Commands()
	if cmds["GET"].Ops != 40 || cmds["SET"].Errors != 1 || cmds["GET"].Mismatches != 1 {
		t.Errorf("commands %+v", cmds)
	}
	if tot := st.Total(); tot.Ops != 50 || tot.Errors != 1 || tot.Mismatches != 1 {
		t.Errorf("total %+v", tot)
	}
	for i := range 3 {
		st.errorSample("e" + string(rune('0'+i)))
	}
	if got := st.ErrorSamples(); !slices.Equal(got, []string{"e0", "e1"}) {
		t.Errorf("error samples %q, want the first 2", got)
	}
}

func TestTTL(t *testing.T) {
	const tol = 1000
	for _, tc := range []struct {
		name              string
		pttl, t0, t1      int64
		lo, hi            int64
		wantProblem       bool
		wantMust, wantMay bool
	}{
		{"no expiry as wanted", -1, 100, 200, 0, 0, false, false, true},
		{"expiry where none", 5000, 100, 200, 0, 0, true, false, true},
		{"exact", 9900, 100, 100, 10000, 10000, false, true, true},
		{"within the read's span", 9850, 100, 200, 10000, 10000, false, true, true},
		{"within tolerance", 10800, 100, 100, 10000, 10000, false, true, true},
		{"two seconds late", 11900, 100, 100, 10000, 10000, true, true, true},
		{"two seconds early", 7900, 100, 100, 10000, 10000, true, true, true},
		{"range", 15000, 100, 100, 10000, 20000, false, true, true},
		{"open range", 500000, 100, 100, 10000, noUpperBound, false, true, true},
		{"below an open range", 5000, 100, 100, 10000, noUpperBound, true, true, true},
		{"expiry lost", -1, 100, 100, 10000, 10000, true, true, true},
		{"missing: presence decides", -2, 100, 100, 10000, 10000, false, true, true},
		{"read after the expiry", -2, 12000, 12100, 10000, 10000, false, false, false},
		{"read near the expiry", -2, 9500, 9600, 10000, 10000, false, false, true},
	} {
		p := ttlProblem(tc.pttl, tc.t0, tc.t1, tc.lo, tc.hi, tol)
		if (p != "") != tc.wantProblem {
			t.Errorf("%s: ttlProblem = %q, want a problem: %v", tc.name, p, tc.wantProblem)
		}
		if tc.lo == 0 {
			continue
		}
		if must, may := presence(tc.lo, tc.hi, tc.t0, tc.t1, tol); must != tc.wantMust || may != tc.wantMay {
			t.Errorf("%s: presence = %v %v, want %v %v", tc.name, must, may, tc.wantMust, tc.wantMay)
		}
	}
}

func TestTagTable(t *testing.T) {
	tags := tagTable("p")
	seen := make(map[string]bool)
	for s, tag := range tags {
		if got := slots.SlotString("{" + tag + "}:anything"); int(got) != s {
			t.Fatalf("tag %q is for slot %d, hashes to %d", tag, s, got)
		}
		if seen[tag] {
			t.Fatalf("tag %q twice", tag)
		}
		seen[tag] = true
	}
}

func TestLayout(t *testing.T) {
	for _, keys := range []int{MinKeys, 1500, DefaultKeys} {
		cfg, err := Config{Addr: "x", Keys: keys}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(&cfg)
		if m.keys < keys*9/10 || m.keys > keys {
			t.Errorf("keys %d: the model has %d", keys, m.keys)
		}
		var perKind [numKinds]int
		thirds := [3]int{} // groups per third of the slot space (3 nodes)
		covered := make(map[uint16]bool)
		names := make(map[string]bool)
		for _, g := range m.groups {
			perKind[g.kind] += len(kinds[g.kind].keys(g))
			s := slots.SlotString(g.base)
			covered[s] = true
			thirds[int(s)*3/slots.Count]++
			for _, k := range kinds[g.kind].keys(g) {
				if slots.SlotString(k) != s || names[k] {
					t.Fatalf("key %s: slot %d, group's %d, or a duplicate", k, slots.SlotString(k), s)
				}
				names[k] = true
			}
		}
		for k, n := range perKind {
			if want := keys * kindShare[k] / 100; n < want*8/10-4 || n > want {
				t.Errorf("keys %d: %v has %d keys, want about %d", keys, Kind(k), n, want)
			}
		}
		for i, n := range thirds {
			if slack := len(m.groups)/slots.Count + 2; n < len(m.groups)/3-slack || n > len(m.groups)/3+slack {
				t.Errorf("keys %d: third %d of the slots has %d of %d groups", keys, i, n, len(m.groups))
			}
		}
		if keys == DefaultKeys && len(covered) != slots.Count {
			t.Errorf("default dataset covers %d slots", len(covered))
		}
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{Addr: "a"}, true},
		{"no address", Config{}, false},
		{"too few keys", Config{Addr: "a", Keys: 10}, false},
		{"negative workers", Config{Addr: "a", Workers: -1}, false},
		{"offset too small", Config{Addr: "a", BitmapMaxOffset: 1000}, false},
		{"offset beyond 2^32", Config{Addr: "a", BitmapMaxOffset: 1<<32 + 1}, false},
		{"reads only", Config{Addr: "a", ReadRatio: 1}, false},
		{"writes only", Config{Addr: "a", ReadRatio: -1}, true},
		{"negative rate", Config{Addr: "a", Rate: -1}, false},
		{"short TTL", Config{Addr: "a", TTL: time.Second}, false},
		{"negative settle", Config{Addr: "a", Settle: -1}, false},
	} {
		cfg, err := tc.cfg.withDefaults()
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if tc.name == "defaults" && (cfg.Keys != DefaultKeys || cfg.Workers != DefaultWorkers || cfg.TTL != DefaultTTL || cfg.Prefix != DefaultPrefix) {
			t.Errorf("defaults not applied: %+v", cfg)
		}
	}
}
