package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RandomConfig drives RunRandom.
type RandomConfig struct {
	Seed     uint64
	N        int      // commands to run
	Families []string // nil: all (see Families)
	// Window is how many commands before a divergence the report lists;
	// zero means 50.
	Window int
	// OutDir receives the full sequence on a divergence; "" means
	// os.TempDir() (t.TempDir would be deleted with the test).
	OutDir string
	// Replay, when set, runs the steps stored in this file (written by an
	// earlier failure) instead of generating them.
	Replay string
	// NoShrink skips the search for a short reproduction.
	NoShrink bool
	// Proto is the protocol the connections start with (2 or 3; zero
	// means 2). HELLO in the sequence may switch it anyway.
	Proto int
	// Skip, when set, drops generated commands the server under test
	// refuses by design (the proxy's HELLO inside MULTI); inMulti is the
	// connection's transaction state as the generator sees it. It must
	// not drop MULTI, EXEC, DISCARD or RESET, which move that state.
	Skip func(st Step, inMulti bool) bool
}

// Environment variables read by RandomConfigFromEnv.
const (
	EnvSeed     = "SHARDGATE_DIFF_SEED"
	EnvN        = "SHARDGATE_DIFF_N"
	EnvFamilies = "SHARDGATE_DIFF_FAMILIES"
	EnvReplay   = "SHARDGATE_DIFF_REPLAY"
)

// RandomConfigFromEnv returns def overridden by the SHARDGATE_DIFF_*
// variables. Without a seed from either, the seed comes from the clock.
func RandomConfigFromEnv(def RandomConfig) (RandomConfig, error) {
	cfg := def
	if v := os.Getenv(EnvSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", EnvSeed, err)
		}
		cfg.Seed = s
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	if v := os.Getenv(EnvN); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return cfg, fmt.Errorf("%s: bad count %q", EnvN, v)
		}
		cfg.N = n
	}
	if v := os.Getenv(EnvFamilies); v != "" {
		cfg.Families = strings.Split(v, ",")
	}
	if v := os.Getenv(EnvReplay); v != "" {
		cfg.Replay = v
	}
	return cfg, nil
}

// record is one executed step and its replies.
type record struct {
	Step
	a, b Value
}

// Divergence is the first command on which the two servers differed.
type Divergence struct {
	Index       int
	Step        Step
	Redis, Node Value
	NetErr      string // set when a connection failed instead
	// Short is a shorter sequence ending in the same command that still
	// diverges on fresh servers, or nil.
	Short  []Step
	Report string // everything above, readable, with the sequence file
}

// RunRandom runs cfg.N generated commands through p and stops at the first
// divergence, reporting the seed, the index, the commands before it, a
// file with the whole sequence and, unless disabled, a short reproduction
// found by replaying subsets on fresh servers.
func RunRandom(t *testing.T, p *Pair, cfg RandomConfig) {
	t.Helper()
	if d := RandomRun(t, p, cfg); d != nil {
		t.Error(d.Report)
	}
}

// RandomRun is RunRandom returning the divergence instead of failing.
func RandomRun(t *testing.T, p *Pair, cfg RandomConfig) *Divergence {
	t.Helper()
	if cfg.Window == 0 {
		cfg.Window = 50
	}
	next, err := stepSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("random differential run: seed %d, %d commands, RESP%d, families %s (reproduce with %s=%d)",
		cfg.Seed, cfg.N, max(cfg.Proto, 2), familyList(cfg.Families), EnvSeed, cfg.Seed)

	proto := max(cfg.Proto, 2)
	s := &session{conns: [2]*ConnPair{p.NewConnProto(t, proto), p.NewConnProto(t, proto)}}
	side, err := DialProto(p.Oracle.Addr, 2)
	if err != nil {
		t.Fatalf("difftest: connect to redis-server: %v", err)
	}
	defer side.Close()
	s.side = side
	var hist []record
	cov := coverage{}
	for i := 0; ; i++ {
		st, ok, err := next(i)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		a, b, err := s.run(st)
		cov.add(st.Args, a)
		hist = append(hist, record{Step: st, a: a, b: b})
		if len(hist) > cfg.Window {
			// Keep the replies of the window only; arguments stay for
			// the sequence file.
			old := &hist[len(hist)-cfg.Window-1]
			old.a, old.b = Value{}, Value{}
		}
		if err != nil {
			return divergence(t, p, cfg, hist, err.Error())
		}
		if !s.same(st, a, b) {
			return divergence(t, p, cfg, hist, "")
		}
	}
	t.Logf("random differential run: %d commands, no divergence; replies per command (ok/error): %s", len(hist), cov)
	return nil
}

