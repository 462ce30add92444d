// Command shardgate runs one shardgate role: a node (shardgate node), the
// proxy (shardgate proxy), or an embedded local cluster of both for a
// quick start (shardgate up).
package main

import (
	"context"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/conncmd"
)

const usage = `shardgate runs Redis workloads across many machines.

Usage:
  shardgate <command> [flags]

Commands:
  up      run a local cluster (nodes and a proxy) in one process
  node    serve one Redis-compatible node (owns hash slots)
  proxy   serve one Redis endpoint in front of many nodes
  cluster show a gossip cluster (cluster status), move slots (cluster rebalance, cluster drain)
  version print the version, the Go release that built it and the Redis release it follows

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
	case "node", "proxy", "up":
		// As redis-server: a server started from a terminal outlives the
		// terminal's hangup (an ssh session closing) instead of dying
		// without a word.
		signal.Ignore(syscall.SIGHUP)
	}
	switch args[0] {
	case "node":
		return runNode(ctx, args[1:], stdout, stderr)
	case "proxy":
		return runProxy(ctx, args[1:], stdout, stderr)
	case "up":
		return runUp(ctx, args[1:], stdout, stderr)
	case "cluster":
		return runCluster(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		if len(args) > 1 {
			if args[1] == "-h" || args[1] == "--help" || args[1] == "-help" {
				fmt.Fprint(stdout, "Usage: shardgate version\n\nPrint the version, the Go release that built it and the Redis release whose\nreplies it follows.\n")
				return 0
			}
			fmt.Fprintf(stderr, "shardgate version: takes no arguments, got %q\n", args[1])
			return 2
		}
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "-h", "--help", "help":
		if args[0] == "help" && len(args) == 2 {
			// "shardgate help node" is "shardgate node --help".
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
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
		return nil, fmt.Errorf("bad --log-level %q (want debug, info, warn or error)", l.level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		o.ReplaceAttr = readableJSON
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("bad --log-format %q (want text or json)", l.format)
}

// readableJSON writes durations ("5s") and named values (a member's role
// "node") as the text log shows them, where the JSON handler would write
// nanoseconds and the underlying number.
func readableJSON(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindDuration:
		a.Value = slog.StringValue(v.Duration().String())
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error, json.Marshaler, encoding.TextMarshaler:
		case fmt.Stringer:
			a.Value = slog.StringValue(x.String())
		}
	}
	return a
}

// versionLine is what 'shardgate version' prints: the module version (a
// tagged release, or "devel") with the commit it was built from, the Go
// release, and the Redis release whose behaviour shardgate reproduces.
func versionLine() string {
	return fmt.Sprintf("shardgate %s, %s, redis_version %s", buildVersion(), runtime.Version(), conncmd.RedisVersion)
}

// logStart logs which build starts in which role, first: what a log
// collected from many machines needs to tell their versions apart.
func logStart(log *slog.Logger, role string) {
	log.Info("shardgate starting", "role", role, "version", buildVersion(), "go", runtime.Version(),
		"redis_version", conncmd.RedisVersion, "pid", os.Getpid())
}

// buildVersion is the module version (a tagged release, or "devel") with
// the commit it was built from.
func buildVersion() string {
	version, commit, dirty := "devel", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit != "" {
		version += " (" + commit
		if dirty {
			version += ", modified"
		}
		version += ")"
	}
	return version
}

// printDefaults is flag.PrintDefaults with each flag spelled "--name", as
// the README and the usage lines write them (the flag package takes one
// dash or two alike).
func printDefaults(fs *flag.FlagSet) {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	for line := range strings.SplitAfterSeq(b.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			line = "  --" + line[len("  -"):]
		}
		io.WriteString(out, line)
	}
}

// flagError reports a flag the flag package refused in one line, with the
// flag spelled "--name" as the usage and the README spell it, and points
// at --help rather than printing the whole usage under it.
func flagError(fs *flag.FlagSet, err error, stderr io.Writer) {
	msg := err.Error()
	for _, prefix := range []string{"flag -", "defined: -", "argument: -"} {
		msg = strings.Replace(msg, prefix, prefix+"-", 1)
	}
	// A number's or a duration's error says only "parse error": say what
	// it takes.
	if _, name, ok := strings.Cut(msg, " for flag --"); ok {
		name, _, _ = strings.Cut(name, ":")
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case time.Duration:
					msg += " (want a duration such as 500ms, 5s or 1m)"
				case int, int64, uint, uint64:
					msg += " (want a whole number)"
				}
			}
		}
	}
	fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for its flags.\n", fs.Name(), msg, fs.Name())
}
