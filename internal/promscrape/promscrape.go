// Package promscrape reads a Prometheus text endpoint for tests: each
// series, name{labels}, to its value.
package promscrape

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Scrape reads http://addr/metrics into series name{labels} -> value,
// failing the test on any error.
func Scrape(t testing.TB, addr string) map[string]float64 {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	return out
}