// coverage counts, per command, redis's non-error and error replies, so a
// run shows whether it exercised the success paths and the error paths.
type coverage map[string]*[2]int

func (c coverage) add(args []string, redis Value) {
	name := strings.ToUpper(args[0])
	if len(args) > 1 && slices.Contains([]string{"CLIENT", "CONFIG", "COMMAND", "OBJECT", "MEMORY", "CLUSTER"}, name) {
		name += "|" + strings.ToUpper(args[1])
	}
	n := c[name]
	if n == nil {
		n = new([2]int)
		c[name] = n
	}
	if redis.Kind == Error {
		n[1]++
	} else {
		n[0]++
	}
}

func (c coverage) String() string {
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	slices.Sort(names)
	var sb strings.Builder
	for _, k := range names {
		fmt.Fprintf(&sb, " %s %d/%d", strconv.QuoteToASCII(k)[1:len(strconv.QuoteToASCII(k))-1], c[k][0], c[k][1])
	}
	return sb.String()
}

// stepSource returns the generator (or a replay file) as a function from
// index to step.
func stepSource(cfg RandomConfig) (func(int) (Step, bool, error), error) {
	if cfg.Replay != "" {
		steps, err := ReadSteps(cfg.Replay)
		if err != nil {
			return nil, err
		}
		return func(i int) (Step, bool, error) {
			if i >= len(steps) {
				return Step{}, false, nil
			}
			return steps[i], true, nil
		}, nil
	}
	g, err := NewGen(cfg.Seed, cfg.Families, time.Now())
	if err != nil {
		return nil, err
	}
	return func(i int) (Step, bool, error) {
		if i >= cfg.N {
			return Step{}, false, nil
		}
		for {
			st, err := g.Next()
			if err != nil || cfg.Skip == nil || !cfg.Skip(st, g.multi[st.Conn]) {
				return st, err == nil, err
			}
		}
	}, nil
}

func familyList(f []string) string {
	if len(f) == 0 {
		return "all"
	}
	return strings.Join(f, ",")
}

// session runs steps on two connection pairs and follows their MULTI
// state from redis's replies, so that EXEC's reply is compared element by
// element with the checks of the commands that were really queued.
type session struct {
	conns  [2]*ConnPair
	multi  [2]bool
	queued [2][]Step
	// side is a connection of its own to redis-server, for resetErrno
	// (nil: no reset).
	side *Conn
}

// resetErrno clears redis-server's errno before a command that may run
// SORT. Redis 7.0's SORT takes errno == ERANGE after strtod as a failed
// element without clearing errno first, so once any element overflowed,
// every later numeric SORT fails too until some call in the process sets
// errno again (a new connection's accept does): history the node does
// not copy. A failed INCRBYFLOAT clears it (string2ld sets errno to 0
// and strtold of "x" leaves it so) and changes no key; errno is the
// process's, so a side connection serves, outside any MULTI.
func (s *session) resetErrno(args []string) error {
	if s.side == nil {
		return nil
	}
	switch strings.ToUpper(args[0]) {
	case "SORT", "SORT_RO", "EXEC":
	default:
		return nil
	}
	v, err := s.side.Do([]byte("INCRBYFLOAT"), []byte("difftest:errno"), []byte("x"))
	if err != nil {
		return err
	}
	if v.Kind != Error {
		return fmt.Errorf("INCRBYFLOAT difftest:errno x: %v, want an error", v)
	}
	return nil
}

// maxScanCalls bounds a full SCAN iteration.
const maxScanCalls = 10000

