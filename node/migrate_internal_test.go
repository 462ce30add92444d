package node

import (
	"slices"
	"testing"
)

func TestParseRanges(t *testing.T) {
	tests := []struct {
		in   string
		want []uint16
		bad  bool
	}{
		{in: "0", want: []uint16{0}},
		{in: "16383", want: []uint16{16383}},
		{in: "5-7,1", want: []uint16{1, 5, 6, 7}},
		{in: "3,3,2-3", want: []uint16{2, 3}},
		{in: "16384", bad: true},
		{in: "-1", bad: true},
		{in: "7-5", bad: true},
		{in: "1-", bad: true},
		{in: "", bad: true},
		{in: "1,,2", bad: true},
		{in: "a", bad: true},
		{in: "1-16384", bad: true},
	}
	for _, tt := range tests {
		got, err := parseRanges(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseRanges(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("parseRanges(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if back, err := parseRanges(formatRanges(got)); err != nil || !slices.Equal(back, got) {
			t.Errorf("formatRanges(%v) = %q does not parse back: %v %v", got, formatRanges(got), back, err)
		}
	}
}

// FuzzParseRanges: any input either fails or yields ascending distinct
// slots that formatRanges prints back to the same set.
func FuzzParseRanges(f *testing.F) {
	for _, s := range []string{"0", "1-3,7", "16383", "0-16383", "5-4", "x", "1,,", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseRanges(s)
		if err != nil {
			return
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] >= got[i] {
				t.Fatalf("parseRanges(%q) not ascending: %v", s, got)
			}
		}
		back, err := parseRanges(formatRanges(got))
		if err != nil || !slices.Equal(back, got) {
			t.Fatalf("round trip of %q: %v %v", s, back, err)
		}
	})
}
