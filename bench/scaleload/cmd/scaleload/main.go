// Command scaleload writes a dataset through one endpoint (the shardgate
// proxy), runs mixed reads and writes against it for a while (during a
// scale-out, say), and then verifies that every acknowledged write is
// intact (package bench/scaleload says what is written and checked).
//
// While it runs it prints one line per window: throughput, client-visible
// errors and latency percentiles; then the run's figures by command, the
// first errors, and the verification report. With -json every line is a
// JSON object with a "type" of "populate", "window", "run" or "verify".
// A window line has t (seconds from the start of the load to the window's
// end), seconds, ops, ops_per_sec, errors, mismatches and p50_us, p99_us,
// p999_us, max_us; the run line has the same for the whole load plus
// commands (the same figures by command) and error_samples; the verify
// line is the scaleload.Report with ok.
//
// Exit status: 0 when verification passed; 1 when it failed (a key
// differs from the model, or a reply contradicted it during the run); 2
// for bad flags or a failed populate; 3 with -fail-on-error when the
// clients saw any error (issue 8 wants none during a normal scale-out).
//
// Usage:
//
//	go run ./bench/scaleload/cmd/scaleload -addr 127.0.0.1:7379 -duration 60s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/bench/scaleload"
)

// Exit statuses.
const (
	exitOK          = 0
	exitVerify      = 1
	exitSetup       = 2
	exitClientError = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; the first signal (ctx) ends the load phase, a
// second one the verification.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scaleload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg scaleload.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7379", "the endpoint (shardgate proxy) host:port")
	fs.StringVar(&cfg.Username, "user", "", "ACL user name")
	fs.StringVar(&cfg.Password, "password", "", "password")
	fs.IntVar(&cfg.Protocol, "protocol", 0, "RESP version, 2 or 3 (0: go-redis's default)")
	fs.IntVar(&cfg.Keys, "keys", scaleload.DefaultKeys, "keys to write")
	fs.IntVar(&cfg.Workers, "workers", scaleload.DefaultWorkers, "concurrent clients")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed (dataset and operations)")
	fs.StringVar(&cfg.Prefix, "prefix", scaleload.DefaultPrefix, "hash tag prefix; the dataset under it is rewritten")
	fs.DurationVar(&cfg.TTL, "ttl", scaleload.DefaultTTL, "expiry of the keys written with one")
	fs.DurationVar(&cfg.TTLTolerance, "ttl-tolerance", scaleload.DefaultTTLTolerance, "how far an expiry read back may be off")
	fs.Int64Var(&cfg.BitmapMaxOffset, "bitmap-max-offset", scaleload.DefaultBitmapMaxOffset, "SETBIT offsets below this")
	fs.Float64Var(&cfg.ReadRatio, "read-ratio", scaleload.DefaultReadRatio, "share of reads (negative: writes only)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "operations per second over all workers (0: unlimited)")
	fs.DurationVar(&cfg.Timeout, "timeout", scaleload.DefaultTimeout, "per-command timeout")
	fs.DurationVar(&cfg.Settle, "settle", scaleload.DefaultSettle, "wait before re-reading a group after an ambiguous write")
	fs.DurationVar(&cfg.Window, "window", scaleload.DefaultWindow, "stats window")
	fs.IntVar(&cfg.MaxSamples, "samples", scaleload.DefaultMaxSamples, "error texts and verify failures to print")
	duration := fs.Duration("duration", time.Minute, "load phase length (0: until SIGINT/SIGTERM)")
	asJSON := fs.Bool("json", false, "print JSON lines")
	failOnError := fs.Bool("fail-on-error", false, "exit 3 if the clients saw any error")
	if err := fs.Parse(args); err != nil {
		return exitSetup
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scaleload: unexpected arguments %q\n", fs.Args())
		return exitSetup
	}
	out := &printer{w: stdout, json: *asJSON}

	started := time.Now()
	m, err := scaleload.Populate(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "scaleload: populate: %v\n", err)
		return exitSetup
	}
	out.populate(m, time.Since(started))

	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if *duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, *duration)
	}
	defer cancel()
	var runStart time.Time
	cfg.OnWindow = func(w scaleload.Window) { out.window(w, runStart) }
	runStart = time.Now()
	st, err := scaleload.Run(runCtx, cfg, m)
	if err != nil {
		fmt.Fprintf(stderr, "scaleload: run: %v\n", err)
		return exitSetup
	}
	out.run(st)

	// A signal ended the load (or not); a second one ends verification.
	verifyCtx, stopVerify := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopVerify()
	rep, err := scaleload.Verify(verifyCtx, cfg, m)
	out.verify(rep)
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "scaleload: verify: %v\n", err)
		return exitSetup
	case err != nil || !rep.OK():
		return exitVerify
	case *failOnError && st.Total().Errors > 0:
		return exitClientError
	}
	return exitOK
}

