package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func read(t *testing.T, raw string) (Value, error) {
	t.Helper()
	return ReadValue(bufio.NewReaderSize(strings.NewReader(raw), 16))
}

func TestReadValueEveryType(t *testing.T) {
	big := strings.Repeat("x", 100) // longer than the reader's buffer
	tests := []struct {
		name, raw string
		want      Value
	}{
		{"simple", "+OK\r\n", Simple("OK")},
		{"simple empty", "+\r\n", Simple("")},
		{"error", "-ERR wrong number of arguments for 'get' command\r\n", Err("ERR wrong number of arguments for 'get' command")},
		{"integer", ":42\r\n", Int(42)},
		{"negative integer", ":-9223372036854775808\r\n", Int(-9223372036854775808)},
		{"bulk", "$3\r\nfoo\r\n", BulkOf("foo")},
		{"bulk empty", "$0\r\n\r\n", BulkOf("")},
		{"bulk binary", "$4\r\n\r\n\x00\xff\r\n", BulkOf("\r\n\x00\xff")},
		{"bulk long", fmt.Sprintf("$%d\r\n%s\r\n", len(big), big), BulkOf(big)},
		{"null bulk", "$-1\r\n", Value{Kind: NullBulk}},
		{"null array", "*-1\r\n", Value{Kind: NullArray}},
		{"empty array", "*0\r\n", ArrayOf()},
		{"nested array", "*3\r\n:1\r\n*1\r\n$1\r\na\r\n$-1\r\n", ArrayOf(Int(1), ArrayOf(BulkOf("a")), Value{Kind: NullBulk})},
		{"map", "%2\r\n+a\r\n:1\r\n$1\r\nb\r\n*0\r\n", Value{Kind: Map, Elems: []Value{Simple("a"), Int(1), BulkOf("b"), ArrayOf()}}},
		{"set", "~2\r\n$1\r\na\r\n$1\r\nb\r\n", Value{Kind: Set, Elems: []Value{BulkOf("a"), BulkOf("b")}}},
		{"double", ",3.1400000000000001\r\n", Value{Kind: Double, Str: []byte("3.1400000000000001")}},
		{"double inf", ",inf\r\n", Value{Kind: Double, Str: []byte("inf")}},
		{"bool true", "#t\r\n", Value{Kind: Boolean, Int: 1}},
		{"bool false", "#f\r\n", Value{Kind: Boolean}},
		{"null", "_\r\n", Value{Kind: Null}},
		{"verbatim", "=8\r\ntxt:abcd\r\n", Value{Kind: Verbatim, Str: []byte("txt:abcd")}},
		{"big number", "(3492890328409238509324850943850943825024385\r\n", Value{Kind: BigNumber, Str: []byte("3492890328409238509324850943850943825024385")}},
		{"push", ">2\r\n$7\r\nmessage\r\n:1\r\n", Value{Kind: Push, Elems: []Value{BulkOf("message"), Int(1)}}},
		{"blob error", "!5\r\nERR x\r\n", Err("ERR x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := read(t, tt.raw)
			if err != nil {
				t.Fatalf("ReadValue(%q): %v", tt.raw, err)
			}
			if !Equal(got, tt.want) {
				t.Fatalf("ReadValue(%q) = %s, want %s", tt.raw, got, tt.want)
			}
		})
	}
}

func TestReadValueMalformed(t *testing.T) {
	tests := []struct {
		name, raw string
		wantEOF   bool
	}{
		{"unknown type", "?x\r\n", false},
		{"bare LF", "+OK\n", false},
		{"bad integer", ":12a\r\n", false},
		{"bad bulk length", "$-2\r\n", false},
		{"bulk without CRLF", "$3\r\nfooXY", false},
		{"bad boolean", "#x\r\n", false},
		{"bad null", "_x\r\n", false},
		{"null set", "~-1\r\n", false},
		{"empty line", "\r\n", false},
		{"truncated bulk", "$10\r\nabc", true},
		{"truncated array", "*2\r\n:1\r\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := read(t, tt.raw)
			if err == nil {
				t.Fatalf("ReadValue(%q) = %s, want an error", tt.raw, v)
			}
			isEOF := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
			if tt.wantEOF != isEOF || (!tt.wantEOF && !errors.Is(err, ErrProtocol)) {
				t.Fatalf("ReadValue(%q) error %v (EOF=%v), want EOF=%v", tt.raw, err, isEOF, tt.wantEOF)
			}
		})
	}
}

