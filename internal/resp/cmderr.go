package resp

import (
	"bytes"
	"strings"
)

// UnknownCommand is Redis's error for a command name it does not know:
// "ERR unknown command 'x', with args beginning with: 'a' 'b' ".
func UnknownCommand(args [][]byte) string {
	return "ERR unknown command '" + string(CString(args[0], 128)) + "', with args beginning with: " + argsPreview(args[1:])
}

// UnknownSubcommand is Redis's error for an unknown subcommand of a
// container command: "ERR unknown subcommand 'x'. Try CLIENT HELP.".
func UnknownSubcommand(args [][]byte) string {
	return "ERR unknown subcommand '" + string(CString(args[1], 128)) + "'. Try " +
		strings.ToUpper(string(CString(args[0], len(args[0])))) + " HELP."
}

// argsPreview renders the "with args beginning with:" part of Redis's
// unknown-command error: each argument quoted and followed by a space,
// while the text is shorter than 128 bytes.
func argsPreview(args [][]byte) string {
	var b strings.Builder
	for _, a := range args {
		if b.Len() >= 128 {
			break
		}
		room := 128 - b.Len()
		b.WriteByte('\'')
		b.Write(CString(a, room))
		b.WriteString("' ")
	}
	return b.String()
}

// CString cuts b the way Redis's "%.Ns" formatting of an argument does: at
// the first NUL byte (Redis formats arguments as C strings) and at max
// bytes.
func CString(b []byte, max int) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > max {
		b = b[:max]
	}
	return b
}
