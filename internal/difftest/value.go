package difftest

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Kind is the RESP type of a reply. Null bulk and null array are kinds of
// their own because Redis distinguishes them on the wire ($-1 vs *-1) and a
// compatible server must pick the same one.
type Kind byte

// Reply kinds. The values are the RESP type bytes where one exists.
const (
	SimpleString Kind = '+'
	Error        Kind = '-'
	Integer      Kind = ':'
	Bulk         Kind = '$'
	Array        Kind = '*'
	NullBulk     Kind = 'n' // $-1
	NullArray    Kind = 'N' // *-1
	Map          Kind = '%'
	Set          Kind = '~'
	Double       Kind = ','
	Boolean      Kind = '#'
	Null         Kind = '_'
	Verbatim     Kind = '='
	BigNumber    Kind = '('
	Push         Kind = '>'
)

// String names the kind as the reports print it.
func (k Kind) String() string {
	switch k {
	case SimpleString:
		return "simple"
	case Error:
		return "error"
	case Integer:
		return "int"
	case Bulk:
		return "bulk"
	case Array:
		return "array"
	case NullBulk:
		return "null-bulk"
	case NullArray:
		return "null-array"
	case Map:
		return "map"
	case Set:
		return "set"
	case Double:
		return "double"
	case Boolean:
		return "bool"
	case Null:
		return "null"
	case Verbatim:
		return "verbatim"
	case BigNumber:
		return "bignum"
	case Push:
		return "push"
	}
	return fmt.Sprintf("kind(%q)", byte(k))
}

// Value is one parsed reply.
//
//   - SimpleString, Error, Bulk: Str holds the text.
//   - Verbatim: Str holds the whole payload including the "txt:" prefix.
//   - Double, BigNumber: Str holds the text exactly as sent, so that two
//     servers formatting the same number differently are told apart.
//   - Integer: Int. Boolean: Int is 0 or 1.
//   - Array, Set, Push: Elems. Map: Elems alternates key, value.
type Value struct {
	Kind  Kind
	Str   []byte
	Int   int64
	Elems []Value
}

// Constructors, mostly for tests and custom comparisons.

// Simple returns a simple string value.
func Simple(s string) Value { return Value{Kind: SimpleString, Str: []byte(s)} }

// Err returns an error value.
func Err(s string) Value { return Value{Kind: Error, Str: []byte(s)} }

// Int returns an integer value.
func Int(n int64) Value { return Value{Kind: Integer, Int: n} }

// BulkOf returns a bulk string value.
func BulkOf(s string) Value { return Value{Kind: Bulk, Str: []byte(s)} }

// ArrayOf returns an array value.
func ArrayOf(elems ...Value) Value { return Value{Kind: Array, Elems: elems} }

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == Error }

// Text is the textual payload of string-like kinds, and the decimal
// integer for Integer; it is empty for aggregates and nulls.
func (v Value) Text() string {
	if v.Kind == Integer {
		return strconv.FormatInt(v.Int, 10)
	}
	return string(v.Str)
}

// Equal reports whether a and b are the same reply: same kind, same
// payload, same elements in the same order.
func Equal(a, b Value) bool {
	if a.Kind != b.Kind || a.Int != b.Int || !bytes.Equal(a.Str, b.Str) || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !Equal(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	return true
}

// Sorted returns v with the elements of its top-level collection in a
// canonical order (maps: by key), for replies whose order Redis leaves
// unspecified (KEYS, SMEMBERS, CONFIG GET patterns). Other kinds are
// returned unchanged.
func Sorted(v Value) Value {
	switch v.Kind {
	case Array, Set, Push:
		e := append([]Value(nil), v.Elems...)
		sort.SliceStable(e, func(i, j int) bool { return e[i].String() < e[j].String() })
		v.Elems = e
	case Map:
		n := len(v.Elems) / 2
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool {
			return v.Elems[2*idx[i]].String() < v.Elems[2*idx[j]].String()
		})
		e := make([]Value, 0, len(v.Elems))
		for _, i := range idx {
			e = append(e, v.Elems[2*i], v.Elems[2*i+1])
		}
		v.Elems = e
	}
	return v
}

// maxRenderBytes bounds how much of one string a report prints.
const maxRenderBytes = 200

// String renders v on one line with its kind, e.g.
// array[bulk:"a", int:1, null-bulk].
func (v Value) String() string {
	var sb strings.Builder
	v.render(&sb)
	return sb.String()
}

func (v Value) render(sb *strings.Builder) {
	switch v.Kind {
	case Integer:
		fmt.Fprintf(sb, "int:%d", v.Int)
	case Boolean:
		fmt.Fprintf(sb, "bool:%t", v.Int != 0)
	case NullBulk, NullArray, Null:
		sb.WriteString(v.Kind.String())
	case Array, Set, Push:
		open, close := "[", "]"
		if v.Kind == Set {
			open, close = "{", "}"
		}
		sb.WriteString(v.Kind.String())
		sb.WriteString(open)
		for i, e := range v.Elems {
			if i > 0 {
				sb.WriteString(", ")
			}
			e.render(sb)
		}
		sb.WriteString(close)
	case Map:
		sb.WriteString("map{")
		for i := 0; i+1 < len(v.Elems); i += 2 {
			if i > 0 {
				sb.WriteString(", ")
			}
			v.Elems[i].render(sb)
			sb.WriteString(" => ")
			v.Elems[i+1].render(sb)
		}
		sb.WriteString("}")
	case Double, BigNumber:
		sb.WriteString(v.Kind.String())
		sb.WriteByte(':')
		sb.Write(v.Str)
	default:
		sb.WriteString(v.Kind.String())
		sb.WriteByte(':')
		sb.WriteString(quote(v.Str))
	}
}

// quote renders a string Go-quoted, shortened in the middle when long.
func quote(b []byte) string {
	if len(b) <= maxRenderBytes {
		return strconv.Quote(string(b))
	}
	head, tail := b[:maxRenderBytes/2], b[len(b)-maxRenderBytes/4:]
	return fmt.Sprintf("%s...(%d bytes)...%s", strconv.Quote(string(head)), len(b), strconv.Quote(string(tail)))
}

// FormatCommand renders a command the way a reproduction wants it: each
// argument quoted only when it needs to be.
func FormatCommand(args []string) string {
	var sb strings.Builder
	for i, a := range args {
		if i > 0 {
			sb.WriteByte(' ')
		}
		if a != "" && !strings.ContainsAny(a, " \t\r\n\"'\\") && isPrintable(a) && len(a) <= maxRenderBytes {
			sb.WriteString(a)
		} else {
			sb.WriteString(quote([]byte(a)))
		}
	}
	return sb.String()
}

func isPrintable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
