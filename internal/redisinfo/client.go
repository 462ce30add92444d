// Package redisinfo holds the introspection formats the node and the proxy
// share, as Redis 7.0.15 has them: the CLIENT LIST line, the argument
// parsing and matching of CLIENT LIST and CLIENT KILL filters, CLIENT
// HELP's text, client-name validation, and the sampling behind INFO's
// instantaneous_* fields. Everything here is pure (no sockets, no clocks
// read) except ConnFD; the servers supply their clients' state.
package redisinfo

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// ValidName reports whether b may be a client name: Redis allows only
// printable ASCII without spaces.
func ValidName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// ClientType is Redis's client class for CLIENT LIST/KILL TYPE.
type ClientType int

// The client classes, as Redis's getClientTypeByName knows them. AnyType
// is a filter that matches every class.
const (
	AnyType ClientType = iota - 1
	Normal
	Replica
	PubSub
	Master
)

// ParseType reads a TYPE argument as Redis's getClientTypeByName.
func ParseType(b []byte) (ClientType, bool) {
	switch {
	case slots.EqualFold("normal", slots.CString(b)):
		return Normal, true
	case slots.EqualFold("slave", slots.CString(b)), slots.EqualFold("replica", slots.CString(b)):
		return Replica, true
	case slots.EqualFold("pubsub", slots.CString(b)):
		return PubSub, true
	case slots.EqualFold("master", slots.CString(b)):
		return Master, true
	}
	return 0, false
}

// ListFilter is what CLIENT LIST asks for: every client, the clients of
// one type, or the clients with the given ids (in that order).
type ListFilter struct {
	Type ClientType // AnyType unless TYPE was given
	IDs  []int64    // non-nil for CLIENT LIST ID ...
}

// ParseList parses CLIENT LIST's arguments (args[0] is CLIENT); errMsg is
// the error reply when they are wrong.
func ParseList(args [][]byte) (f ListFilter, errMsg string) {
	f.Type = AnyType
	switch {
	case len(args) == 2:
	case len(args) == 4 && slots.EqualFold("type", slots.CString(args[2])):
		t, ok := ParseType(args[3])
		if !ok {
			return f, fmt.Sprintf(resp.ErrUnknownClientType, slots.CString(args[3]))
		}
		f.Type = t
	case len(args) > 3 && slots.EqualFold("id", slots.CString(args[2])):
		f.IDs = make([]int64, 0, len(args)-3)
		for _, a := range args[3:] {
			id, ok := resp.ParseInt(a)
			if !ok {
				return f, resp.ErrInvalidClientID
			}
			f.IDs = append(f.IDs, id)
		}
	default:
		return f, resp.ErrSyntax
	}
	return f, ""
}

// KillFilter is a parsed CLIENT KILL: the old form (one address, reply OK
// or "No such client") or the filter form (reply the number killed).
// Unset fields match everything.
type KillFilter struct {
	OldForm     bool
	Addr, LAddr []byte
	ID          int64
	Type        ClientType
	SkipMe      bool
}

// ParseKill parses CLIENT KILL's arguments (args[0] is CLIENT) as Redis
// 7.0's clientKillCommand; errMsg is the error reply when they are wrong.
// USER accepts only "default", the one user there is.
func ParseKill(args [][]byte) (f KillFilter, errMsg string) {
	f.Type, f.SkipMe = AnyType, true
	if len(args) == 3 {
		f.OldForm, f.Addr, f.SkipMe = true, slots.CString(args[2]), false // strcmp, as Redis
		return f, ""
	}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return f, resp.ErrSyntax
		}
		opt, val := args[i], args[i+1]
		switch {
		case slots.EqualFold("id", slots.CString(opt)):
			v, ok := resp.ParseInt(val)
			if !ok || v < 1 {
				return f, resp.ErrClientIDRange
			}
			f.ID = v
		case slots.EqualFold("type", slots.CString(opt)):
			t, ok := ParseType(val)
			if !ok {
				return f, fmt.Sprintf(resp.ErrUnknownClientType, slots.CString(val))
			}
			f.Type = t
		case slots.EqualFold("addr", slots.CString(opt)):
			f.Addr = slots.CString(val)
		case slots.EqualFold("laddr", slots.CString(opt)):
			f.LAddr = slots.CString(val)
		case slots.EqualFold("user", slots.CString(opt)):
			if string(val) != "default" {
				return f, fmt.Sprintf(resp.ErrNoSuchUser, slots.CString(val))
			}
		case slots.EqualFold("skipme", slots.CString(opt)):
			switch {
			case slots.EqualFold("yes", slots.CString(val)):
				f.SkipMe = true
			case slots.EqualFold("no", slots.CString(val)):
				f.SkipMe = false
			default:
				return f, resp.ErrSyntax
			}
		default:
			return f, resp.ErrSyntax
		}
	}
	return f, ""
}

