package dirlock

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestAcquireRefusesSecondHolder(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file description, so a second open in
	// the same process conflicts just as another process would.
	_, err = Acquire(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire: got %v, want ErrLocked", err)
	}
	if want := "(pid " + strconv.Itoa(os.Getpid()) + ")"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the holder %s", err, want)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
}

// A process that dies holding the lock leaves nothing that blocks the next
// start.
func TestLockDiesWithProcess(t *testing.T) {
	if os.Getenv("DIRLOCK_HOLD") != "" {
		if _, err := Acquire(os.Getenv("DIRLOCK_HOLD")); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		select {}
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithProcess$")
	cmd.Env = append(os.Environ(), "DIRLOCK_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		cmd.Process.Kill()
		t.Fatalf("child did not take the lock: %q %v", buf, err)
	}
	if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
		cmd.Process.Kill()
		t.Fatalf("Acquire while the child holds the lock: got %v, want ErrLocked", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	l.Release()
}