// run executes st on both sides. err is a network or protocol failure.
func (s *session) run(st Step) (a, b Value, err error) {
	c := s.conns[st.Conn]
	if st.Check == CheckFullScan && !s.multi[st.Conn] {
		if a, err = fullScan(c.Redis, st.Args); err != nil {
			return a, b, fmt.Errorf("redis-server: %w", err)
		}
		if b, err = fullScan(c.Node, st.Args); err != nil {
			return a, b, fmt.Errorf("node: %w", err)
		}
		return a, b, nil
	}
	if err = s.resetErrno(st.Args); err != nil {
		return a, b, fmt.Errorf("redis-server: %w", err)
	}
	args := toBytes(st.Args)
	if a, err = c.Redis.Do(args...); err != nil {
		return a, b, fmt.Errorf("redis-server: %w", err)
	}
	if b, err = c.Node.Do(args...); err != nil {
		return a, b, fmt.Errorf("node: %w", err)
	}
	return a, b, nil
}

// same compares the replies to st and updates the MULTI bookkeeping.
func (s *session) same(st Step, a, b Value) bool {
	cmd := strings.ToUpper(st.Args[0])
	conn := st.Conn
	if !s.multi[conn] {
		if cmd == "MULTI" && a.Kind == SimpleString {
			s.multi[conn], s.queued[conn] = true, nil
		}
		return Same(st, a, b)
	}
	switch {
	case cmd == "EXEC":
		q := s.queued[conn]
		s.multi[conn], s.queued[conn] = false, nil
		if a.Kind != Array || b.Kind != Array || len(a.Elems) != len(q) || len(b.Elems) != len(q) {
			return Equal(a, b)
		}
		for i := range q {
			if !Same(q[i], a.Elems[i], b.Elems[i]) {
				return false
			}
		}
		return true
	case cmd == "DISCARD" || cmd == "RESET":
		s.multi[conn], s.queued[conn] = false, nil
	case a.Kind == SimpleString && string(a.Str) == "QUEUED":
		q := st
		if q.Check == CheckFullScan {
			q.Check = CheckScan
		}
		s.queued[conn] = append(s.queued[conn], q)
	}
	return Equal(a, b)
}

