package slots

//go:generate go run ../tools/gencommands -list commands.txt -o table_gen.go -unserved-o unserved_gen.go

// Command describes one command or subcommand.
type Command struct {
	// Name is the lower-case name ("get"; "setname" for CLIENT SETNAME).
	Name string
	// FullName is Name for commands and "parent|sub" for subcommands, as
	// Redis prints it in arity errors.
	FullName string
	// ID indexes handler tables; unique over commands and subcommands.
	ID int
	// Arity counts the command name: N means exactly N arguments, -N at
	// least N.
	Arity int
	Flags Flag
	// FirstKey, LastKey and Step are the legacy key range (LastKey -1 is
	// the last argument, -2 the one before, ...). FirstKey 0 means no keys.
	FirstKey, LastKey, Step int
	// ACL is the set of ACL categories COMMAND INFO lists.
	ACL ACLCategory
	// Tips are the command tips ("nondeterministic_output", ...).
	Tips []string
	// KeySpecs locate the keys (Redis 7 key specs); KeyIndexes uses them.
	KeySpecs []KeySpec
	// Doc is the COMMAND DOCS information.
	Doc *Doc
	// Keys finds the keys of commands whose key specs cannot (incomplete
	// specs, like Redis's getkeys procedures for SORT and MIGRATE). It is
	// set from specialKeys when the table is loaded; nil means the key
	// specs are authoritative.
	Keys func(args [][]byte, dst []int) []int
	// Subcommands of a container command (CLIENT, CONFIG, ...).
	Subcommands []*Command
	Parent      *Command

	specsFirst bool // KeyIndexes tries the key specs before Keys
	hasKeys    bool // some spec or procedure can find keys
	// firstOnly: the key is argument 1 and nothing else is (GET, SET,
	// INCR, PFCOUNT ...), whatever the other arguments; KeyIndexes then
	// skips the spec walk, which was a fifth of a node's routing time.
	firstOnly bool
}

// Has reports whether c has flag f.
func (c *Command) Has(f Flag) bool { return c.Flags&f != 0 }

// CheckArity reports whether n arguments (name included) fit c.
func (c *Command) CheckArity(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity
}

// Lookup finds a command by name, ignoring case, without allocating.
//
// It runs for every command a node or the proxy serves, so it compares
// the name against the few commands of the same length and first letter
// instead of lower-casing it and hashing it into a map (about a third of
// the time: 2-3% of a node's CPU went to the map lookup under PFCOUNT -P 16).
func Lookup(name []byte) *Command {
	if len(name) == 0 || len(name) > maxNameLen {
		return nil
	}
	first := name[0] | 0x20 // ASCII lower case for letters
	if first < 'a' || first > 'z' {
		return nil
	}
	for _, c := range byLenFirst[len(name)][first-'a'] {
		if equalFold(c.Name, name) {
			return c
		}
	}
	return nil
}

// MayBlock reports whether the command named may block its client (BLPOP,
// BLMOVE, XREADGROUP ... BLOCK and the like: the "blocking" flag; and
// WAIT, which Redis does not flag but which waits for replicas), ignoring
// case. Servers ask it of every command, so only names that start as the
// blocking ones do (BL, BR, XR) are looked up: BITFIELD, BITCOUNT and the
// other everyday commands are not.
func MayBlock(name []byte) bool {
	if len(name) < 2 {
		return false
	}
	switch a, b := name[0]|0x20, name[1]|0x20; {
	case a == 'b' && (b == 'l' || b == 'r'), a == 'x' && b == 'r':
	case a == 'w' && b == 'a':
		return equalFold("wait", name)
	default:
		return false
	}
	c := Lookup(name)
	return c != nil && c.Has(FlagBlocking)
}

// LookupSub finds a subcommand of parent by name, ignoring case.
func LookupSub(parent *Command, name []byte) *Command {
	for _, s := range parent.Subcommands {
		if equalFold(s.Name, name) {
			return s
		}
	}
	return nil
}

// EqualFold reports whether b equals the lower-case name lower, ignoring
// ASCII case, without allocating.
func EqualFold(lower string, b []byte) bool { return equalFold(lower, b) }

func equalFold(lower string, b []byte) bool {
	if len(lower) != len(b) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// All returns every top-level command, in table order.
func All() []*Command { return table }

// NumIDs is one more than the largest Command.ID.
func NumIDs() int { return numIDs }

const maxNameLen = 32

// byLenFirst indexes the top-level commands by name length and first
// letter for Lookup; filled once at init, read-only after.
var (
	byLenFirst [maxNameLen + 1][26][]*Command
	numIDs     int
)

func init() {
	for _, c := range table {
		numIDs = prepare(c, nil, numIDs)
		if n := len(c.Name); n == 0 || n > maxNameLen || c.Name[0] < 'a' || c.Name[0] > 'z' {
			panic("slots: command name outside Lookup's index: " + c.Name)
		}
		byLenFirst[len(c.Name)][c.Name[0]-'a'] = append(byLenFirst[len(c.Name)][c.Name[0]-'a'], c)
	}
	prepareUnserved()
}

// isFirstOnly reports whether ks finds exactly argument 1 in any command
// of two or more arguments.
func isFirstOnly(ks *KeySpec) bool {
	return ks.Flags&(KeyNotKey|KeyIncomplete) == 0 && ks.Begin == BeginIndex && ks.Index == 1 &&
		ks.Find == FindRange && ks.LastKey == 0
}

// prepare fills the derived fields of c and its subcommands (names, IDs,
// key procedures, key-finding mode) and returns the next free ID.
func prepare(c, parent *Command, id int) int {
	c.Parent = parent
	c.FullName = c.Name
	if parent != nil {
		c.FullName = parent.Name + "|" + c.Name
	}
	c.ID = id
	id++
	c.Keys = keyProcedure(c)
	var realSpec, varFlags bool
	for _, ks := range c.KeySpecs {
		realSpec = realSpec || ks.Flags&KeyNotKey == 0
		varFlags = varFlags || ks.Flags&KeyVariableFlags != 0
	}
	// Redis prefers key specs unless their flags vary with the arguments
	// and the command has its own procedure; the positions are the same
	// either way for every such command, so specs win when present.
	c.specsFirst = realSpec && !(varFlags && c.Keys != nil)
	c.hasKeys = realSpec || c.Keys != nil
	c.firstOnly = c.Keys == nil && len(c.KeySpecs) == 1 && isFirstOnly(&c.KeySpecs[0]) && (c.Arity >= 2 || c.Arity <= -2)
	for _, s := range c.Subcommands {
		id = prepare(s, c, id)
	}
	return id
}
