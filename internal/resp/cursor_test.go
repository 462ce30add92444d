package resp

import "testing"

func TestParseCursor(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"", 0, true}, {"-0", 0, true}, {"+3", 3, true}, {"-1", 1<<64 - 1, true},
		{"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{"-18446744073709551615", 1, true}, {" 1", 0, false}, {"1 ", 0, false}, {"+", 0, false},
		{"x", 0, false}, {"0x1", 0, false}, {"1\x00junk", 1, true},
		{"\x00", 0, true}, {"\x001", 0, true}, {"+\x00", 0, false}, {"-", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseCursor([]byte(tt.in))
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseCursor(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