// Match reports whether a client is to be killed; self says it is the
// client running CLIENT KILL.
func (f *KillFilter) Match(id int64, raddr, laddr string, t ClientType, self bool) bool {
	switch {
	case f.Addr != nil && raddr != string(f.Addr),
		f.LAddr != nil && laddr != string(f.LAddr),
		f.Type != AnyType && t != f.Type,
		f.ID != 0 && id != f.ID,
		self && f.SkipMe:
		return false
	}
	return true
}

// KillReply writes CLIENT KILL's reply for n clients killed.
func (f *KillFilter) KillReply(w *resp.Writer, n int) {
	switch {
	case !f.OldForm:
		w.Int(int64(n))
	case n == 0:
		w.Error(resp.ErrNoSuchClient)
	default:
		w.OK()
	}
}

// Line is one client's CLIENT LIST entry. Fields that measure Redis's own
// buffers (qbuf, argv-mem, omem ...) are printed as 0; every client is of
// user default, db 0, with no subscriptions.
type Line struct {
	ID          int64
	Addr, LAddr string
	FD          int
	Name        string
	Age, Idle   int64 // seconds
	Flags       string
	Multi       int // queued commands; -1 outside MULTI
	Cmd         string
	Resp        int
}

// Flags builds the flags field from the states a client can be in, in
// Redis's order; "N" when none applies.
func Flags(monitor, multi, blocked, dirty, closing, readonly, noEvict bool) string {
	var b []byte
	if monitor {
		b = append(b, 'O')
	}
	if multi {
		b = append(b, 'x')
	}
	if blocked {
		b = append(b, 'b')
	}
	if dirty {
		b = append(b, 'd')
	}
	if closing {
		b = append(b, 'c')
	}
	if readonly {
		b = append(b, 'r')
	}
	if noEvict {
		b = append(b, 'e')
	}
	if len(b) == 0 {
		return "N"
	}
	return string(b)
}

// AppendLine appends l in Redis's field order, without the newline.
func AppendLine(b []byte, l *Line) []byte {
	b = append(b, "id="...)
	b = strconv.AppendInt(b, l.ID, 10)
	b = append(b, " addr="...)
	b = append(b, l.Addr...)
	b = append(b, " laddr="...)
	b = append(b, l.LAddr...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(l.FD), 10)
	b = append(b, " name="...)
	b = append(b, l.Name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, max(0, l.Age), 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, max(0, l.Idle), 10)
	b = append(b, " flags="...)
	b = append(b, l.Flags...)
	b = append(b, " db=0 sub=0 psub=0 ssub=0 multi="...)
	b = strconv.AppendInt(b, int64(l.Multi), 10)
	b = append(b, " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd="...)
	cmd := l.Cmd
	if cmd == "" {
		cmd = "NULL"
	}
	b = append(b, cmd...)
	b = append(b, " user=default redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(l.Resp), 10)
	return b
}

// ParseNoEvict reads CLIENT NO-EVICT's argument.
func ParseNoEvict(b []byte) (on, ok bool) {
	switch {
	case slots.EqualFold("on", slots.CString(b)):
		return true, true
	case slots.EqualFold("off", slots.CString(b)):
		return false, true
	}
	return false, false
}

// ConnFD returns the socket's descriptor, or -1 if it has none.
func ConnFD(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return -1
	}
	return fd
}

