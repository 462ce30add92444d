// Package glob matches byte strings against Redis glob patterns, as KEYS
// and SCAN MATCH do on the node and --segment-keys does on the proxy.
package glob

import "unsafe"

// Glob matching with the semantics of Redis's stringmatchlen (KEYS, SCAN
// MATCH), case-sensitive. The pattern is a sequence of tokens, each read
// from the pattern alone:
//
//   - '*' matches any run of bytes, including none;
//   - '?' matches one byte;
//   - '\x' matches the byte x literally; a '\' ending the pattern matches '\';
//   - '[...]' matches one byte of a class: "^" first negates it, "\x" is x,
//     "a-z" is a range whose ends may come in either order, and the class
//     ends at the first unescaped ']' or, if there is none, at the end of
//     the pattern. "[]" is an empty class (it matches nothing), "[^]" any
//     byte, and "a-]" a range whose end is ']'.
//   - any other byte matches itself.
//
// Two quirks of Redis are kept on purpose. An empty string matches only
// the empty pattern (so "**" does not match the key "", while KEYS * and
// SCAN MATCH * special-case a lone '*' before matching). Range ends and the
// byte tested against them compare as C's signed char on the x86 servers
// Redis is built for, so bytes >= 0x80 sort below '\x00' in a range.
//
// Redis matches recursively, trying every split at each '*'. Because every
// token other than '*' consumes exactly one byte, it is enough to remember
// the last '*' and, on a mismatch, let it swallow one more byte: the loop
// below does that in O(len(pattern) * len(str)) time and constant space,
// with no recursion a hostile pattern could deepen. Redis's own guard
// against deep recursion is kept: past 1000 nested '*' nothing matches. glob_test.go checks it
// against a direct recursive model of Redis's algorithm, by fuzzing.

// maxNesting is Redis's guard against abusive patterns: its recursion
// answers "no match" once it would go deeper than this many '*' (runs of
// '*' count once, a '*' ending the pattern not at all).
const maxNesting = 1000

// Match reports whether str matches the glob pattern pat.
func Match(pat, str []byte) bool { return match(pat, str, maxNesting) }

// match is Match with Redis's nesting limit given (tests lower it).
func match(pat, str []byte, nestingLimit int) bool {
	if len(str) == 0 {
		return len(pat) == 0
	}
	p, s := 0, 0
	starP, starS := -1, 0 // token after the last '*', and where it resumes
	// Each '*' is reached once, in pattern order: Redis's recursion depth
	// there is the number of '*' reached so far.
	stars := 0
	for s < len(str) {
		if p < len(pat) {
			if pat[p] == '*' {
				for p < len(pat) && pat[p] == '*' {
					p++
				}
				if p == len(pat) {
					return true
				}
				if stars++; stars > nestingLimit {
					// Redis's depth-limited call fails at every split,
					// and its skipLongerMatches then fails the rest.
					return false
				}
				starP, starS = p, s
				continue
			}
			if next, ok := matchToken(pat, p, str[s]); ok {
				p, s = next, s+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		p, s = starP, starS
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// MatchString is Match for a string key, without copying it.
func MatchString(pat []byte, key string) bool {
	return Match(pat, unsafeBytes(key))
}

// matchToken matches the non-'*' token at pat[p] against byte c and
// returns the index after the token.
func matchToken(pat []byte, p int, c byte) (int, bool) {
	switch pat[p] {
	case '?':
		return p + 1, true
	case '\\':
		if p+1 < len(pat) {
			return p + 2, pat[p+1] == c
		}
		return p + 1, c == '\\'
	case '[':
		return matchClass(pat, p+1, c)
	}
	return p + 1, pat[p] == c
}

// matchClass matches c against the class whose body starts at pat[p] and
// returns the index after the class.
func matchClass(pat []byte, p int, c byte) (int, bool) {
	neg := p < len(pat) && pat[p] == '^'
	if neg {
		p++
	}
	match := false
	for {
		switch {
		case p+1 < len(pat) && pat[p] == '\\':
			p++
			if pat[p] == c {
				match = true
			}
		case p < len(pat) && pat[p] == ']':
			return p + 1, match != neg
		case p >= len(pat):
			return len(pat), match != neg
		case p+2 < len(pat) && pat[p+1] == '-':
			lo, hi := int8(pat[p]), int8(pat[p+2])
			if lo > hi {
				lo, hi = hi, lo
			}
			if x := int8(c); x >= lo && x <= hi {
				match = true
			}
			p += 2
		default:
			if pat[p] == c {
				match = true
			}
		}
		p++
	}
}

// unsafeBytes views s as a byte slice without copying; the caller must
// not change it.
func unsafeBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// Unclosed reports whether pat has a character class that no ']' closes:
// Redis reads it to the end of the pattern, which is seldom what was meant
// (a lone "[" matches no key at all); a literal '[' is written "\[".
func Unclosed(pat []byte) bool {
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '[':
			i++
			for ; i < len(pat) && pat[i] != ']'; i++ {
				if pat[i] == '\\' {
					i++
				}
			}
			if i >= len(pat) {
				return true
			}
		}
	}
	return false
}
