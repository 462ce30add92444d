//go:build !race

// The binaries in the containers are never built with -race, so the race
// pass of CI (go test -race ./...) would only repeat this test: it runs in
// the plain pass.

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/slots"
)

// dockerTimeout bounds one docker or compose command.
const dockerTimeout = 2 * time.Minute

// compose runs docker compose (or docker-compose) on the repository's
// docker-compose.yml under one project name.
type compose struct {
	cmd     []string // "docker compose" or "docker-compose"
	project string
	env     []string
}

func (c *compose) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	full := append(append(append([]string{}, c.cmd[1:]...), "-p", c.project, "-f", "docker-compose.yml"), args...)
	return runDocker(t, ".." /* the module root */, c.env, c.cmd[0], full...)
}

// runDocker runs one command and returns its trimmed combined output.
func runDocker(t *testing.T, dir string, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dockerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(out)), fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// needDocker skips the test when there is no Docker engine to talk to, and
// returns the compose command to use.
func needDocker(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker not found: the compose test needs a Docker engine")
	}
	if out, err := runDocker(t, ".", nil, "docker", "info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Skipf("docker info failed, no Docker engine to run the compose file on: %v", err)
	} else {
		t.Logf("Docker engine %s", out)
	}
	if _, err := runDocker(t, ".", nil, "docker", "compose", "version"); err == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	t.Fatal("docker works but neither `docker compose` nor docker-compose is installed")
	return nil
}

