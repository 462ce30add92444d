package slots

import "testing"

func TestUnservedSpansSlots(t *testing.T) {
	for _, tc := range []struct {
		args  string
		cross bool
	}{
		{"SUNIONSTORE d a b", true},
		{"sunionstore {t}d {t}a {t}b", false},
		{"SMOVE a b m", true},
		{"SMOVE {t}a {t}b m", false},
		{"SINTER a", false},           // one key
		{"SUNIONSTORE d", false},      // arity: Redis answers that first
		{"ZUNIONSTORE d 2 a b", true}, // key count
		{"ZUNIONSTORE {t}d 2 {t}a b", true},
		{"ZUNIONSTORE {t}d 2 {t}a {t}b", false},
		{"ZUNIONSTORE d x a b", false}, // no keys found: the command's own error
		{"EVAL s 2 a b", true},
		{"EVAL s 0 a b", false},
		{"SORT a STORE b", false}, // served: the servers' own check
		{"HSET a f v", false},
		{"HMGET a f g", false},
		{"GET a", false},    // served
		{"MGET a b", false}, // served: the servers' own check
		{"NOSUCH a b", false},
		{"GEOSEARCHSTORE d a FROMMEMBER m BYRADIUS 1 km", true},
		{"BZPOPMIN a b 0", true},
		{"MIGRATE h 1 \"\" 0 5 KEYS a b", true},
	} {
		args := splitArgs(tc.args)
		// As cmdlookup.Unserved refuses a call: an unserved command
		// whose arguments fit its arity and whose keys span slots.
		c := LookupUnserved(args[0])
		var keys []int
		cross := false
		if c != nil && c.CheckArity(len(args)) {
			keys, cross = c.SpansSlots(args, nil)
		}
		if cross != tc.cross {
			t.Errorf("%s: cross %v, want %v (keys %v)", tc.args, cross, tc.cross, keys)
		}
		if cross && (c == nil || !EqualFold(c.Name, args[0]) || len(keys) < 2) {
			t.Errorf("%s: command %v, keys %v", tc.args, c, keys)
		}
	}
}

func TestLookupUnserved(t *testing.T) {
	for name, want := range map[string]bool{
		"hset": true, "HSET": true, "Sunionstore": true, "eval": true,
		"get": false, "xadd": false, "spublish": false, "publish": false, "": false,
		"averyveryveryveryveryverylongcommandname": false,
	} {
		if got := LookupUnserved([]byte(name)) != nil; got != want {
			t.Errorf("LookupUnserved(%q) = %v, want %v", name, got, want)
		}
	}
	for _, c := range unservedTable {
		if Lookup([]byte(c.Name)) != nil {
			t.Errorf("%s is both served and unserved", c.Name)
		}
		if !c.HasKeys() {
			t.Errorf("unserved %s has no keys", c.Name)
		}
	}
}
