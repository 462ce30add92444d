package slots

// KeyRef is a key argument as COMMAND GETKEYSANDFLAGS reports it: its
// index in the arguments and the key spec flags that go with it.
type KeyRef struct {
	Index int
	Flags KeySpecFlag
}

// KeyRefs finds the same keys as KeyIndexes, each with its flags, the way
// Redis 7.0's getKeysFromCommandWithSpecs does:
//   - SET and BITFIELD, whose key specs say the flags vary with the
//     arguments, use their own procedures (setGetKeys, bitfieldGetKeys);
//   - other commands take the flags of the key spec that located the key;
//   - when the specs cannot be applied, the keys found by the command's
//     procedure carry no flags: Redis's key-count procedures set none.
//
// It allocates; it serves COMMAND GETKEYSANDFLAGS, not routing.
func (c *Command) KeyRefs(args [][]byte) []KeyRef {
	switch c.FullName {
	case "set":
		return []KeyRef{{Index: 1, Flags: setKeyFlags(args)}}
	case "bitfield":
		return []KeyRef{{Index: 1, Flags: bitfieldKeyFlags(args)}}
	case "sort", "sort_ro", "migrate":
		// Their getkeys procedures flag the keys they find as Redis's
		// sortGetKeys and migrateGetKeys do: the sorted key read, a
		// STORE destination overwritten, MIGRATE's keys moved away.
		// MIGRATE's keys are those COMMAND GETKEYS finds (its specs
		// first: a trailing KEYS with no key after it leaves the key at
		// 3), with the flags migrateGetKeys gives; SORT's are its
		// procedure's.
		keys := c.Keys
		if c.FullName == "migrate" {
			keys = c.KeyIndexes
		}
		var refs []KeyRef
		for n, i := range keys(args, nil) {
			f := KeyRO | KeyAccess
			switch {
			case c.FullName == "migrate":
				f = KeyRW | KeyAccess | KeyDelete
			case n > 0:
				f = KeyOW | KeyUpdate
			}
			refs = append(refs, KeyRef{Index: i, Flags: f})
		}
		return refs
	}
	if c.specsFirst {
		if refs, ok := specKeyRefs(c.KeySpecs, args); ok {
			return refs
		}
	}
	if c.Keys == nil {
		return nil
	}
	var refs []KeyRef
	for _, i := range c.Keys(args, nil) {
		refs = append(refs, KeyRef{Index: i})
	}
	return refs
}

// specKeyRefs applies the specs one by one, so that each key keeps the
// flags of its spec; like specKeys it fails as a whole when any spec
// cannot be applied.
func specKeyRefs(specs []KeySpec, args [][]byte) ([]KeyRef, bool) {
	var refs []KeyRef
	for i := range specs {
		idx, ok := specKeys(specs[i:i+1], args, nil, parseKeyCountStrict)
		if !ok {
			return nil, false
		}
		for _, k := range idx {
			refs = append(refs, KeyRef{Index: k, Flags: specs[i].Flags})
		}
	}
	return refs, true
}

// setKeyFlags: SET with a GET option reads the old value (RW access
// update); without, it only overwrites (OW update). Redis compares each
// argument from the third on, as a C string, with "get".
func setKeyFlags(args [][]byte) KeySpecFlag {
	for _, a := range args[min(3, len(args)):] {
		if equalFoldUpper("GET", cString(a)) {
			return KeyRW | KeyAccess | KeyUpdate
		}
	}
	return KeyOW | KeyUpdate
}

// bitfieldKeyFlags: BITFIELD is read-only (RO access) when it holds only
// complete GET and OVERFLOW operations; a SET or INCRBY, or anything it
// cannot read, makes it RW access update.
func bitfieldKeyFlags(args [][]byte) KeySpecFlag {
	const write = KeyRW | KeyAccess | KeyUpdate
	for i := 2; i < len(args); i++ {
		rest := len(args) - i - 1
		op := cString(args[i])
		switch {
		case equalFoldUpper("GET", op) && rest >= 2:
			i += 2
		case (equalFoldUpper("SET", op) || equalFoldUpper("INCRBY", op)) && rest >= 3:
			return write
		case equalFoldUpper("OVERFLOW", op) && rest >= 1:
			i++
		default:
			return write
		}
	}
	return KeyRO | KeyAccess
}
