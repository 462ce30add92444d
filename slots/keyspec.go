package slots

// BeginKind says how a key spec finds where its keys begin.
type BeginKind uint8

// Begin-search kinds of Redis 7 key specs.
const (
	BeginUnknown BeginKind = iota
	// BeginIndex: the keys begin at a fixed argument index.
	BeginIndex
	// BeginKeyword: the keys begin after a keyword, searched from
	// StartFrom (a negative StartFrom searches backwards from the end).
	BeginKeyword
)

// FindKind says how a key spec finds its keys once it knows where they begin.
type FindKind uint8

// Find-keys kinds of Redis 7 key specs.
const (
	FindUnknown FindKind = iota
	// FindRange: keys from the begin index to LastKey (relative to the
	// begin index when >= 0, to the end of the arguments when < 0), every
	// KeyStep arguments; Limit > 0 with LastKey -1 takes 1/Limit of the
	// remaining arguments.
	FindRange
	// FindKeyNum: the argument at begin+KeyNumIdx counts the keys, which
	// start at begin+FirstKey, every KeyStep arguments.
	FindKeyNum
)

// KeySpec is one Redis 7 key specification: where a group of a command's
// keys is, and how the command uses them.
type KeySpec struct {
	Notes string
	Flags KeySpecFlag

	Begin     BeginKind
	Index     int    // BeginIndex
	Keyword   string // BeginKeyword, upper case as Redis prints it
	StartFrom int    // BeginKeyword

	Find      FindKind
	LastKey   int // FindRange
	KeyStep   int // FindRange and FindKeyNum
	Limit     int // FindRange
	KeyNumIdx int // FindKeyNum
	FirstKey  int // FindKeyNum
}
