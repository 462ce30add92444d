//go:build race

package proxy_test

// raceEnabled says the tests run under the race detector.
const raceEnabled = true
