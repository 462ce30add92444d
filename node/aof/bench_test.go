package aof

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// benchRecord is a SET of a 16-byte key and a 64-byte value.
func benchRecord(i int) *Record {
	return &Record{Kind: KindCommand, Slot: int32(i % NumSlots), Now: 1700000000000,
		Cmds: [][][]byte{{[]byte("SET"), fmt.Appendf(nil, "key:%012d", i), make([]byte, 64)}}}
}

// BenchmarkAppend measures Append alone from parallel goroutines (the
// writer drains the buffer to a temp file in the background, policy No).
func BenchmarkAppend(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir(), Policy: No, Logger: quietLogger()}, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(EncodeRecord(nil, benchRecord(0)))))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRecord(0)
		for pb.Next() {
			l.Append(r)
		}
	})
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAppendWait measures Append then Wait with each policy from 64
// goroutines (50 clients is the figure's setting) on a temp dir.
func BenchmarkAppendWait(b *testing.B) {
	for _, p := range policies {
		b.Run(p.String(), func(b *testing.B) {
			l, err := Open(Options{Dir: b.TempDir(), Policy: p, Logger: quietLogger()}, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(EncodeRecord(nil, benchRecord(0)))))
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				r := benchRecord(0)
				for pb.Next() {
					if err := l.Wait(l.Append(r)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			st := l.Stats()
			b.ReportMetric(float64(b.N)/float64(max(st.Fsyncs, 1)), "waits/fsync")
			b.ReportMetric(float64(b.N)/float64(max(st.Writes, 1)), "waits/write")
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkAppendDuringRotate measures Append latency from parallel
// goroutines while another rotates the log in a loop (policy Always, a
// temp dir), against the same load without rotations: Append must not
// wait for a rotation's I/O. It reports the rotations done and the p99 and
// max of a sample of Appends; the max is dominated, with or without
// rotations, by the buffer's growth (these appenders never Wait).
func BenchmarkAppendDuringRotate(b *testing.B) {
	for _, rotate := range []bool{false, true} {
		b.Run(map[bool]string{false: "idle", true: "rotating"}[rotate], func(b *testing.B) {
			benchAppendLatency(b, rotate)
		})
	}
}

func benchAppendLatency(b *testing.B, rotate bool) {
	l, err := Open(Options{Dir: b.TempDir(), Policy: Always, Logger: quietLogger()}, 0)
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	rotated := make(chan int, 1)
	go func() {
		n := 0
		for rotate {
			select {
			case <-stop:
				rotated <- n
				return
			default:
			}
			if _, err := l.Rotate(); err != nil {
				b.Error(err)
			}
			n++
		}
		rotated <- 0
	}()
	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	b.SetBytes(int64(len(EncodeRecord(nil, benchRecord(0)))))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRecord(0)
		var mine []time.Duration
		for i := 0; pb.Next(); i++ {
			if i%64 != 0 {
				l.Append(r)
				continue
			}
			t0 := time.Now()
			l.Append(r)
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(<-rotated), "rotations")
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}
