// Command shardgate runs one shardgate role: a node (shardgate node), the
// proxy (shardgate proxy), or an embedded local cluster of both for a
// quick start (shardgate up).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/shardgate/shardgate/node"
)

const usage = `shardgate runs Redis workloads across many machines.

Usage:
  shardgate <command> [flags]

Commands:
  up      run a local cluster (nodes and a proxy) in one process
  node    serve one Redis-compatible node (owns hash slots)
  proxy   serve one Redis endpoint in front of many nodes
  cluster show a gossip cluster's members, slot table and problems (cluster status)

Run 'shardgate <command> --help' for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "node":
		return runNode(ctx, args[1:], stdout, stderr)
	case "proxy":
		return runProxy(ctx, args[1:], stdout, stderr)
	case "up":
		return runUp(ctx, args[1:], stdout, stderr)
	case "cluster":
		return runCluster(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "shardgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// logFlags are the logging flags every role shares.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("bad --log-level %q", l.level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("bad --log-format %q", l.format)
}

func runNode(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardgate node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := node.DefaultOptions()
	opts := d
	var lf logFlags
	fs.StringVar(&opts.Addr, "addr", d.Addr, "RESP listen address (host:port)")
	fs.StringVar(&opts.RequirePass, "requirepass", "", "password clients must AUTH with (empty: no password)")
	fs.IntVar(&opts.MaxClients, "maxclients", d.MaxClients, "maximum concurrent client connections")
	fs.Var((*byteSize)(&opts.QueryBufferLimit), "client-query-buffer-limit", "close a client whose unparsed requests exceed this many bytes, e.g. while it is blocked (units: kb, mb, gb)")
	fs.DurationVar(&opts.ActiveExpiryInterval, "active-expiry-interval", d.ActiveExpiryInterval, "how often expired keys are swept in the background")
	procs := fs.Int("procs", 0, "OS threads running Go code at once (GOMAXPROCS); 0 keeps Go's default of one per core. Use 1 where a load generator shares a small machine, as Redis runs commands on one thread")
	lf.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: shardgate node [flags]\n\nServe one Redis 7.0-compatible node.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if rc := parseFlags(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	switch {
	case *procs < 0:
		fmt.Fprintf(stderr, "shardgate node: --procs must be 0 (one per core) or positive, got %d\n", *procs)
		return 2
	case opts.MaxClients <= 0:
		fmt.Fprintf(stderr, "shardgate node: --maxclients must be a positive number, got %d\n", opts.MaxClients)
		return 2
	case opts.QueryBufferLimit < 1<<20:
		fmt.Fprintf(stderr, "shardgate node: --client-query-buffer-limit must be at least 1mb, got %d\n", opts.QueryBufferLimit)
		return 2
	case opts.ActiveExpiryInterval <= 0:
		fmt.Fprintf(stderr, "shardgate node: --active-expiry-interval must be a positive duration, got %s\n", opts.ActiveExpiryInterval)
		return 2
	}
	log, err := lf.logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "shardgate node: %v\n", err)
		return 2
	}
	opts.Logger = log
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	srv, err := node.New(opts)
	if err != nil {
		log.Error("bad options", "err", err)
		return 2
	}
	if err := srv.ListenAndServe(ctx); err != nil {
		log.Error("node stopped", "err", err)
		return 1
	}
	log.Info("node shut down")
	return 0
}
