package proxy

// LogBuffer collects a server's log lines (backend_internal_test.go).
type LogBuffer = logBuffer
