package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// killable is one process of a crash or fault test across its starts:
// started by startKillable, killed with SIGKILL, started again on the
// same addresses. crashNode and migNode embed it.
type killable struct {
	bin    string
	proc   *exec.Cmd
	exited chan struct{} // closed once proc has been waited for
	logs   []*lineLog    // one per start, the current last
}

// launch starts bin with args and waits up to wait until every one of res
// has matched a line of the new start's log, returning the last submatch
// of each. It fails when the process exits first or the wait runs out;
// state names what was awaited ("listening") in that error.
func (k *killable) launch(t *testing.T, args []string, wait time.Duration, state string, res ...*regexp.Regexp) ([]string, error) {
	cmd, exited, log, err := startKillable(t, k.bin, args)
	if err != nil {
		return nil, err
	}
	k.proc, k.exited = cmd, exited
	k.logs = append(k.logs, log)
	deadline := time.Now().Add(wait)
	for {
		found := make([]string, 0, len(res))
		for _, re := range res {
			m, ok := log.find(re)
			if !ok {
				break
			}
			found = append(found, m)
		}
		if len(found) == len(res) {
			return found, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("exited at start: %v\n%s", cmd.ProcessState, log)
		case <-log.added:
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not %s after %v:\n%s", state, wait, log)
		}
	}
}

// retryStart runs start until it succeeds or fails for another reason
// than a port that another socket took while the process was down, which
// it retries for a while.
func retryStart(start func() error) error {
	var err error
	for range 20 {
		if err = start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

// running reports whether the current process has not exited.
func (k *killable) running() bool {
	select {
	case <-k.exited:
		return false
	default:
		return true
	}
}

// lastLog is the current start's log.
func (k *killable) lastLog() *lineLog { return k.logs[len(k.logs)-1] }

// logsText is every start's log, oldest first, each headed by label.
func (k *killable) logsText(label string) string {
	var b strings.Builder
	for i, l := range k.logs {
		fmt.Fprintf(&b, "--- node %s, start %d:\n%s\n", label, i+1, l)
	}
	return b.String()
}

// startSelfWorker runs this test binary, limited to the test named run, as
// a separate process with env ("NAME=value") added to its environment, and
// returns it and its standard output. The workload tests use it for a
// worker that dies by SIGKILL mid-batch; cleanup kills it unless it has
// been waited for.
func startSelfWorker(t *testing.T, run, env string) (*exec.Cmd, io.Reader) {
	t.Helper()
	proc := exec.Command(os.Args[0], "-test.run=^"+run+"$")
	proc.Env = append(os.Environ(), env)
	out, err := proc.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	proc.Stderr = os.Stderr
	startOrFail(t, proc)
	return proc, out
}