// TestDockerCompose builds the image (scripts/image.sh), brings the
// repository's docker-compose.yml up under a project of its own (three
// nodes and a proxy in containers, the proxy published on the host) and
// checks the endpoint, then cuts one node off the network with `docker
// network disconnect` (its slots answer CLUSTERDOWN at the proxy, the
// others keep working) and reconnects it (its slots are served again,
// with their data), and restarts another container (it comes back with the
// identity and slots kept in its volume). Gossip runs with the production
// (LAN) timings of the compose file; the test takes about 30 s.
func TestDockerCompose(t *testing.T) {
	cc := &compose{cmd: needDocker(t), project: "sge2e" + randomHex(4)}
	image := "shardgate-e2e:" + cc.project
	if out, err := runDocker(t, "..", nil, "scripts/image.sh", image); err != nil {
		t.Fatalf("scripts/image.sh: %v", err)
	} else if !strings.HasSuffix(out, image) {
		t.Fatalf("scripts/image.sh printed %q, want the tag %s last", out, image)
	}
	t.Cleanup(func() { runDocker(t, ".", nil, "docker", "rmi", "-f", image) })

	// A /24 of its own (random, so parallel runs and other networks rarely
	// collide; retried when they do) and a free port on the host.
	var subnet string
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := cc.run(t, "logs", "--no-color", "--tail", "60")
			t.Logf("compose logs:\n%s", out)
		}
		if _, err := cc.run(t, "down", "-v", "--timeout", "2"); err != nil {
			t.Errorf("compose down: %v", err)
		}
	})
	for attempt := 0; ; attempt++ {
		octet, _ := rand.Int(rand.Reader, big.NewInt(256))
		subnet = fmt.Sprintf("172.29.%d", octet)
		cc.env = []string{"SHARDGATE_IMAGE=" + image, "SHARDGATE_SUBNET=" + subnet, "SHARDGATE_PORT=127.0.0.1:"}
		out, err := cc.run(t, "up", "-d")
		if err == nil {
			break
		}
		if attempt < 4 && strings.Contains(out, "overlap") {
			cc.run(t, "down", "-v", "--timeout", "2")
			continue
		}
		t.Fatalf("compose up: %v", err)
	}
	endpoint, err := cc.run(t, "port", "proxy", "7379")
	if err != nil {
		t.Fatal(err)
	}
	network := cc.project + "_shardgate"
	t.Logf("project %s: proxy published at %s, network %s (%s.0/24)", cc.project, endpoint, network, subnet)

	// cluster status from a container on the network (an observer joining
	// the gossip), through the image.
	status := func() (*statusJSON, error) {
		out, err := runDocker(t, ".", nil, "docker", "run", "--rm", "--network", network, image,
			"cluster", "status", "--join", "node1:7946,node3:7946", "--json", "--timeout", "10s")
		var st statusJSON
		if jerr := json.Unmarshal([]byte(out), &st); jerr != nil {
			return nil, fmt.Errorf("cluster status: %v %v\n%s", err, jerr, out)
		}
		return &st, nil
	}
	waitStatus := func(what string, limit time.Duration, ok func(*statusJSON) bool) *statusJSON {
		t.Helper()
		deadline := time.Now().Add(limit)
		for {
			st, err := status()
			if err == nil && ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %v waiting for %s: %+v %v", limit, what, st, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	st := waitStatus("a consistent cluster of three nodes and a proxy", time.Minute, func(st *statusJSON) bool {
		return st.Consistent && countMembers(st, "node", "alive") == 3 && countMembers(st, "proxy", "alive") == 1
	})
	addrOf := func(service string) string {
		ip := map[string]string{"node1": ".11", "node2": ".12", "node3": ".13"}[service]
		return subnet + ip + ":7000"
	}
	k1, k2, k3 := keyOnNode(st, addrOf("node1")), keyOnNode(st, addrOf("node2")), keyOnNode(st, addrOf("node3"))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pc := redis.NewClient(&redis.Options{Addr: endpoint, MaxRetries: -1})
	defer pc.Close()
	for _, k := range []string{k1, k2, k3} {
		if err := pc.Set(ctx, k, "v:"+k, 0).Err(); err != nil {
			t.Fatalf("SET %s (slot %d) through the published proxy: %v", k, slots.SlotString(k), err)
		}
		if v, err := pc.Get(ctx, k).Result(); err != nil || v != "v:"+k {
			t.Fatalf("GET %s through the published proxy: %q %v", k, v, err)
		}
	}

	// Partition: node2 off the network.
	node2, err := cc.run(t, "ps", "-q", "node2")
	if err != nil || node2 == "" {
		t.Fatalf("node2's container: %q %v", node2, err)
	}
	if _, err := runDocker(t, ".", nil, "docker", "network", "disconnect", network, node2); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	waitUntil(t, "CLUSTERDOWN for node2's slots after the partition", func() bool {
		err := pc.Get(ctx, k2).Err()
		return err != nil && err.Error() == clusterDown
	})
	t.Logf("node2's slots CLUSTERDOWN %v after the partition", time.Since(cut).Round(time.Millisecond))
	for _, k := range []string{k1, k3} {
		if v, err := pc.Get(ctx, k).Result(); err != nil || v != "v:"+k {
			t.Errorf("GET %s during the partition: %q %v", k, v, err)
		}
	}
	waitStatus("node2 dead in the status", 10*time.Second, func(st *statusJSON) bool {
		return !st.Consistent && countMembers(st, "node", "dead") == 1 && len(st.Problems) == 1 && st.Problems[0].Kind == "dead-owner"
	})

	// Heal: node2 back at its address; it rejoins by itself and serves
	// its slots with the data it kept (no higher epoch took them).
	if _, err := runDocker(t, ".", nil, "docker", "network", "connect", "--ip", subnet+".12", "--alias", "node2", network, node2); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	deadline := healed.Add(45 * time.Second)
	for {
		v, err := pc.Get(ctx, k2).Result()
		if err == nil && v == "v:"+k2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node2's slots not served 45 s after the network healed: GET %s = %q %v", k2, v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("node2's slots served %v after the heal", time.Since(healed).Round(time.Millisecond))
	waitStatus("a consistent cluster after the heal", 30*time.Second, func(st *statusJSON) bool {
		return st.Consistent && countMembers(st, "node", "alive") == 3 && countMembers(st, "proxy", "alive") == 1
	})
	for _, k := range []string{k1, k3} {
		if v, err := pc.Get(ctx, k).Result(); err != nil || v != "v:"+k {
			t.Errorf("GET %s after the heal: %q %v", k, v, err)
		}
	}

	// A restarted container resumes its identity and slots from its
	// volume (--dir /data, written by the image's unprivileged user).
	var id3 string
	for _, m := range st.Members {
		if m.Addr == addrOf("node3") {
			id3 = m.ID
		}
	}
	if _, err := cc.run(t, "restart", "--timeout", "2", "node3"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "node3's slots after its restart", func() bool { return pc.Set(ctx, k3, "restarted", 0).Err() == nil })
	st = waitStatus("a consistent cluster after node3's restart", 30*time.Second, func(st *statusJSON) bool {
		return st.Consistent && countMembers(st, "node", "alive") == 3
	})
	for _, m := range st.Members {
		if m.Addr == addrOf("node3") && m.ID != id3 {
			t.Errorf("node3 came back as %s, was %s: its --dir volume did not keep its identity", m.ID, id3)
		}
	}
}
