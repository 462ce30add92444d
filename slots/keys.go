package slots

// KeyIndexes appends to dst the indexes in args (args[0] is the command
// name) of the arguments that are keys, the way Redis 7.0 finds them for
// COMMAND GETKEYS and cluster routing: from the key specs when they are
// reliable, else from the command's own key procedure (Keys). Invalid
// arguments (a key count that is not a number, too few arguments) give no
// keys. It allocates only if dst is too small.
func (c *Command) KeyIndexes(args [][]byte, dst []int) []int {
	if c.firstOnly && len(args) >= 2 {
		return append(dst, 1)
	}
	if c.specsFirst {
		if out, ok := specKeys(c.KeySpecs, args, dst, parseKeyCountStrict); ok {
			return out
		}
	}
	if c.Keys != nil {
		return c.Keys(args, dst)
	}
	return dst
}

// RouteKeyIndexes appends the indexes of the keys a cluster node routes
// by: Redis's getKeysFromCommand, which getNodeByQuery uses, prefers the
// command's own key procedure to its key specs. The two agree on every
// well-formed command; on a malformed one (an XREAD with an unknown
// option) the procedure may find no keys, so the command runs and gives
// its syntax error where the specs would have given CROSSSLOT. Where the
// specs find nothing in a command that has a legacy key range (PFMERGE
// with only its destination: the sources' range starts past the last
// argument), the keys are that range's, which is what getKeysFromCommand
// reads.
func (c *Command) RouteKeyIndexes(args [][]byte, dst []int) []int {
	if c.Keys != nil {
		return c.Keys(args, dst)
	}
	start := len(dst)
	dst = c.KeyIndexes(args, dst)
	if len(dst) > start || c.FirstKey <= 0 {
		return dst
	}
	last := c.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := c.FirstKey; i <= last && i < len(args); i += max(c.Step, 1) {
		dst = append(dst, i)
	}
	return dst
}

// HasKeys reports whether the command can have key arguments at all.
func (c *Command) HasKeys() bool { return c.hasKeys }

// specKeys applies key specs to args, appending the key indexes to dst. It
// returns ok false, and dst as given, when a spec cannot be applied (an
// unknown spec, arguments that do not fit, an incomplete spec): the caller
// then falls back to the command's key procedure, as Redis does.
func specKeys(specs []KeySpec, args [][]byte, dst []int, keyCount func([]byte) (int, bool)) ([]int, bool) {
	argc := len(args)
	start := len(dst)
	for i := range specs {
		ks := &specs[i]
		if ks.Flags&KeyNotKey != 0 {
			continue
		}
		first := 0
		switch ks.Begin {
		case BeginIndex:
			first = ks.Index
		case BeginKeyword:
			first = findKeyword(args, ks.Keyword, ks.StartFrom)
			if first == 0 {
				continue // keyword absent: this spec has no keys
			}
		default:
			return dst[:start], false
		}
		var last, step int
		switch ks.Find {
		case FindRange:
			step = ks.KeyStep
			switch {
			case ks.LastKey >= 0:
				last = first + ks.LastKey
			case ks.Limit == 0:
				last = argc + ks.LastKey
			default:
				// Limit splits the rest: 1/Limit of it are keys (XREAD's
				// STREAMS k1 k2 id1 id2).
				last = first + (argc-first)/ks.Limit + ks.LastKey
			}
		case FindKeyNum:
			step = ks.KeyStep
			if ks.KeyNumIdx >= argc-first {
				return dst[:start], false
			}
			n, ok := keyCount(args[first+ks.KeyNumIdx])
			if !ok {
				return dst[:start], false
			}
			first += ks.FirstKey
			last = first + n - 1
		default:
			return dst[:start], false
		}
		if first >= argc || last >= argc || last < first {
			return dst[:start], false
		}
		if step <= 0 {
			step = 1
		}
		for k := first; k <= last; k += step {
			dst = append(dst, k)
		}
		if ks.Flags&KeyIncomplete != 0 {
			return dst[:start], false
		}
	}
	return dst, true
}

// findKeyword returns the index after the first argument equal (ignoring
// case) to kw, or 0 when absent. The search runs forward from startFrom,
// or backwards from len(args)+startFrom when startFrom is negative; like
// Redis it never looks at the last argument going forward nor at argument
// 1 going backwards.
func findKeyword(args [][]byte, kw string, startFrom int) int {
	argc := len(args)
	if startFrom > 0 {
		for i := startFrom; i < argc-1; i++ {
			if equalFoldUpper(kw, args[i]) {
				return i + 1
			}
		}
		return 0
	}
	for i := argc + startFrom; i > 1; i-- {
		if i < argc && equalFoldUpper(kw, args[i]) {
			return i + 1
		}
	}
	return 0
}

// equalFoldUpper compares an upper-case ASCII keyword with b, ignoring
// case, reading b as Redis's strcasecmp does: up to its first NUL, so
// "STORE\x00x" is STORE (and SORT stores into the key after it).
func equalFoldUpper(upper string, b []byte) bool {
	b = cString(b)
	if len(upper) != len(b) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// parseKeyCountStrict parses a key count the way key specs do: a canonical
// decimal integer (no sign, spaces or leading zeros), not negative.
func parseKeyCountStrict(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 10 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// parseKeyCountLoose parses a key count the way Redis's key procedures do
// (C atoi: leading spaces, an optional sign, then digits up to the first
// non-digit). Counts below 1 are rejected: the procedures find no keys
// then.
func parseKeyCountLoose(b []byte) (int, bool) {
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	n := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if n > 1<<31 {
			return 0, false // far more keys than any request can hold
		}
		n = n*10 + int(b[i]-'0')
	}
	if neg || n < 1 {
		return 0, false
	}
	return n, true
}