// fullScan iterates SCAN from args[1] until the cursor returns to 0 and
// returns the keys seen, sorted and without repeats, as an array. A reply
// that is not a SCAN page (an error) is returned as it is.
func fullScan(c *Conn, args []string) (Value, error) {
	b := toBytes(args)
	seen := map[string]bool{}
	for range maxScanCalls {
		v, err := c.Do(b...)
		if err != nil {
			return v, err
		}
		if !isScanPage(v) {
			return v, nil
		}
		for _, k := range v.Elems[1].Elems {
			seen[string(k.Str)] = true
		}
		if string(v.Elems[0].Str) == "0" {
			keys := make([]string, 0, len(seen))
			for k := range seen {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			out := Value{Kind: Array, Elems: make([]Value, len(keys))}
			for i, k := range keys {
				out.Elems[i] = BulkOf(k)
			}
			return out, nil
		}
		b[1] = v.Elems[0].Str
	}
	return Err(fmt.Sprintf("difftest: SCAN did not return to cursor 0 in %d calls", maxScanCalls)), nil
}

func isScanPage(v Value) bool {
	return v.Kind == Array && len(v.Elems) == 2 && v.Elems[0].Kind == Bulk && v.Elems[1].Kind == Array
}

// Same applies st's check to redis's reply a and the node's reply b.
func Same(st Step, a, b Value) bool {
	switch st.Check {
	case CheckUnordered:
		return Equal(Sorted(a), Sorted(b))
	case CheckApprox:
		if a.Kind == Integer && b.Kind == Integer && a.Int >= 0 && b.Int >= 0 {
			d := a.Int - b.Int
			return d <= st.Tolerance && -d <= st.Tolerance
		}
	case CheckShape:
		if a.Kind != Error && b.Kind != Error {
			return a.Kind == b.Kind
		}
	case CheckHello:
		return Equal(maskField(a, "id"), maskField(b, "id"))
	case CheckScan:
		if isScanPage(a) && isScanPage(b) {
			return scanKeysValid(a) && scanKeysValid(b)
		}
	case CheckMemory:
		if a.Kind != Error && b.Kind != Error {
			return (a.Kind == Integer || isNull(a)) && (b.Kind == Integer || isNull(b))
		}
	case CheckRandomKey:
		if a.Kind == Bulk && b.Kind == Bulk {
			return InKeySpace(string(b.Str))
		}
	case CheckStream:
		return sameStream(st, a, b)
	}
	return Equal(a, b)
}

func isNull(v Value) bool { return v.Kind == NullBulk || v.Kind == Null }

func scanKeysValid(v Value) bool {
	if _, err := strconv.ParseUint(string(v.Elems[0].Str), 10, 64); err != nil {
		return false
	}
	for _, k := range v.Elems[1].Elems {
		if k.Kind != Bulk || !InKeySpace(string(k.Str)) {
			return false
		}
	}
	return true
}

// maskField zeroes the value after the key name in a map or a flat
// key/value array (HELLO's reply in RESP3 and RESP2).
func maskField(v Value, name string) Value {
	if v.Kind != Map && v.Kind != Array {
		return v
	}
	e := slices.Clone(v.Elems)
	for i := 0; i+1 < len(e); i += 2 {
		if (e[i].Kind == Bulk || e[i].Kind == SimpleString) && string(e[i].Str) == name {
			e[i+1] = Int(0)
		}
	}
	v.Elems = e
	return v
}

// divergence describes the end of hist with everything needed to
// reproduce it.
func divergence(t *testing.T, p *Pair, cfg RandomConfig, hist []record, netErr string) *Divergence {
	t.Helper()
	last := hist[len(hist)-1]
	d := &Divergence{Index: len(hist) - 1, Step: last.Step, Redis: last.a, Node: last.b, NetErr: netErr}
	var sb strings.Builder
	fmt.Fprintf(&sb, "divergence at command #%d (seed %d, RESP%d at start, families %s)\n",
		len(hist)-1, cfg.Seed, max(cfg.Proto, 2), familyList(cfg.Families))
	fmt.Fprintf(&sb, "reproduce: %s=%d %s=%s go test ./node -run '^%s$'\n",
		EnvSeed, cfg.Seed, EnvFamilies, familyList(cfg.Families), t.Name())
	from := max(0, len(hist)-cfg.Window)
	fmt.Fprintf(&sb, "commands #%d..#%d (c<conn>: command -> redis reply):\n", from, len(hist)-1)
	for i := from; i < len(hist)-1; i++ {
		fmt.Fprintf(&sb, "  #%d c%d: %s -> %s\n", i, hist[i].Conn, FormatCommand(hist[i].Args), hist[i].a)
	}
	fmt.Fprintf(&sb, "  #%d c%d: %s\n", len(hist)-1, last.Conn, FormatCommand(last.Args))
	if netErr != "" {
		fmt.Fprintf(&sb, "    connection failed: %s\n", netErr)
	} else {
		fmt.Fprintf(&sb, "    redis: %s\n    node:  %s\n", last.a, last.b)
	}
	steps := make([]Step, len(hist))
	for i, r := range hist {
		steps[i] = r.Step
	}
	if path, err := writeSteps(cfg, t.Name(), steps); err != nil {
		fmt.Fprintf(&sb, "could not write the sequence: %v\n", err)
	} else {
		fmt.Fprintf(&sb, "full sequence: %s (replay with %s=%s)\n", path, EnvReplay, path)
	}
	if netErr == "" && !cfg.NoShrink {
		if short := shrink(t, p, max(cfg.Proto, 2), steps); short != nil {
			d.Short = short
			fmt.Fprintf(&sb, "shortest reproduction found (%d commands on fresh servers):\n", len(short))
			for _, st := range short {
				fmt.Fprintf(&sb, "  c%d: %s\n", st.Conn, FormatCommand(st.Args))
			}
		} else {
			sb.WriteString("no shorter reproduction found on fresh servers\n")
		}
	}
	d.Report = sb.String()
	return d
}

// Shrinking: replay subsets of the last commands on fresh servers and keep
// removing chunks as long as the final command still diverges first.

const (
	maxReplays      = 400
	maxReplayPrefix = 3000
)

func shrink(t *testing.T, p *Pair, proto int, steps []Step) []Step {
	t.Helper()
	reproduces := func(t *testing.T, p *Pair, steps []Step) bool { return reproduces(t, p, proto, steps) }
	var cur []Step
	for _, w := range []int{50, 500, maxReplayPrefix} {
		cand := steps[max(0, len(steps)-w):]
		if reproduces(t, p, cand) {
			cur = cand
			break
		}
		if w >= len(steps) {
			break
		}
	}
	if cur == nil {
		return nil
	}
	replays := 0
	for chunk := max(1, len(cur)/2); chunk >= 1 && replays < maxReplays; chunk /= 2 {
		for i := 0; i < len(cur)-1 && replays < maxReplays; {
			end := min(i+chunk, len(cur)-1)
			cand := slices.Concat(cur[:i], cur[end:])
			replays++
			if reproduces(t, p, cand) {
				cur = cand
			} else {
				i = end
			}
		}
		if chunk == 1 {
			break
		}
	}
	return cur
}

// reproduces replays steps with fresh connections on the flushed oracle and
// a new node and reports whether the first divergence is the last step.
func reproduces(t *testing.T, p *Pair, proto int, steps []Step) bool {
	t.Helper()
	if v, err := p.Redis.DoStrings("FLUSHALL"); err != nil || v.Kind != SimpleString {
		return false
	}
	addr, stop := p.target(t)
	defer stop()
	side, err := DialProto(p.Oracle.Addr, 2)
	if err != nil {
		return false
	}
	defer side.Close()
	s := &session{side: side}
	for i := range s.conns {
		rc, err := DialProto(p.Oracle.Addr, proto)
		if err != nil {
			return false
		}
		defer rc.Close()
		nc, err := DialProto(addr, proto)
		if err != nil {
			return false
		}
		defer nc.Close()
		s.conns[i] = &ConnPair{Redis: rc, Node: nc, Proto: proto}
	}
	for i, st := range steps {
		a, b, err := s.run(st)
		if err != nil {
			return false
		}
		if !s.same(st, a, b) {
			return i == len(steps)-1
		}
	}
	return false
}

// The sequence file has one step a line: conn, check, tolerance, then the
// arguments Go-quoted, e.g.  0 exact 0 "SET" "{a}1" "x".

var checkNames = []string{"exact", "unordered", "approx", "shape", "hello", "scan", "randomkey", "fullscan", "memory", "stream"}

func writeSteps(cfg RandomConfig, testName string, steps []Step) (string, error) {
	dir := cfg.OutDir
	if dir == "" {
		dir = os.TempDir()
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, testName)
	path := filepath.Join(dir, fmt.Sprintf("shardgate-diff-%s-seed%d.txt", name, cfg.Seed))
	var sb strings.Builder
	fmt.Fprintf(&sb, "# shardgate random differential sequence: seed %d, families %s, %d commands\n",
		cfg.Seed, familyList(cfg.Families), len(steps))
	for _, st := range steps {
		fmt.Fprintf(&sb, "%d %s %d", st.Conn, checkNames[st.Check], st.Tolerance)
		for _, a := range st.Args {
			sb.WriteByte(' ')
			sb.WriteString(strconv.Quote(a))
		}
		sb.WriteByte('\n')
	}
	return path, os.WriteFile(path, []byte(sb.String()), 0o644)
}

// ReadSteps parses a sequence file written on a divergence.
func ReadSteps(path string) ([]Step, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var steps []Step
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		st, err := parseStep(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		steps = append(steps, st)
	}
	return steps, sc.Err()
}

func parseStep(line string) (Step, error) {
	var st Step
	var check string
	var rest string
	if _, err := fmt.Sscanf(line, "%d %s %d", &st.Conn, &check, &st.Tolerance); err != nil {
		return st, err
	}
	if st.Conn < 0 || st.Conn > 1 {
		return st, fmt.Errorf("bad connection %d", st.Conn)
	}
	i := slices.Index(checkNames, check)
	if i < 0 {
		return st, fmt.Errorf("unknown check %q", check)
	}
	st.Check = Check(i)
	fields := strings.SplitN(line, " ", 4)
	if len(fields) < 4 {
		return st, errors.New("no arguments")
	}
	rest = fields[3]
	for rest != "" {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return st, err
		}
		a, _ := strconv.Unquote(q)
		st.Args = append(st.Args, a)
		rest = strings.TrimPrefix(rest[len(q):], " ")
	}
	if len(st.Args) == 0 {
		return st, errors.New("no arguments")
	}
	return st, nil
}
