package redisinfo

import (
	"strconv"
	"testing"
)

// TestBuildID: redis_build_id is a hex number, as Redis prints its build
// id, the same on every call of one build and apart for another release.
func TestBuildID(t *testing.T) {
	id := buildID("7.0.15")
	if _, err := strconv.ParseUint(id, 16, 64); err != nil || id == "0" {
		t.Fatalf("buildID = %q, want a nonzero hex number", id)
	}
	if again := buildID("7.0.15"); again != id {
		t.Errorf("buildID changed between calls: %q, %q", id, again)
	}
	if other := buildID("7.0.14"); other == id {
		t.Errorf("buildID is %q for two releases", id)
	}
	var got string
	ServerFields(Server{Version: "7.0.15"}, func(k, v string) {
		if k == "redis_build_id" {
			got = v
		}
	})
	if got != id {
		t.Errorf("INFO redis_build_id = %q, want %q", got, id)
	}
}
