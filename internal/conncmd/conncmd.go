// Package conncmd answers the connection commands that a node and the
// proxy answer alike, each about its own client connection: PING, ECHO,
// HELLO, AUTH, SELECT and TIME, with Redis 7.0.15's replies and errors.
// The callers have checked arity and NOAUTH already.
package conncmd

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shardgate/shardgate/internal/redisinfo"
	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// RedisVersion is the Redis release whose behaviour shardgate reproduces
// (HELLO, INFO).
const RedisVersion = "7.0.15"

// Conn is the connection state the commands read and change.
type Conn interface {
	ID() int64
	Authed() bool
	SetAuthed(bool)
	SetName([]byte)
	// SetProto switches the reply protocol; the writer given to Hello
	// must follow it.
	SetProto(int)
}

// CheckPassword reports whether user/pass authenticate against
// requirePass. The only user is "default"; without requirepass it has no
// password, so any password is accepted for it (Redis's nopass).
func CheckPassword(requirePass string, user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	return requirePass == "" || string(pass) == requirePass
}

// Ping answers PING [message].
func Ping(w *resp.Writer, args [][]byte) {
	switch {
	case len(args) > 2:
		w.Error(fmt.Sprintf(resp.ErrWrongArgs, "ping"))
	case len(args) == 2:
		w.Bulk(args[1])
	default:
		w.Simple("PONG")
	}
}

// Hello answers HELLO [protover [AUTH user pass] [SETNAME name]] as Redis
// 7.0 does: after the version check, each option takes effect as it is
// parsed, so "AUTH ... FOO" authenticates and "SETNAME n FOO" renames
// before the syntax error, and a name set by an unauthenticated client
// stays even though HELLO then answers NOAUTH.
func Hello(w *resp.Writer, c Conn, args [][]byte, requirePass string) {
	ver := int64(0)
	if len(args) >= 2 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			w.Error(resp.ErrHelloProtoVersion)
			return
		}
		if v < 2 || v > 3 {
			w.Error(resp.ErrNoProto)
			return
		}
		ver = v
	}
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := args[j]; {
		case slots.EqualFold("auth", slots.CString(opt)) && more >= 2:
			if !CheckPassword(requirePass, args[j+1], args[j+2]) {
				w.Error(resp.ErrWrongPass)
				return
			}
			c.SetAuthed(true)
			j += 2
		case slots.EqualFold("setname", slots.CString(opt)) && more >= 1:
			if !redisinfo.ValidName(args[j+1]) {
				w.Error(resp.ErrClientName)
				return
			}
			c.SetName(args[j+1])
			j++
		default:
			w.Error(fmt.Sprintf(resp.ErrHelloOption, slots.CString(opt)))
			return
		}
	}
	if !c.Authed() {
		w.Error(resp.ErrHelloNoAuth)
		return
	}
	if ver != 0 {
		c.SetProto(int(ver))
	}
	w.Map(7)
	w.BulkString("server")
	w.BulkString("redis")
	w.BulkString("version")
	w.BulkString(RedisVersion)
	w.BulkString("proto")
	w.Int(int64(w.Proto))
	w.BulkString("id")
	w.Int(c.ID())
	w.BulkString("mode")
	w.BulkString("cluster")
	w.BulkString("role")
	w.BulkString("master")
	w.BulkString("modules")
	w.Array(0)
}

// Auth answers AUTH [user] pass. A failed AUTH leaves an already
// authenticated connection authenticated, as in Redis 7.
func Auth(w *resp.Writer, c Conn, args [][]byte, requirePass string) {
	if len(args) > 3 {
		w.Error(resp.ErrSyntax)
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 2 {
		if requirePass == "" {
			w.Error(resp.ErrAuthNoPassword)
			return
		}
	} else {
		user, pass = args[1], args[2]
	}
	if !CheckPassword(requirePass, user, pass) {
		w.Error(resp.ErrWrongPass)
		return
	}
	c.SetAuthed(true)
	w.OK()
}

// Select answers SELECT index: a cluster node has only database 0.
func Select(w *resp.Writer, args [][]byte) {
	id, ok := resp.ParseInt(args[1])
	if !ok {
		w.Error(resp.ErrNotInteger)
		return
	}
	if id < math.MinInt32 || id > math.MaxInt32 {
		w.Error(fmt.Sprintf(resp.ErrIntRange, math.MinInt32, math.MaxInt32))
		return
	}
	if id != 0 {
		w.Error(resp.ErrSelectCluster)
		return
	}
	w.OK()
}

// Time answers TIME with now.
func Time(w *resp.Writer, now time.Time) {
	var tmp [24]byte
	w.Array(2)
	w.Bulk(strconv.AppendInt(tmp[:0], now.Unix(), 10))
	w.Bulk(strconv.AppendInt(tmp[:0], int64(now.Nanosecond()/1000), 10))
}
