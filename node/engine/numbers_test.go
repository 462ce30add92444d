package engine

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/resp"
)

// TestIncrbyfloatRedisCases replays INCRBYFLOAT cases recorded from
// redis-server 7.0.15 (testdata/incrbyfloat_redis.json: the initial value
// or null for a missing key, the increment, the reply — a value or an
// error line starting with '-' — and OBJECT ENCODING afterwards). They
// cover x87 precision, %.17Lf rounding (ties to even), hex floats,
// subnormals, overflow and underflow limits, and every refused spelling.
func TestIncrbyfloatRedisCases(t *testing.T) {
	raw, err := os.ReadFile("testdata/incrbyfloat_redis.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][4]*string
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 50 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		init, incr, reply, enc := tc[0], *tc[1], *tc[2], tc[3]
		s := newStrEnv(t)
		if init != nil {
			s.run("SET", "f", *init)
		}
		got := s.run("INCRBYFLOAT", "f", incr)
		want := rBulk(reply)
		if strings.HasPrefix(reply, "-ERR ") || strings.HasPrefix(reply, "-WRONGTYPE ") {
			want = reply + "\r\n"
		}
		if got != want {
			t.Errorf("INCRBYFLOAT %v %q: got %.100q, want %.100q", init, incr, got, want)
			continue
		}
		e := s.entry("f")
		switch {
		case enc == nil && e != nil:
			t.Errorf("INCRBYFLOAT %v %q: key exists, Redis has none", init, incr)
		case enc != nil && (e == nil || e.Enc.String() != *enc):
			t.Errorf("INCRBYFLOAT %v %q: encoding %v, want %s", init, incr, e, *enc)
		}
	}
}

func TestParseLongDouble(t *testing.T) {
	cases := []struct {
		in  string
		out string // formatted; "" when refused
	}{
		{"0", "0"}, {"-0", "0"}, {"1", "1"}, {"+1", "1"}, {"-1.5", "-1.5"},
		{"1e3", "1000"}, {"1E-3", "0.001"}, {".5", "0.5"}, {"5.", "5"},
		{"0x1p4", "16"}, {"0X.4P2", "1"}, {"0xff", "255"}, {"0x1.fffffffffffffffep0", "2"}, {"0x1.ffffffffffffffffp0", "2"},
		{"0x1p-40", "0.00000000000090949"}, {"-0x1p-70", "0"},
		{"0.1", "0.1"}, {"1e-18", "0"}, {"-1e-18", "0"},
		{"18446744073709551615", "18446744073709551615"},
		{"18446744073709551617", "18446744073709551616"}, // 65 bits: ties to even
		{"18446744073709551619", "18446744073709551620"},
		{"", ""}, {" 1", ""}, {"1 ", ""}, {"\t1", ""}, {"1\x00", ""}, {"--1", ""}, {"+-1", ""},
		{"1e", ""}, {"1e+", ""}, {"e1", ""}, {".", ""}, {"0x", ""}, {"0xg", ""}, {"0x1p", ""},
		{"nan", ""}, {"-nan", ""}, {"nan(1)", ""}, {"infx", ""}, {"1,5", ""}, {"1_000", ""},
		{"1e5000", ""}, {"-1e5000", ""}, {"1e-5000", ""}, {"0e-5000", "0"}, {"0x0p99999999", "0"},
		{"1e999999999999999999999", ""}, {"1e-999999999999999999999", ""},
	}
	for _, tc := range cases {
		d, ok := parseLongDouble([]byte(tc.in))
		if tc.out == "" {
			if ok && !d.IsInf() {
				t.Errorf("parse %.40q: accepted as %s, want refused", tc.in, appendLongDouble(nil, d))
			}
			continue
		}
		if !ok {
			t.Errorf("parse %.40q: refused", tc.in)
			continue
		}
		if got := string(appendLongDouble(nil, d)); got != tc.out {
			t.Errorf("parse %q: %s, want %s", tc.in, got, tc.out)
		}
	}
}

// TestParseLongDoubleLength: string2ld refuses MAX_LONG_DOUBLE_CHARS bytes
// or more, whatever they hold.
func TestParseLongDoubleLength(t *testing.T) {
	if _, ok := parseLongDouble([]byte("0." + strings.Repeat("1", maxLongDoubleChars-3))); !ok {
		t.Error("longest accepted input refused")
	}
	if _, ok := parseLongDouble([]byte("0." + strings.Repeat("1", maxLongDoubleChars-2))); ok {
		t.Error("input of MAX_LONG_DOUBLE_CHARS accepted")
	}
}

func TestParseLongDoubleInf(t *testing.T) {
	for _, in := range []string{"inf", "-inf", "+INF", "Infinity", "-iNfInItY"} {
		d, ok := parseLongDouble([]byte(in))
		if !ok || !d.IsInf() {
			t.Errorf("%q: ok=%v, want an infinity", in, ok)
		}
	}
}

// TestAddLongDoubleLimits: the sum overflows exactly where the extended
// format does, and infinities never reach big.Float (which panics on
// inf-inf).
func TestAddLongDoubleLimits(t *testing.T) {
	maxLD, ok := parseLongDouble([]byte("0xffffffffffffffffp16320"))
	if !ok {
		t.Fatal("largest extended value refused")
	}
	if _, ok := addLD(maxLD, ldFromInt(1)); !ok {
		t.Error("max+1 rounds back to max, not an overflow")
	}
	if _, ok := addLD(maxLD, maxLD); ok {
		t.Error("max+max must overflow")
	}
	inf, _ := parseLongDouble([]byte("inf"))
	ninf, _ := parseLongDouble([]byte("-inf"))
	if _, ok := addLD(inf, ninf); ok {
		t.Error("inf + -inf accepted")
	}
	if _, ok := parseLongDouble([]byte("0x1p16384")); ok {
		t.Error("2^16384 must overflow")
	}
}

func TestStringEncodingFunc(t *testing.T) {
	cases := map[string]Encoding{
		"0": EncInt, "-1": EncInt, "9223372036854775807": EncInt, "-9223372036854775808": EncInt,
		"9223372036854775808": EncEmbstr, "": EncEmbstr, "-0": EncEmbstr, "+1": EncEmbstr, " 1": EncEmbstr,
		"007": EncEmbstr, strings.Repeat("9", 44): EncEmbstr, strings.Repeat("9", 45): EncRaw,
	}
	for in, want := range cases {
		if got := stringEncoding([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// TestIntParseAgreesWithFormat: every int64 formats to a string that parses
// back (the INCR round trip), and math limits behave.
func TestIntParseAgreesWithFormat(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64, 1e18, -1e18} {
		b := appendInt(nil, v)
		got, ok := resp.ParseInt(b)
		if !ok || got != v {
			t.Errorf("%d: parsed back %d %v", v, got, ok)
		}
	}
}
