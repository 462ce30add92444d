package difftest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RedisBinary is the oracle's executable, looked up on PATH.
const RedisBinary = "redis-server"

// startAttempts is how often StartRedis retries with new ports: a port
// found free can be taken by another process before redis binds it.
const startAttempts = 5

// readyTimeout bounds how long a fresh redis-server may take to accept
// connections and report cluster_state:ok.
const readyTimeout = 15 * time.Second

// Redis is a redis-server process in cluster mode that owns all 16384
// slots: the oracle a shardgate node is compared with.
type Redis struct {
	Addr    string
	Version string // redis_version from INFO server

	dir   string
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has exited
	logMu sync.Mutex
	log   *bytes.Buffer // the server's stdout and stderr, for diagnostics

	stopOnce sync.Once
}

// StartRedis starts a cluster-mode redis-server on free ports, assigns it
// every slot and waits until the cluster state is ok.
func StartRedis() (*Redis, error) { return startRedis(true) }

// StartPlainRedis starts a redis-server without cluster mode on a free
// port: the oracle for what one Redis answers to a command whose keys are
// in several slots (the proxy's --cross-slot split mode).
func StartPlainRedis() (*Redis, error) { return startRedis(false) }

func startRedis(cluster bool) (*Redis, error) {
	if _, err := exec.LookPath(RedisBinary); err != nil {
		return nil, err
	}
	var errs []error
	for range startAttempts {
		r, err := startRedisOnce(cluster)
		if err == nil {
			return r, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("difftest: could not start %s: %w", RedisBinary, errors.Join(errs...))
}

func startRedisOnce(cluster bool) (*Redis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	busPort, err := freePort()
	if err != nil {
		return nil, err
	}
	removeStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Redis{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:  dir,
		done: make(chan struct{}),
		log:  &bytes.Buffer{},
	}
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--loglevel", "warning",
		"--logfile", "",
	}
	if cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(busPort),
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	}
	if err := r.spawn(args); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if !cluster {
		if err := r.waitPing(time.Now().Add(readyTimeout)); err != nil {
			r.Stop()
			return nil, fmt.Errorf("%w; server output: %s", err, r.output())
		}
		return r, nil
	}
	if err := r.waitReady(); err != nil {
		r.Stop()
		return nil, fmt.Errorf("%w; server output: %s", err, r.output())
	}
	return r, nil
}

// spawn starts the process from a goroutine locked to its OS thread, which
// then waits for the process. Pdeathsig is tied to the thread that forked
// the child, so keeping that thread alive (and busy waiting) for the life
// of the process makes the child die with the test binary and never earlier.
func (r *Redis) spawn(args []string) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread exits with this goroutine, after
		// the child is gone.
		cmd := exec.Command(RedisBinary, args...)
		cmd.Stdout = syncWriter{mu: &r.logMu, w: r.log}
		cmd.Stderr = cmd.Stdout
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			close(r.done)
			return
		}
		r.cmd = cmd
		started <- nil
		cmd.Wait()
		close(r.done)
	}()
	return <-started
}

// waitReady waits for the server to answer, assigns all slots and waits
// for cluster_state:ok.
func (r *Redis) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	var c *Conn
	for {
		select {
		case <-r.done:
			return errors.New("difftest: redis-server exited during startup")
		default:
		}
		var err error
		if c, err = Dial(r.Addr); err == nil {
			if v, err := c.DoStrings("PING"); err == nil && v.Kind == SimpleString {
				break
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("difftest: redis-server at %s did not answer PING: %v", r.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	defer c.Close()
	if v, err := c.DoStrings("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil || v.Kind != SimpleString {
		return fmt.Errorf("difftest: CLUSTER ADDSLOTSRANGE: %v %v", v, err)
	}
	for {
		v, err := c.DoStrings("CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if strings.Contains(string(v.Str), "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("difftest: cluster never became ok: %s", v.Str)
		}
		time.Sleep(20 * time.Millisecond)
	}
	v, err := c.DoStrings("INFO", "server")
	if err != nil {
		return err
	}
	r.Version = infoField(string(v.Str), "redis_version")
	return nil
}

// Stop kills the server, waits for it and removes its directory.
func (r *Redis) Stop() {
	r.stopOnce.Do(func() {
		if r.cmd != nil && r.cmd.Process != nil {
			r.cmd.Process.Kill()
		}
		select {
		case <-r.done:
		case <-time.After(readyTimeout):
		}
		os.RemoveAll(r.dir)
	})
}

func (r *Redis) output() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.log.String()
}

// Each server's directory records the pid of the test binary that owns it,
// so that directories left by a binary that died without Main's cleanup
// are removed by the next run instead of piling up.
const (
	dirPrefix = "difftest-redis-"
	ownerFile = "owner.pid"
)

// removeStaleDirs deletes server directories whose owner process is gone.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours to judge (or being created right now)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || processAlive(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}

// infoField extracts one "name:value" line from INFO text.
func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// free when this returns; StartRedis retries if it is taken before use.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// syncWriter guards a process's output buffer, written by exec's copying
// goroutine and read by diagnostics.
type syncWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w.Len() > 1<<20 { // keep diagnostics bounded
		return len(p), nil
	}
	return s.w.Write(p)
}
