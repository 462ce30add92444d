package glob

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// refMatch is a direct model of Redis's stringmatchlen: recursion over
// every split at '*', the pattern read through at(), which yields 0 past
// the end as C's terminating NUL does. It is exponential on purpose
// (simple to check by eye), so tests keep its inputs short.
func refMatch(pat, str []byte) bool { return refMatchNesting(pat, str, maxNesting) }

// refMatchNesting is refMatch with the nesting limit given.
func refMatchNesting(pat, str []byte, nestingLimit int) bool {
	at := func(i int) byte {
		if i < len(pat) {
			return pat[i]
		}
		return 0
	}
	var rec func(p, s, nesting int) bool
	rec = func(p, s, nesting int) bool {
		if nesting > nestingLimit {
			return false
		}
		for p < len(pat) && s < len(str) {
			switch pat[p] {
			case '*':
				for p < len(pat) && at(p+1) == '*' {
					p++
				}
				if len(pat)-p == 1 {
					return true
				}
				for ; s < len(str); s++ {
					if rec(p+1, s, nesting+1) {
						return true
					}
				}
				return false
			case '?':
				s++
			case '[':
				p++
				not := at(p) == '^'
				if not {
					p++
				}
				match := false
			class:
				for {
					switch {
					case at(p) == '\\' && len(pat)-p >= 2:
						p++
						if pat[p] == str[s] {
							match = true
						}
					case at(p) == ']':
						break class
					case len(pat)-p == 0:
						p--
						break class
					case len(pat)-p >= 3 && pat[p+1] == '-':
						start, end, c := int(int8(pat[p])), int(int8(pat[p+2])), int(int8(str[s]))
						if start > end {
							start, end = end, start
						}
						p += 2
						if c >= start && c <= end {
							match = true
						}
					default:
						if pat[p] == str[s] {
							match = true
						}
					}
					p++
				}
				if not {
					match = !match
				}
				if !match {
					return false
				}
				s++
			case '\\':
				if len(pat)-p >= 2 {
					p++
				}
				if pat[p] != str[s] {
					return false
				}
				s++
			default:
				if pat[p] != str[s] {
					return false
				}
				s++
			}
			p++
			if s == len(str) {
				for at(p) == '*' {
					p++
				}
				break
			}
		}
		return p == len(pat) && s == len(str)
	}
	return rec(0, 0, 0)
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, str string
		want     bool
	}{
		{"", "", true},
		{"*", "", false}, // Redis: the empty string matches only ""
		{"**", "", false},
		{"", "a", false},
		{"*", "abc", true},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"*c", "abc", true},
		{"*b", "abc", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hbllo", true}, // reversed range
		{"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`\`, `\`, true},
		{`a\`, `a\`, true},
		{"[]", "a", false},            // empty class
		{"[]]", "]", false},           // "[]" then literal ']'
		{"[]]", "]]", false},          // empty class never matches
		{"[^]", "x", true},            // negated empty class
		{"[abc", "c", true},           // unterminated class
		{"[abc", "cd", false},         //
		{"[", "a", false},             //
		{"[^", "a", true},             //
		{"[a-]", "]", true},           // range a..']'
		{"[a-]", "^", true},           // '^' lies between ']' and 'a'
		{"[a-]", "b", false},          //
		{`[\]]`, "]", true},           // escaped ']' in a class
		{`[\`, `\`, true},             // lone '\' at the end of a class
		{"[a-\xff]", "\xff", true},    // signed: 0xff is -1 <= 'a'
		{"[a-\xff]", "\x80", false},   // -128 < -1
		{"[a-\xff]", "0", true},       // '0' in -1..'a'
		{"[\x80-\xff]", "\x90", true}, //
		{"*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 40), false},
		{"user:*:name", "user:42:name", true},
		{"user:*:name", "user:42:mail", false},
	}
	for _, tt := range tests {
		if got := Match([]byte(tt.pat), []byte(tt.str)); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pat, tt.str, got, tt.want)
		}
		if len(tt.str) < 20 {
			if ref := refMatch([]byte(tt.pat), []byte(tt.str)); ref != tt.want {
				t.Errorf("refMatch(%q, %q) = %v, want %v (model or table is wrong)", tt.pat, tt.str, ref, tt.want)
			}
		}
	}
}

// TestMatchRandom compares Match with the model on many short random
// inputs over an alphabet dense in special bytes.
func TestMatchRandom(t *testing.T) {
	const alphabet = "ab*?[]^-\\\x00\xff"
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(n int) []byte {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for i := 0; i < 200000; i++ {
		pat, str := gen(10), gen(8)
		if got, want := Match(pat, str), refMatch(pat, str); got != want {
			t.Fatalf("Match(%q, %q) = %v, model says %v", pat, str, got, want)
		}
		// The nesting limit, lowered so that short inputs reach it.
		limit := r.IntN(3)
		if got, want := match(pat, str, limit), refMatchNesting(pat, str, limit); got != want {
			t.Fatalf("match(%q, %q, nesting %d) = %v, model says %v", pat, str, limit, got, want)
		}
	}
}

// TestMatchNestingLimit: Redis 7.0.15 answers "no match" past 1000
// nested '*' (its "pattern matching very long nested loops" regression
// test uses 50000): a key of 1001 bytes matches 1000 "*?" pairs but not
// 1001. Every case was checked against redis-server 7.0.15 with KEYS and
// SCAN MATCH.
func TestMatchNestingLimit(t *testing.T) {
	key := []byte(strings.Repeat("a", 1001))
	for _, tc := range []struct {
		pat  string
		want bool
	}{
		{strings.Repeat("*?", 1000), true},
		{strings.Repeat("*?", 1000) + "*", true},
		{strings.Repeat("*?", 1001), false}, // the 1001st '*' is too deep
		{strings.Repeat("*?", 50000), false},
		{strings.Repeat("**?", 1000) + "?", true}, // a run of '*' counts once
		{strings.Repeat("?", 1001) + strings.Repeat("*", 5000), true},
		{strings.Repeat("*a", 1000), true},
		{strings.Repeat("*a", 1001), false},
		{strings.Repeat("*a", 1001) + "*", false},
	} {
		if got := Match([]byte(tc.pat), key); got != tc.want {
			t.Errorf("Match(%.12q... (%d bytes), 1001 'a') = %v, want %v", tc.pat, len(tc.pat), got, tc.want)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add([]byte("h[a-z]l*o"), []byte("hello"))
	f.Add([]byte(`[\]a-]*\`), []byte(`]\`))
	f.Fuzz(func(t *testing.T, pat, str []byte) {
		if len(pat) > 24 || len(str) > 24 {
			return // the model is exponential
		}
		if got, want := Match(pat, str), refMatch(pat, str); got != want {
			t.Fatalf("Match(%q, %q) = %v, model says %v", pat, str, got, want)
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	pat, key := []byte("user:*:profile:[a-f]*"), []byte("user:123456:profile:deadbeef")
	b.ReportAllocs()
	for b.Loop() {
		Match(pat, key)
	}
}

func TestUnclosed(t *testing.T) {
	for _, tc := range []struct {
		pat  string
		want bool
	}{
		{"dau:*", false}, {"[", true}, {"dau:[0-9", true}, {"dau:[0-9]*", false},
		{`\[`, false}, {`[\]`, true}, {`[\]]`, false}, {"[]", false}, {"a[^]b", false}, {`x\`, false},
	} {
		if got := Unclosed([]byte(tc.pat)); got != tc.want {
			t.Errorf("Unclosed(%q) = %v, want %v", tc.pat, got, tc.want)
		}
	}
}
