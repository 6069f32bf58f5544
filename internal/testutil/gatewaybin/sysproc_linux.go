package gatewaybin

import "syscall"

// sysProcAttr makes the kernel kill a test's gateway when the test binary dies, so an aborted
// run leaves no process behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