// ClientHelp is CLIENT HELP's reply, line by line.
var ClientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CACHING (YES|NO)",
	"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
	"GETREDIR",
	"    Return the client ID we are redirecting to when tracking is enabled.",
	"GETNAME",
	"    Return the name of the current connection.",
	"ID",
	"    Return the ID of the current connection.",
	"INFO",
	"    Return information about the current client connection.",
	"KILL <ip:port>",
	"    Kill connection made from <ip:port>.",
	"KILL <option> <value> [<option> <value> [...]]",
	"    Kill connections. Options are:",
	"    * ADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made from the specified address",
	"    * LADDR (<ip:port>|<unixsocket>:0)",
	"      Kill connections made to specified local address",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Kill connections by type.",
	"    * USER <username>",
	"      Kill connections authenticated by <username>.",
	"    * SKIPME (YES|NO)",
	"      Skip killing current connection (default: yes).",
	"LIST [options ...]",
	"    Return information about client connections. Options:",
	"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
	"      Return clients of specified type.",
	"UNPAUSE",
	"    Stop the current client pause, resuming traffic.",
	"PAUSE <timeout> [WRITE|ALL]",
	"    Suspend all, or just write, clients for <timeout> milliseconds.",
	"REPLY (ON|OFF|SKIP)",
	"    Control the replies sent to the current connection.",
	"SETNAME <name>",
	"    Assign the name <name> to the current connection.",
	"UNBLOCK <clientid> [TIMEOUT|ERROR]",
	"    Unblock the specified blocked client.",
	"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
	"         [OPTIN] [OPTOUT] [NOLOOP]",
	"    Control server assisted client side caching.",
	"TRACKINGINFO",
	"    Report tracking status for the current connection.",
	"NO-EVICT (ON|OFF)",
	"    Protect current client connection from eviction.",
	"HELP",
	"    Prints this help.",
}

// WriteHelp writes a HELP reply: one simple string per line.
func WriteHelp(w *resp.Writer, lines []string) {
	w.Array(len(lines))
	for _, l := range lines {
		w.Simple(l)
	}
}

// NewLine starts a client's line with what every server knows alike: its
// id and addresses, its age and idle time at now (lastAt in unix
// nanoseconds), its last command, and no transaction (Multi -1).
func NewLine(now time.Time, id int64, raddr, laddr string, fd int, created time.Time, lastAt int64, last *slots.Command) Line {
	l := Line{ID: id, Addr: raddr, LAddr: laddr, FD: fd, Multi: -1}
	// Redis subtracts whole Unix seconds (server.unixtime - ctime): a
	// connection made at 9.9 s is 1 s old at 10.1 s.
	l.Age = now.Unix() - created.Unix()
	l.Idle = now.Unix() - lastAt/1e9
	if last != nil {
		l.Cmd = last.FullName
	}
	return l
}

// List renders CLIENT LIST's text for filter f: the clients of all (live,
// in id order) of f's type, or those byID finds for f's ids, each as line
// appends it, one per line.
func List[C any](f ListFilter, all func() []C, byID func(int64) (C, bool), typ func(C) ClientType, line func([]byte, C) []byte) string {
	var b []byte
	add := func(cl C) {
		b = line(b, cl)
		b = append(b, '\n')
	}
	if f.IDs != nil {
		for _, id := range f.IDs {
			if cl, ok := byID(id); ok {
				add(cl)
			}
		}
		return string(b)
	}
	for _, cl := range all() {
		if f.Type == AnyType || typ(cl) == f.Type {
			add(cl)
		}
	}
	return string(b)
}

// Kill runs filter f over clients for the caller self: it counts the
// matches, has kill close every match but self, and says whether self
// matched (to be closed after its reply). attrs reads a client's id,
// addresses and type.
func Kill[C comparable](f *KillFilter, clients []C, self C, attrs func(C) (id int64, raddr, laddr string, t ClientType), kill func(C)) (n int, killSelf bool) {
	for _, cl := range clients {
		id, raddr, laddr, t := attrs(cl)
		if !f.Match(id, raddr, laddr, t, cl == self) {
			continue
		}
		n++
		if cl == self {
			killSelf = true
		} else {
			kill(cl)
		}
	}
	return n, killSelf
}
