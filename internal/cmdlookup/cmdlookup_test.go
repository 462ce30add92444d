package cmdlookup

import (
	"testing"
	"time"
)

func TestResolve(t *testing.T) {
	cases := []struct {
		args    []string
		name    string // FullName, "" for nil
		errText string
	}{
		{[]string{"GET", "k"}, "get", ""},
		{[]string{"get"}, "get", "ERR wrong number of arguments for 'get' command"},
		{[]string{"nosuch", "a"}, "", "ERR unknown command 'nosuch', with args beginning with: 'a' "},
		{[]string{"CLIENT", "bogus"}, "client", "ERR unknown subcommand 'bogus'. Try CLIENT HELP."},
		{[]string{"client", "setname"}, "client|setname", "ERR wrong number of arguments for 'client|setname' command"},
		{[]string{"CLIENT"}, "client", "ERR wrong number of arguments for 'client' command"},
		{[]string{"DEBUG", "x"}, "debug", "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."},
	}
	for _, c := range cases {
		args := make([][]byte, len(c.args))
		for i, a := range c.args {
			args[i] = []byte(a)
		}
		cmd, msg := Resolve(args)
		name := ""
		if cmd != nil {
			name = cmd.FullName
		}
		if name != c.name || msg != c.errText {
			t.Errorf("Resolve(%q) = %q, %q; want %q, %q", c.args, name, msg, c.name, c.errText)
		}
	}
}

// TestIsHTTPRequest: the names Redis takes for an HTTP request, compared
// as strcasecmp does (up to a NUL byte).
func TestIsHTTPRequest(t *testing.T) {
	for name, want := range map[string]bool{
		"POST": true, "post": true, "Host:": true, "HOST:": true, "POST\x00": true, "host:\x00x": true,
		"GET": false, "POSTX": false, "host": false, "\x00POST": false, "": false, "pos": false,
	} {
		if got := IsHTTPRequest([]byte(name)); got != want {
			t.Errorf("IsHTTPRequest(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestHTTPWarningsOncePerMinute: the first warning is logged, the next
// ones within a minute are not, and one a minute later is.
func TestHTTPWarningsOncePerMinute(t *testing.T) {
	var w HTTPWarnings
	t0 := time.Unix(1000, 0)
	for i, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {time.Second, false}, {59 * time.Second, false}, {61 * time.Second, true}, {62 * time.Second, false}} {
		if got := w.Due(t0.Add(c.at)); got != c.want {
			t.Errorf("call %d at +%v: Due %v, want %v", i, c.at, got, c.want)
		}
	}
}
