package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writerCases are every reply the Writer builds, as Redis 7.0 encodes it
// on a RESP2 and on a RESP3 connection.
var writerCases = []struct {
	name       string
	write      func(w *Writer)
	resp2, res string // res: RESP3
}{
	{"OK", func(w *Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
	{"Simple", func(w *Writer) { w.Simple("PONG") }, "+PONG\r\n", "+PONG\r\n"},
	{"Simple newlines blanked", func(w *Writer) { w.Simple("a\r\nb") }, "+a  b\r\n", "+a  b\r\n"},
	{"Error", func(w *Writer) { w.Error(ErrSyntax) }, "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
	{"Error newlines", func(w *Writer) { w.Error("ERR a\rb\nc") }, "-ERR a b c\r\n", "-ERR a b c\r\n"},
	{"Int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
	{"Int min", func(w *Writer) { w.Int(math.MinInt64) }, ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
	{"Bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
	{"Bulk empty", func(w *Writer) { w.Bulk([]byte{}) }, "$0\r\n\r\n", "$0\r\n\r\n"},
	{"BulkString", func(w *Writer) { w.BulkString("hé") }, "$3\r\nhé\r\n", "$3\r\nhé\r\n"},
	{"BulkInt", func(w *Writer) { w.BulkInt(-7) }, "$2\r\n-7\r\n", "$2\r\n-7\r\n"},
	{"Null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
	{"NullArray", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
	{"Array", func(w *Writer) { w.Array(2); w.Int(1); w.Null() }, "*2\r\n:1\r\n$-1\r\n", "*2\r\n:1\r\n_\r\n"},
	{"Array empty", func(w *Writer) { w.Array(0) }, "*0\r\n", "*0\r\n"},
	{"Map", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Int(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
	{"Map empty", func(w *Writer) { w.Map(0) }, "*0\r\n", "%0\r\n"},
	{"Set", func(w *Writer) { w.Set(1); w.BulkString("m") }, "*1\r\n$1\r\nm\r\n", "~1\r\n$1\r\nm\r\n"},
	{"Push", func(w *Writer) { w.Push(1); w.BulkString("x") }, "*1\r\n$1\r\nx\r\n", ">1\r\n$1\r\nx\r\n"},
	{"Bool true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
	{"Bool false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
	{"Double", func(w *Writer) { w.Double(0.1) }, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
	{"Double integral", func(w *Writer) { w.Double(3) }, "$1\r\n3\r\n", ",3\r\n"},
	{"Double inf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
	{"Double -inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
	{"Double -0", func(w *Writer) { w.Double(math.Copysign(0, -1)) }, "$2\r\n-0\r\n", ",-0\r\n"},
	{"Verbatim", func(w *Writer) { w.Verbatim("a\r\nb") }, "$4\r\na\r\nb\r\n", "=8\r\ntxt:a\r\nb\r\n"},
	{"Raw", func(w *Writer) { w.Raw([]byte("+X\r\n")) }, "+X\r\n", "+X\r\n"},
}

func TestWriter(t *testing.T) {
	for _, c := range writerCases {
		for _, proto := range []int{2, 3} {
			w := &Writer{Proto: proto}
			w.B = append(w.B, "prefix"...)
			c.write(w)
			want := c.resp2
			if proto == 3 {
				want = c.res
			}
			if got := string(w.B); got != "prefix"+want {
				t.Errorf("%s RESP%d: got %q, want %q", c.name, proto, got, "prefix"+want)
			}
		}
	}
}

func TestWriterTruncateAndReset(t *testing.T) {
	w := NewWriter()
	w.OK()
	mark := w.Len()
	w.Array(3)
	w.Int(1)
	w.Truncate(mark)
	w.Error(ErrSyntax)
	if got := string(w.B); got != "+OK\r\n-ERR syntax error\r\n" {
		t.Fatalf("got %q", got)
	}
	w.Reset()
	if w.Len() != 0 || cap(w.B) == 0 {
		t.Fatalf("small buffer should be kept and emptied: len %d cap %d", w.Len(), cap(w.B))
	}
	w.Bulk(make([]byte, 2<<20))
	w.Reset()
	if cap(w.B) != 0 {
		t.Fatalf("a big buffer should be dropped, cap %d", cap(w.B))
	}
}

// TestWriterNoAllocs: writing replies into a buffer with room allocates
// nothing, doubles included.
func TestWriterNoAllocs(t *testing.T) {
	for _, proto := range []int{2, 3} {
		w := &Writer{Proto: proto, B: make([]byte, 0, 4096)}
		val := []byte("value")
		n := testing.AllocsPerRun(1000, func() {
			w.B = w.B[:0]
			w.OK()
			w.Int(12345)
			w.Bulk(val)
			w.BulkInt(-99)
			w.Null()
			w.Array(2)
			w.Map(1)
			w.Set(1)
			w.Bool(true)
			w.Double(3.14159)
			w.Double(1e300)
			w.Double(-2.5e-7)
			w.Error(ErrWrongType)
			w.Simple("QUEUED")
		})
		if n != 0 {
			t.Errorf("RESP%d: %v allocations", proto, n)
		}
	}
}

// doubleSamples are values where %.17g is easy to get wrong: the switch
// between %f and %e at exponents -5/-4 and 16/17, values that round up to
// the next power of ten, exact ties at the 17th digit (glibc and strconv
// both round half to even), subnormals and the extremes.
func doubleSamples() []float64 {
	v := []float64{
		0, 1, -1, 0.1, 0.5, 1.5, 2.5, 3, 100, 1e15, 1e16, 1e17, 1e21, 1e22, 1e23,
		1e-4, 1e-5, 0.0001, 0.00001, 0.000123, 0.0000123, 9.9999e-5,
		1.0 / 3, 2.0 / 3, 12345.678, 123456789012345678, 99999999999999999,
		9.999999999999999e16, 9.9999999999999999e16, 99999999999999990,
		1234567890123456.25, 1234567890123456.75, 0.30000000000000004,
		1<<53 - 1, 1 << 53, 1<<53 + 2, 1 << 63, 1 << 64, -(1 << 63),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
		2.2250738585072009e-308, 4.9406564584124654e-324 * 3, 1e308, 1e-308,
		math.Pi, math.E, -math.Pi * 1e10, 5e-5, 5e-4, 0.00009999999999999999,
	}
	for e := -30; e <= 30; e++ {
		p := math.Pow(10, float64(e))
		v = append(v, p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), -p, 9.5*p, 9.99999999999999999*p)
	}
	rng := rand.New(rand.NewPCG(7, 17))
	for range 200 {
		v = append(v, math.Float64frombits(rng.Uint64()&^(0x7ff<<52)|uint64(rng.IntN(0x7ff))<<52)) // never inf/nan
		v = append(v, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(40)-20)))
		v = append(v, float64(rng.Int64N(1<<62))/float64(int64(1)<<rng.IntN(40)))
	}
	return v
}

// TestFormatDoubleMatchesPrintf compares FormatDouble with Go's
// fmt "%.17g", which follows C's %g rules (precision 17, %e when the
// exponent is < -4 or >= 17, trailing zeros removed, exponent with sign
// and at least two digits) and is exactly rounded like glibc.
// TestFormatDoubleAgainstRedis checks the same values against the real
// server, where C's printf does the work.
func TestFormatDoubleMatchesPrintf(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		got := string(FormatDouble(nil, f))
		if want := fmt.Sprintf("%.17g", f); got != want {
			t.Errorf("FormatDouble(%v) = %q, %%.17g gives %q", f, got, want)
		}
	}
	for _, f := range doubleSamples() {
		check(f)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(f)
	}
	for f, want := range map[float64]string{math.Inf(1): "inf", math.Inf(-1): "-inf", math.NaN(): "nan"} {
		if got := string(FormatDouble(nil, f)); got != want {
			t.Errorf("FormatDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestFormatDoubleAgainstRedis stores each sample as a sorted set score
// (ZADD parses it exactly: the shortest round-tripping text) and reads it
// back with ZSCORE, whose reply Redis builds with addReplyDouble: a bulk
// string of %.17g in RESP2, a RESP3 double in RESP3. Writer.Double must
// produce the same reply bytes.
func TestFormatDoubleAgainstRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server; skipped with -short")
	}
	addr := startRedis(t)
	samples := append(doubleSamples(), math.Inf(1), math.Inf(-1))
	for _, proto := range []int{2, 3} {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		var req bytes.Buffer
		fmt.Fprintf(&req, "HELLO %d\r\nDEL z\r\n", proto)
		for i, f := range samples {
			fmt.Fprintf(&req, "ZADD z %s m%d\r\nZSCORE z m%d\r\n", strconv.FormatFloat(f, 'g', -1, 64), i, i)
		}
		go nc.Write(req.Bytes())
		br := bufio.NewReader(nc)
		for range 2 {
			if _, err := readRawReply(br); err != nil {
				t.Fatal(err)
			}
		}
		for i, f := range samples {
			if rep, err := readRawReply(br); err != nil || rep.kind != ':' {
				t.Fatalf("ZADD %v: %v %v", f, rep, err)
			}
			rep, err := readRawReply(br)
			if err != nil {
				t.Fatal(err)
			}
			w := &Writer{Proto: proto}
			w.Double(f)
			mine, err := readRawReply(bufio.NewReader(bytes.NewReader(w.B)))
			if err != nil {
				t.Fatal(err)
			}
			if rep != mine {
				t.Errorf("RESP%d sample %d (%v): redis %v, Writer.Double %v (%q)", proto, i, f, rep, mine, w.B)
			}
		}
	}
}

// TestFormatDoubleTrimsOnlyFractions guards the zero trimming: zeros of
// an integer part (%f) and of an exponent (%e) stay.
func TestFormatDoubleTrimsOnlyFractions(t *testing.T) {
	for f, want := range map[float64]string{
		100: "100", 1e16: "10000000000000000", 1e17: "1e+17", 1e100: "1e+100", 0x1p-20: "9.5367431640625e-07",
		1e-5: "1.0000000000000001e-05", 120: "120", 0.25: "0.25",
	} {
		if got := string(FormatDouble(nil, f)); got != want {
			t.Errorf("FormatDouble(%v) = %q, want %q", f, got, want)
		}
	}
	if s := string(FormatDouble([]byte("x="), 2)); !strings.HasPrefix(s, "x=") || s != "x=2" {
		t.Errorf("FormatDouble must append to dst: %q", s)
	}
}
