package slots

// keyProcedure returns the key-finding procedure of commands whose key
// specs cannot always locate their keys: Redis gives those commands a
// getkeys procedure, used when the specs are incomplete or do not fit the
// arguments. Commands with key-count specs get a procedure that reads the
// count leniently (C atoi), as Redis's procedures do.
func keyProcedure(c *Command) func(args [][]byte, dst []int) []int {
	switch c.FullName {
	case "sort":
		return sortKeys
	case "sort_ro":
		return firstArgKey
	case "migrate":
		return migrateKeys
	case "georadius", "georadiusbymember":
		return georadiusKeys
	case "xread", "xreadgroup":
		return xreadKeys
	}
	for _, ks := range c.KeySpecs {
		if ks.Find == FindKeyNum {
			return lenientKeyNum(c.KeySpecs)
		}
	}
	return nil
}

// lenientKeyNum is the procedure of commands with a key count (EVAL,
// ZUNIONSTORE, LMPOP, ...): the counted keys first, then the others (the
// destination of ZUNIONSTORE), with the count read as C atoi reads it.
func lenientKeyNum(specs []KeySpec) func(args [][]byte, dst []int) []int {
	ordered := make([]KeySpec, 0, len(specs))
	for _, ks := range specs {
		if ks.Find == FindKeyNum {
			ordered = append(ordered, ks)
		}
	}
	for _, ks := range specs {
		if ks.Find != FindKeyNum {
			ordered = append(ordered, ks)
		}
	}
	return func(args [][]byte, dst []int) []int {
		out, ok := specKeys(ordered, args, dst, parseKeyCountLoose)
		if !ok {
			return dst
		}
		return out
	}
}

// xreadKeys: XREAD and XREADGROUP [BLOCK ms] [COUNT n] [GROUP g c]
// [NOACK] STREAMS key... id..., read as Redis's xreadGetKeys: options up
// to STREAMS (compared as C strings), and no keys at all when an option
// is unknown or the streams are not followed by as many ids, so that a
// malformed read gets its syntax error rather than CROSSSLOT.
func xreadKeys(args [][]byte, dst []int) []int {
	streams := -1
	for i := 1; i < len(args); i++ {
		switch a := cString(args[i]); {
		case equalFoldUpper("BLOCK", a), equalFoldUpper("COUNT", a):
			i++
		case equalFoldUpper("GROUP", a):
			i += 2
		case equalFoldUpper("NOACK", a):
		case equalFoldUpper("STREAMS", a):
			streams = i
		default:
			return dst
		}
		if streams >= 0 {
			break
		}
	}
	n := len(args) - streams - 1
	if streams < 0 || n == 0 || n%2 != 0 {
		return dst
	}
	for i := streams + 1; i <= streams+n/2; i++ {
		dst = append(dst, i)
	}
	return dst
}

// CString is b as C code sees it: up to its first NUL. Redis compares
// keyword arguments with strcasecmp and formats them with %s, so both
// stop there.
func CString(b []byte) []byte { return cString(b) }

func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// firstArgKey: the key is argument 1.
func firstArgKey(args [][]byte, dst []int) []int {
	if len(args) > 1 {
		dst = append(dst, 1)
	}
	return dst
}

// sortKeys: SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
// [ASC|DESC] [ALPHA] [STORE destination]. The sorted key, plus the last
// STORE destination; BY and GET patterns name keys only through the data,
// so they are not reported (as in Redis).
func sortKeys(args [][]byte, dst []int) []int {
	if len(args) < 2 {
		return dst
	}
	dst = append(dst, 1)
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case equalFoldUpper("LIMIT", args[i]):
			i += 2
		case equalFoldUpper("GET", args[i]), equalFoldUpper("BY", args[i]):
			i++
		case equalFoldUpper("STORE", args[i]) && i+1 < len(args):
			// The destination is not skipped: in "STORE STORE x" Redis's
			// sortGetKeys takes the second STORE as an option too, and the
			// last one wins.
			store = i + 1
		}
	}
	if store > 0 {
		dst = append(dst, store)
	}
	return dst
}

// migrateKeys: MIGRATE host port key|"" db timeout [COPY] [REPLACE]
// [AUTH pw | AUTH2 user pw] [KEYS key ...]. The key argument, or with an
// empty key argument the keys after KEYS.
func migrateKeys(args [][]byte, dst []int) []int {
	if len(args) < 6 {
		return dst
	}
	for i := 6; i < len(args); i++ {
		switch {
		case equalFoldUpper("AUTH", args[i]):
			i++
		case equalFoldUpper("AUTH2", args[i]):
			i += 2
		case equalFoldUpper("KEYS", args[i]):
			if len(args[3]) != 0 {
				return dst // a key and KEYS together: a syntax error
			}
			for k := i + 1; k < len(args); k++ {
				dst = append(dst, k)
			}
			return dst
		}
	}
	return append(dst, 3)
}

// georadiusKeys: the source key, plus the destination of the last STORE
// or STOREDIST option.
func georadiusKeys(args [][]byte, dst []int) []int {
	if len(args) < 2 {
		return dst
	}
	dst = append(dst, 1)
	store := 0
	// Options are looked for from index 5 on, as Redis's
	// georadiusGetKeys does for both GEORADIUS and GEORADIUSBYMEMBER.
	for i := 5; i+1 < len(args); i++ {
		if equalFoldUpper("STORE", args[i]) || equalFoldUpper("STOREDIST", args[i]) {
			store = i + 1
			i++
		}
	}
	if store > 0 {
		dst = append(dst, store)
	}
	return dst
}