// TestEqualTellsApart lists reply pairs that look alike but that a
// Redis-compatible server must not confuse.
func TestEqualTellsApart(t *testing.T) {
	tests := []struct {
		name string
		a, b Value
	}{
		{"simple vs bulk", Simple("OK"), BulkOf("OK")},
		{"null bulk vs null array", Value{Kind: NullBulk}, Value{Kind: NullArray}},
		{"null bulk vs RESP3 null", Value{Kind: NullBulk}, Value{Kind: Null}},
		{"empty bulk vs null bulk", BulkOf(""), Value{Kind: NullBulk}},
		{"integer value", Int(1), Int(2)},
		{"integer vs bulk", Int(1), BulkOf("1")},
		{"error text", Err("ERR syntax error"), Err("ERR Syntax error")},
		{"array order", ArrayOf(BulkOf("a"), BulkOf("b")), ArrayOf(BulkOf("b"), BulkOf("a"))},
		{"array length", ArrayOf(BulkOf("a")), ArrayOf(BulkOf("a"), BulkOf("a"))},
		{"array vs set", ArrayOf(BulkOf("a")), Value{Kind: Set, Elems: []Value{BulkOf("a")}}},
		{"nested", ArrayOf(ArrayOf(Int(1))), ArrayOf(ArrayOf(Int(2)))},
		{"double text", Value{Kind: Double, Str: []byte("1")}, Value{Kind: Double, Str: []byte("1.0")}},
		{"bool", Value{Kind: Boolean, Int: 1}, Value{Kind: Boolean}},
		{"map value", Value{Kind: Map, Elems: []Value{BulkOf("k"), Int(1)}}, Value{Kind: Map, Elems: []Value{BulkOf("k"), Int(2)}}},
		{"verbatim vs bulk", Value{Kind: Verbatim, Str: []byte("txt:a")}, BulkOf("txt:a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if Equal(tt.a, tt.b) || Equal(tt.b, tt.a) {
				t.Fatalf("Equal(%s, %s) = true", tt.a, tt.b)
			}
			if !Equal(tt.a, tt.a) || !Equal(tt.b, tt.b) {
				t.Fatalf("a value is not equal to itself: %s / %s", tt.a, tt.b)
			}
		})
	}
}

func TestSorted(t *testing.T) {
	a := ArrayOf(BulkOf("b"), BulkOf("a"), Int(3))
	b := ArrayOf(Int(3), BulkOf("a"), BulkOf("b"))
	if Equal(a, b) || !Equal(Sorted(a), Sorted(b)) {
		t.Fatalf("Sorted: %s vs %s", Sorted(a), Sorted(b))
	}
	if !Equal(a, ArrayOf(BulkOf("b"), BulkOf("a"), Int(3))) {
		t.Fatal("Sorted modified its argument")
	}
	m1 := Value{Kind: Map, Elems: []Value{BulkOf("y"), Int(2), BulkOf("x"), Int(1)}}
	m2 := Value{Kind: Map, Elems: []Value{BulkOf("x"), Int(1), BulkOf("y"), Int(2)}}
	if !Equal(Sorted(m1), Sorted(m2)) {
		t.Fatalf("Sorted maps: %s vs %s", Sorted(m1), Sorted(m2))
	}
	m3 := Value{Kind: Map, Elems: []Value{BulkOf("x"), Int(2), BulkOf("y"), Int(1)}}
	if Equal(Sorted(m1), Sorted(m3)) {
		t.Fatal("Sorted maps lost the key/value pairing")
	}
	// Different multisets stay different.
	if Equal(Sorted(ArrayOf(BulkOf("a"), BulkOf("a"))), Sorted(ArrayOf(BulkOf("a"), BulkOf("b")))) {
		t.Fatal("Sorted made different multisets equal")
	}
}

func TestRender(t *testing.T) {
	v := ArrayOf(Simple("OK"), Err("ERR x"), Int(1), BulkOf("a b"), Value{Kind: NullBulk},
		Value{Kind: Map, Elems: []Value{BulkOf("k"), Value{Kind: Boolean, Int: 1}}})
	want := `array[simple:"OK", error:"ERR x", int:1, bulk:"a b", null-bulk, map{bulk:"k" => bool:true}]`
	if got := v.String(); got != want {
		t.Fatalf("String() = %s, want %s", got, want)
	}
	long := BulkOf(strings.Repeat("z", 10000)).String()
	if len(long) > 400 || !strings.Contains(long, "(10000 bytes)") {
		t.Fatalf("long bulk rendered as %d bytes: %.100s", len(long), long)
	}
	if got := FormatCommand([]string{"SET", "a b", "", "k\x00"}); got != `SET "a b" "" "k\x00"` {
		t.Fatalf("FormatCommand = %s", got)
	}
}

func TestAppendCommandRoundTrip(t *testing.T) {
	raw := AppendCommand(nil, []byte("SET"), []byte("k"), []byte(""))
	v, err := read(t, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(v, ArrayOf(BulkOf("SET"), BulkOf("k"), BulkOf(""))) {
		t.Fatalf("round trip: %s", v)
	}
}
