package aof

import (
	"fmt"
	"strings"
)

// Policy is --appendfsync: when a record counts as durable.
type Policy int

const (
	// Always: durable once written and fsynced (group commit).
	Always Policy = iota
	// EverySec: durable once written; fsynced in the background at most
	// once a second, so a power loss costs about a second.
	EverySec
	// No: durable once written; the OS decides when to flush.
	No
)

// ParsePolicy parses an --appendfsync value ("always", "everysec", "no",
// any case).
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(s) {
	case "always":
		return Always, nil
	case "everysec":
		return EverySec, nil
	case "no":
		return No, nil
	}
	return 0, fmt.Errorf("aof: invalid appendfsync policy %q (want always, everysec or no)", s)
}

// String returns the policy's --appendfsync spelling.
func (p Policy) String() string {
	switch p {
	case Always:
		return "always"
	case EverySec:
		return "everysec"
	case No:
		return "no"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}
