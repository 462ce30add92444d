package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPhases: lines on standard input start phases, the end of input
// ends the load, and the table has a row per phase.
func TestPhases(t *testing.T) {
	addr := proxytest.Start(t, 2, proxy.Options{}).Addr
	args := []string{"-addr", addr, "-keys", "300", "-workers", "2", "-rate", "500", "-settle", "100ms", "-first", "warm"}
	in, marks := io.Pipe()
	var out bytes.Buffer
	var errOut lockedBuffer
	go func() {
		defer marks.Close()
		for !strings.Contains(errOut.String(), "load running") {
			time.Sleep(10 * time.Millisecond)
		}
		for _, name := range []string{"", "one", "two"} {
			time.Sleep(400 * time.Millisecond)
			io.WriteString(marks, name+"\n")
		}
		time.Sleep(400 * time.Millisecond)
	}()
	if code := run(context.Background(), args, in, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d; stderr %s; stdout %s", code, errOut.String(), out.String())
	}
	var rows []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Split(line, "|"); len(f) > 2 && !strings.HasPrefix(f[1], "---") {
			rows = append(rows, strings.TrimSpace(f[1]))
			if strings.TrimSpace(f[len(f)-2]) != "0" && f[1] != " phase " {
				t.Errorf("errors in %q", line)
			}
		}
	}
	if want := "phase warm one two whole run"; strings.Join(rows, " ") != want {
		t.Errorf("rows %q, want %q\n%s", rows, want, out.String())
	}
	if !strings.Contains(out.String(), "verify OK") {
		t.Errorf("no verify verdict in\n%s", out.String())
	}
}