// printer writes the output as a table or as JSON lines.
type printer struct {
	w      io.Writer
	json   bool
	headed bool
}

func (p *printer) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of numbers and strings are printed
	}
	fmt.Fprintf(p.w, "%s\n", b)
}

func us(d time.Duration) float64 { return float64(d.Microseconds()) }

func (p *printer) populate(m *scaleload.Model, d time.Duration) {
	if p.json {
		p.emit(map[string]any{"type": "populate", "keys": m.Keys(), "groups": m.Groups(), "seconds": d.Seconds()})
		return
	}
	fmt.Fprintf(p.w, "populated %d keys (%d groups) in %v\n", m.Keys(), m.Groups(), d.Round(time.Millisecond))
}

func (p *printer) window(w scaleload.Window, runStart time.Time) {
	t := w.Start.Add(w.Duration).Sub(runStart).Seconds()
	if p.json {
		p.emit(map[string]any{"type": "window", "t": t, "seconds": w.Duration.Seconds(), "ops": w.Ops,
			"ops_per_sec": w.Throughput, "errors": w.Errors, "mismatches": w.Mismatches,
			"p50_us": us(w.P50), "p99_us": us(w.P99), "p999_us": us(w.P999), "max_us": us(w.Max)})
		return
	}
	if !p.headed {
		fmt.Fprintf(p.w, "%8s %10s %7s %7s %9s %9s %9s %9s\n", "t(s)", "ops/s", "errors", "mism", "p50(µs)", "p99(µs)", "p999(µs)", "max(µs)")
		p.headed = true
	}
	fmt.Fprintf(p.w, "%8.1f %10.0f %7d %7d %9.0f %9.0f %9.0f %9.0f\n", t, w.Throughput, w.Errors, w.Mismatches,
		us(w.P50), us(w.P99), us(w.P999), us(w.Max))
}

func (p *printer) run(st *scaleload.Stats) {
	cmds := st.Commands()
	names := slices.Sorted(maps.Keys(cmds))
	tot := st.Total()
	if p.json {
		byCmd := make(map[string]any)
		for _, n := range names {
			c := cmds[n]
			byCmd[n] = map[string]any{"ops": c.Ops, "errors": c.Errors, "mismatches": c.Mismatches,
				"p50_us": us(c.P50), "p99_us": us(c.P99), "p999_us": us(c.P999), "max_us": us(c.Max)}
		}
		secs := st.End().Sub(st.Start()).Seconds()
		p.emit(map[string]any{"type": "run", "seconds": secs, "ops": tot.Ops, "ops_per_sec": float64(tot.Ops) / max(secs, 1e-9),
			"errors": tot.Errors, "mismatches": tot.Mismatches,
			"p50_us": us(tot.P50), "p99_us": us(tot.P99), "p999_us": us(tot.P999), "max_us": us(tot.Max),
			"commands": byCmd, "error_samples": st.ErrorSamples(), "mismatch_samples": st.MismatchSamples()})
		return
	}
	fmt.Fprintf(p.w, "run: %v\n", st)
	fmt.Fprintf(p.w, "%-12s %9s %7s %7s %9s %9s %9s\n", "command", "ops", "errors", "mism", "p50(µs)", "p99(µs)", "p999(µs)")
	for _, n := range names {
		c := cmds[n]
		fmt.Fprintf(p.w, "%-12s %9d %7d %7d %9.0f %9.0f %9.0f\n", n, c.Ops, c.Errors, c.Mismatches, us(c.P50), us(c.P99), us(c.P999))
	}
	for _, e := range st.ErrorSamples() {
		fmt.Fprintf(p.w, "error: %s\n", e)
	}
	for _, e := range st.MismatchSamples() {
		fmt.Fprintf(p.w, "mismatch: %s\n", e)
	}
}

func (p *printer) verify(rep scaleload.Report) {
	if p.json {
		p.emit(struct {
			Type string `json:"type"`
			OK   bool   `json:"ok"`
			scaleload.Report
		}{"verify", rep.OK(), rep})
		return
	}
	fmt.Fprintln(p.w, rep)
}
