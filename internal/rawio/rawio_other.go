//go:build !linux

package rawio

const supported = false

// setup has nothing to do: Wrap returns the connection unwrapped.
func (c *Conn) setup() {}
