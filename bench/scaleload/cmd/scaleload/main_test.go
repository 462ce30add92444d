package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/proxy/proxytest"
)

func TestCommand(t *testing.T) {
	addr := proxytest.Start(t, 2, proxy.Options{}).Addr
	args := []string{"-addr", addr, "-keys", "300", "-workers", "2", "-duration", "1s", "-window", "300ms", "-settle", "100ms"}

	t.Run("json", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), append(args, "-json", "-fail-on-error"), &out, &errOut); code != exitOK {
			t.Fatalf("exit %d; stderr %s; stdout %s", code, errOut.String(), out.String())
		}
		types := map[string]int{}
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			typ, _ := line["type"].(string)
			types[typ]++
			switch typ {
			case "window":
				if _, ok := line["p99_us"].(float64); !ok {
					t.Errorf("window without p99_us: %s", sc.Text())
				}
			case "run":
				if line["ops"].(float64) == 0 || line["errors"].(float64) != 0 {
					t.Errorf("run line %s", sc.Text())
				}
			case "verify":
				if line["ok"] != true || line["failed"].(float64) != 0 {
					t.Errorf("verify line %s", sc.Text())
				}
			}
		}
		if types["populate"] != 1 || types["window"] < 3 || types["run"] != 1 || types["verify"] != 1 {
			t.Errorf("lines by type %v", types)
		}
	})

	t.Run("verify fails", func(t *testing.T) {
		// A concurrent writer changes the dataset behind the model's
		// back: the table output reports it and the exit status is 1.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer rdb.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				var cursor uint64
				for {
					keys, next, err := rdb.Scan(ctx, cursor, "{sl.*}:s*:n", 100).Result()
					if err != nil {
						return
					}
					for _, k := range keys {
						rdb.IncrBy(ctx, k, 1000)
					}
					if cursor = next; cursor == 0 {
						break
					}
				}
			}
		}()
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		cancel()
		<-done
		if code != exitVerify {
			t.Fatalf("exit %d, want %d; stderr %s; stdout %s", code, exitVerify, errOut.String(), out.String())
		}
		if !strings.Contains(out.String(), "verify FAILED") || !strings.Contains(out.String(), "t(s)") {
			t.Errorf("output:\n%s", out.String())
		}
	})

	t.Run("bad flag", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"-keys", "x"}, &out, &errOut); code != exitSetup {
			t.Errorf("exit %d, want %d", code, exitSetup)
		}
	})
}
