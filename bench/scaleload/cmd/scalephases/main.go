// Command scalephases runs the scaleload load generator in named phases
// and prints each phase's throughput and latency as a markdown table. A
// script that changes the cluster (bench/scaleout.sh) drives it: each
// line read on standard input is the name of a phase that starts when
// the line arrives; the end of input ends the load. The load before the
// first line is the phase named by -first.
//
// It writes the dataset (scaleload.Populate), prints "scalephases: load
// running" on standard error once the load runs (write no line before
// that: it would be read late), and after the end of input verifies every
// key (scaleload.Verify). Standard output gets the table and the
// verification's one-line verdict; standard error the progress, the
// whole run's figures and the first errors.
//
// Exit status: 0 when verification passed and the clients saw no error;
// 1 when verification failed; 2 for bad flags or a failed populate; 3
// when the clients saw errors (issue 8 wants none during a scale-out).
//
// Usage:
//
//	scalephases -addr 127.0.0.1:7379 -rate 4000 < marks
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
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
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// phase is a named stretch of the run, from its mark to the next one.
type phase struct {
	name string
	from time.Time
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scalephases", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg scaleload.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:7379", "the endpoint (shardgate proxy) host:port")
	fs.IntVar(&cfg.Keys, "keys", scaleload.DefaultKeys, "keys to write")
	fs.IntVar(&cfg.Workers, "workers", scaleload.DefaultWorkers, "concurrent clients")
	fs.Int64Var(&cfg.Seed, "seed", 1, "random seed (dataset and operations)")
	fs.StringVar(&cfg.Prefix, "prefix", scaleload.DefaultPrefix, "hash tag prefix; the dataset under it is rewritten")
	fs.Float64Var(&cfg.Rate, "rate", 4000, "operations per second over all workers (0: unlimited)")
	fs.DurationVar(&cfg.Timeout, "timeout", scaleload.DefaultTimeout, "per-command timeout")
	fs.DurationVar(&cfg.Settle, "settle", 2*time.Second, "wait before re-reading a group after an ambiguous write")
	fs.DurationVar(&cfg.Window, "window", 100*time.Millisecond, "stats window: the precision of the phases' bounds")
	first := fs.String("first", "start", "name of the phase before the first line of input")
	if err := fs.Parse(args); err != nil {
		return exitSetup
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "scalephases: unexpected arguments %q\n", fs.Args())
		return exitSetup
	}

	started := time.Now()
	m, err := scaleload.Populate(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "scalephases: populate: %v\n", err)
		return exitSetup
	}
	fmt.Fprintf(stderr, "scalephases: populated %d keys (%d groups) in %v\n", m.Keys(), m.Groups(), time.Since(started).Round(time.Millisecond))

	runCtx, endRun := context.WithCancel(ctx)
	defer endRun()
	type result struct {
		st  *scaleload.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := scaleload.Run(runCtx, cfg, m)
		done <- result{st, err}
	}()
	fmt.Fprintln(stderr, "scalephases: load running")
	phases := []phase{{name: *first, from: time.Now()}}
	marks := make(chan phase)
	go func() {
		defer close(marks)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if name := strings.TrimSpace(sc.Text()); name != "" {
				marks <- phase{name: name, from: time.Now()}
			}
		}
	}()
	// Marks are taken until the end of input, or until a signal ends
	// the load (the reader goroutine is then left blocked: main exits).
reading:
	for {
		select {
		case p, ok := <-marks:
			if !ok {
				break reading
			}
			phases = append(phases, p)
			fmt.Fprintf(stderr, "scalephases: phase %q\n", p.name)
		case <-ctx.Done():
			break reading
		}
	}
	endRun()
	res := <-done
	if res.err != nil {
		fmt.Fprintf(stderr, "scalephases: run: %v\n", res.err)
		return exitSetup
	}
	st := res.st
	phases[0].from = st.Start() // so the first stats window counts
	printPhases(stdout, st, phases)
	fmt.Fprintf(stderr, "scalephases: run: %v\n", st)
	for _, e := range st.ErrorSamples() {
		fmt.Fprintf(stderr, "scalephases: error: %s\n", e)
	}
	for _, e := range st.MismatchSamples() {
		fmt.Fprintf(stderr, "scalephases: mismatch: %s\n", e)
	}

	// A second signal ends the verification.
	verifyCtx, stopVerify := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopVerify()
	rep, err := scaleload.Verify(verifyCtx, cfg, m)
	fmt.Fprintf(stdout, "\n%v\n", rep)
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "scalephases: verify: %v\n", err)
		return exitSetup
	case err != nil || !rep.OK():
		return exitVerify
	case st.Total().Errors > 0:
		return exitClientError
	}
	return exitOK
}

// printPhases writes the phases' figures as a markdown table.
func printPhases(w io.Writer, st *scaleload.Stats, phases []phase) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }
	fmt.Fprintln(w, "| phase | seconds | ops/s | p50 (ms) | p99 (ms) | max (ms) | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for i, p := range phases {
		to := st.End()
		if i+1 < len(phases) {
			to = phases[i+1].from
		}
		x := st.Between(p.from, to)
		if x.Ops == 0 {
			continue // a mark right after the start, or right before the end
		}
		fmt.Fprintf(w, "| %s | %.1f | %.0f | %s | %s | %s | %d |\n",
			p.name, to.Sub(p.from).Seconds(), x.Throughput, ms(x.P50), ms(x.P99), ms(x.Max), x.Errors)
	}
	tot := st.Total()
	secs := st.End().Sub(st.Start()).Seconds()
	fmt.Fprintf(w, "| whole run | %.1f | %.0f | %s | %s | %s | %d |\n",
		secs, float64(tot.Ops)/max(secs, 1e-9), ms(tot.P50), ms(tot.P99), ms(tot.Max), tot.Errors)
}
