package difftest

import "syscall"

// sysProcAttr makes the kernel kill redis-server when the thread that
// started it (kept alive for the child's whole life) goes away, so a test
// binary that dies without cleanup leaks no server.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// processAlive reports whether pid names a live process.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}
