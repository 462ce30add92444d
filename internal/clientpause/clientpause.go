// Package clientpause is CLIENT PAUSE and CLIENT UNPAUSE for one server:
// while a pause holds, the server's clients wait before running the
// commands it holds (every command, or only those that may write), as
// Redis 7.0 postpones them, and go on when it ends or is lifted.
//
// Redis checks the pause after all its refusals (arity, auth, cluster
// redirections, OOM) and before queueing a command in MULTI, so a write
// sent inside a transaction during a WRITE pause waits too, and so does
// an EXEC whose transaction holds one. Under ALL every command waits,
// CLIENT UNPAUSE included: only the timeout ends such a pause.
package clientpause

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/internal/resp"
	"github.com/shardgate/shardgate/slots"
)

// Mode is what a pause holds, ordered from least to most restrictive.
type Mode int32

const (
	None  Mode = iota // no pause
	Write             // commands that may write (Redis's write and may-replicate flags)
	All               // every command
)

// Pause is a server's pause state; the zero value is no pause.
type Pause struct {
	mode atomic.Int32 // the Mode set; with None, MayHold is one atomic load

	mu    sync.Mutex
	endMs int64         // unix milliseconds
	ended chan struct{} // closed when the pause set ends or is lifted
}

// Set pauses until endMs (unix milliseconds) in mode m, merged with a
// pause still running at nowMs as Redis merges them: the more restrictive
// mode and the later end win.
func (p *Pause) Set(endMs int64, m Mode, nowMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endMs <= nowMs {
		p.liftLocked() // run out: Redis has unpaused it by now
	}
	if Mode(p.mode.Load()) == None {
		p.endMs = endMs
		p.ended = make(chan struct{})
	} else {
		p.endMs = max(p.endMs, endMs)
	}
	if m > Mode(p.mode.Load()) {
		p.mode.Store(int32(m))
	}
}

// Lift ends the pause (CLIENT UNPAUSE) and lets the waiting clients go.
func (p *Pause) Lift() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.liftLocked()
}

func (p *Pause) liftLocked() {
	if Mode(p.mode.Load()) == None {
		return
	}
	p.mode.Store(int32(None))
	close(p.ended)
	p.ended = nil
}

// Paused reports whether a pause (of either mode) holds at nowMs. Redis
// neither expires nor evicts keys then, so that the dataset stays as the
// pause found it.
func (p *Pause) Paused(nowMs int64) bool {
	if Mode(p.mode.Load()) == None {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return Mode(p.mode.Load()) != None && p.endMs > nowMs
}

// Left is the time the pause has left at nowMs, in milliseconds; 0 when
// none holds.
func (p *Pause) Left(nowMs int64) int64 {
	if Mode(p.mode.Load()) == None {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if Mode(p.mode.Load()) == None || p.endMs <= nowMs {
		return 0
	}
	return p.endMs - nowMs
}

// MayHold reports, with one atomic load, whether a command that may
// write (mayWrite) or not could be held: false means it runs at once.
func (p *Pause) MayHold(mayWrite bool) bool {
	switch Mode(p.mode.Load()) {
	case All:
		return true
	case Write:
		return mayWrite
	}
	return false
}

// peerCheckEvery is how often Wait asks whether a held client has gone.
const peerCheckEvery = 100 * time.Millisecond

// Wait waits while the pause holds a command that may write (mayWrite) or
// not; nowMs reads the clock in unix milliseconds. It returns false if
// killed (the client's) or closing (the server's) closes first, or if
// gone (nil: never asked) reports the client gone, checked every
// peerCheckEvery and when the pause ends: Redis frees a postponed client
// that closes its connection, and its command never runs.
func (p *Pause) Wait(mayWrite bool, nowMs func() int64, killed, closing <-chan struct{}, gone func() bool) bool {
	for p.MayHold(mayWrite) {
		p.mu.Lock()
		if !p.MayHold(mayWrite) {
			p.mu.Unlock()
			break
		}
		now := nowMs()
		if p.endMs <= now { // compared, not subtracted: an end may have wrapped
			p.liftLocked() // its time is up: Redis unpauses in its next cron
			p.mu.Unlock()
			break
		}
		left := time.Duration(p.endMs-now) * time.Millisecond
		ended := p.ended
		p.mu.Unlock()
		if gone != nil {
			left = min(left, peerCheckEvery)
		}
		t := time.NewTimer(left)
		select {
		case <-ended:
		case <-t.C:
		case <-killed:
			t.Stop()
			return false
		case <-closing:
			t.Stop()
			return false
		}
		t.Stop()
		if gone != nil && gone() {
			return false
		}
	}
	return gone == nil || !gone()
}

// MayWrite reports whether cmd is held by a WRITE pause: Redis's write or
// may-replicate flag.
func MayWrite(cmd *slots.Command) bool {
	return cmd.Has(slots.FlagWrite) || cmd.Has(slots.FlagMayReplicate)
}

// HeldByWrite reports whether a WRITE pause holds cmd sent by a client
// whose open transaction, if any, queued a command that may write
// (txMayWrite): cmd may write itself, or it is that transaction's EXEC.
func HeldByWrite(cmd *slots.Command, txMayWrite bool) bool {
	return MayWrite(cmd) || txMayWrite && cmd.FullName == "exec"
}

// ParsePause reads CLIENT PAUSE timeout [WRITE|ALL] (args from CLIENT) as
// Redis 7.0's clientCommand does: the argument count, then the mode, then
// the timeout in milliseconds (an integer, not negative), added to nowMs
// as Redis adds it, without an overflow check (a timeout that wraps ends
// in the past: no pause). It returns the error text to reply, or "".
func ParsePause(args [][]byte, nowMs int64) (endMs int64, m Mode, msg string) {
	if len(args) != 3 && len(args) != 4 {
		return 0, None, fmt.Sprintf(resp.ErrSubcommandSyntax, string(resp.CString(args[1], 128)), "CLIENT")
	}
	m = All
	if len(args) == 4 {
		switch mode := string(resp.CString(args[3], len(args[3]))); {
		case equalFold(mode, "write"):
			m = Write
		case equalFold(mode, "all"):
		default:
			return 0, None, resp.ErrPauseMode
		}
	}
	ms, ok := resp.ParseInt(args[2])
	if !ok {
		return 0, None, resp.ErrTimeoutNotInt
	}
	if ms < 0 {
		return 0, None, resp.ErrTimeoutNegative
	}
	if ms > 0 {
		ms += nowMs // wraps like Redis's long long for huge timeouts
	}
	return ms, m, ""
}

// equalFold compares ASCII case-insensitively, as strcasecmp does.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
