package slots

// Doc is what COMMAND DOCS prints for a command, in Redis's field order.
type Doc struct {
	Summary    string
	Since      string
	Group      string
	Complexity string
	// Flags are the doc flags ("deprecated", "syscmd").
	Flags           []string
	DeprecatedSince string
	ReplacedBy      string
	// History is (version, change) pairs, oldest first.
	History [][2]string
	Args    []Arg
}

// Arg documents one argument of a command. Empty strings and a negative
// KeySpecIndex mean the field is absent from COMMAND DOCS.
type Arg struct {
	Name         string
	Type         string
	DisplayText  string
	KeySpecIndex int
	Token        string
	Summary      string
	Since        string
	// DeprecatedSince is printed after Flags, as Redis does.
	DeprecatedSince string
	// Flags are "optional", "multiple" and "multiple_token".
	Flags []string
	Value string
	Args  []Arg
}
